// Merging LoRA adapters into a model: a new GGUF file whose adapted weights are
// W + sum over adapters of scale * (b a), so that the result runs at the base's speed
// with no adapter at run time. (Applying adapters without merging: ModelParams::adapters
// in tessera/model.h; the format and the flags: docs/lora.md.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/dtype.h"
#include "tessera/model.h"
#include "tessera/status.h"

namespace tessera {

/// Reported once per merged weight, after it is done.
struct LoraMergeProgress {
  size_t index = 0;  // 0-based, over the merged weights
  size_t n_merged = 0;
  std::string_view name;  // the weight's GGUF name
  DType from = DType::F32;
  DType to = DType::F32;
};

struct LoraMergeParams {
  /// Type of the merged weights: F32, F16 or BF16; unset: the weight's own type when it is
  /// one of these, else F16 (a quantized base: quantize the result again afterwards).
  std::optional<DType> type;
  int n_threads = 0;  // threads sharing each weight's rows; 0 = all cores (the result is the same)
  std::function<void(const LoraMergeProgress&)> progress;  // optional
};

struct LoraMergeReport {
  size_t n_tensors = 0;  // in the output (as in the base)
  size_t n_merged = 0;   // weights that some adapter updates
  size_t n_updates = 0;  // (weight, adapter) pairs applied
  uint64_t out_file_bytes = 0;
  double seconds = 0;
};

/// Writes `out`: the GGUF model `base` with every weight that one of `adapters` updates
/// replaced by W + sum scale * (b a) (scale: the user's times alpha / r, as at run time),
/// computed in double in a fixed order and rounded once to the output type. All other
/// tensors and every key are copied unchanged, except general.name, which gets a
/// " + lora" suffix. The adapters are validated exactly as Model::load does (errors name
/// the adapter file and the tensor); `out` must not be `base` nor one of the adapters.
/// An empty `base` is the built-in default model (Model::load_default).
/// Memory: the inputs stay mapped; the merged weights are held until the file is written.
Result<LoraMergeReport> merge_adapters(const std::string& base, const std::vector<AdapterSpec>& adapters,
                                       const std::string& out, const LoraMergeParams& params = {});

}  // namespace tessera
