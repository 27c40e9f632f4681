// Hugging Face's safetensors files, as checkpoints ship them (model.safetensors, or the
// shards a model.safetensors.index.json lists): an 8-byte little-endian header length,
// a JSON header {"NAME": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {string: string}}, then the data section. The reader maps the file and
// validates it whole before anything is read, as the format's own library does: every
// tensor's bytes are its shape times its element size, the tensors tile the data section
// from its start to the file's end with no gap or overlap, names are unique.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera::safetensors {

/// The element types of the format (its dtype strings, less the booleans and integers a
/// checkpoint's weights are not: those load, but to_float refuses them).
enum class Dtype { F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, I32, I16, I8, U8, U16, U32, U64, Bool };

/// The dtype's name as the header writes it ("F32", "BF16", "F8_E4M3", ...).
const char* dtype_name(Dtype t);
/// Bytes per element.
size_t dtype_size(Dtype t);

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<int64_t> shape;  // outermost first, as PyTorch (the reverse of GGUF's ne)
  uint64_t offset = 0;         // into the data section
  uint64_t nbytes = 0;
  const uint8_t* data = nullptr;  // into the mapping (valid while the File lives)

  int64_t n_elements() const;
};

class File {
 public:
  /// Maps and validates `path`. Errors name the file and what is wrong (the tensor, the
  /// field, the offsets).
  static Result<std::unique_ptr<File>> open(const std::string& path);
  /// The same over bytes in memory; `name` stands for the path in messages.
  static Result<std::unique_ptr<File>> from_bytes(std::vector<uint8_t> bytes, const std::string& name);
  ~File();

  const std::string& path() const { return path_; }
  /// In the header's order of offsets (the data section's order).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  /// Null when absent.
  const TensorInfo* find(const std::string& name) const;
  /// Gives back the memory of `t`'s mapped pages once it has been read (a file read by
  /// open(); nothing for from_bytes): a converter streaming a checkpoint larger than memory
  /// calls it after each tensor. `t` can still be read afterwards (from the file again).
  void drop_pages(const TensorInfo& t) const;
  /// The header's "__metadata__" (e.g. {"format": "pt"}); empty when absent.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  File() = default;
  struct Storage;
  static Result<std::unique_ptr<File>> parse(std::unique_ptr<Storage> storage, const std::string& name);
  std::string path_;
  std::unique_ptr<Storage> storage_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

/// The elements of `t` as floats (F64, F32, F16, BF16 exactly where F32 holds them;
/// F8_E4M3 and F8_E5M2 without any scale: the converter applies a checkpoint's scale
/// tensors). `out` has t.n_elements() floats. An error for the integer and boolean types.
Status to_float(const TensorInfo& t, std::span<float> out);

/// A tensor to write: its bytes in `dtype`, outermost dimension first.
struct WriteTensor {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<int64_t> shape;
  std::span<const uint8_t> data;
};

/// Writes a safetensors file (tensors in the given order, the header padded with spaces
/// to 8 bytes as the format's library pads it). Errors: a size that disagrees with the
/// shape, a duplicate or reserved name, the OS error.
Status write(const std::string& path, const std::vector<WriteTensor>& tensors,
             const std::map<std::string, std::string>& metadata = {});

}  // namespace tessera::safetensors
