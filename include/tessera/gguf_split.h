// Split GGUF models, as the ecosystem publishes large ones: NAME-00001-of-0000N.gguf, ...,
// NAME-0000N-of-0000N.gguf. Every part is a complete GGUF file holding some of the
// tensors, in the original order, and the keys split.no (u16, 0-based part index),
// split.count (u16, N) and split.tensors.count (i32, tensors in all parts). The first part
// also holds all of the model's metadata; the others hold only the three split keys.
//
// Loading: gguf::File::open_model (gguf.h). Writing: split_gguf / merge_gguf below, the
// files the reference engine's gguf-split tool writes and reads (same keys, naming,
// tensor order, 32-byte padding of each tensor).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/gguf.h"
#include "tessera/status.h"

namespace tessera::gguf {

inline constexpr std::string_view kSplitNoKey = "split.no";
inline constexpr std::string_view kSplitCountKey = "split.count";
inline constexpr std::string_view kSplitTensorsKey = "split.tensors.count";

/// True for the three keys above: they describe how a model is stored, not the model.
bool is_split_key(std::string_view key);

/// The path of part `index` (0-based) of `count`: PREFIX-%05d-of-%05d.gguf (index + 1).
std::string split_part_path(std::string_view prefix, int index, int count);
/// The prefix of `path` when it is the name of part `index` of `count`, else nullopt.
std::optional<std::string> split_prefix(std::string_view path, int index, int count);

/// How split_gguf cuts a file. Parts are filled tensor after tensor, in file order:
///  - by tensors (max_bytes == 0): a new part every max_tensors tensors;
///  - by size (max_bytes > 0): a new part when the next tensor (counted padded to 32
///    bytes) would take the current part's tensor bytes beyond max_bytes. A tensor
///    larger than max_bytes gets a part of its own (metadata is not counted).
struct SplitOptions {
  int64_t max_tensors = 128;
  uint64_t max_bytes = 0;
  bool no_tensor_first_split = false;  // the first part holds metadata only
};

/// One part of a plan: which tensors (indices into the input's tensors()) it holds.
struct SplitPart {
  std::string path;
  std::vector<size_t> tensors;
  uint64_t tensor_bytes = 0;  // with padding
};

/// The parts split_gguf would write for `in` under `out_prefix`.
Result<std::vector<SplitPart>> plan_split(const File& in, const std::string& out_prefix,
                                          const SplitOptions& options);

/// Progress of a split or merge: bytes of tensor data written so far of `total`.
using SplitProgress = std::function<void(const std::string& file, uint64_t done, uint64_t total)>;

/// Writes the parts of `plan` (from plan_split of `in`): the first with all of `in`'s
/// metadata (split keys of `in` replaced), each with split.no / split.count /
/// split.tensors.count. A part that fails leaves none of the parts behind.
Status write_split(const File& in, const std::vector<SplitPart>& plan, const SplitProgress& progress = {});

/// Merges the split model whose first part is `first` into the single file `out` (which
/// must not exist): the first part's metadata without the split keys, then every part's
/// tensors in order. For parts that write_split made from a file, the result is that
/// file byte for byte (tessera's and the reference's writers lay files out alike).
Status merge_gguf(const std::string& first, const std::string& out, const SplitProgress& progress = {});

}  // namespace tessera::gguf
