// Quantizing a GGUF model: reads a file with F32/F16/BF16 weights and writes a copy whose
// weight matrices are stored in a block-quantized type chosen per tensor by a recipe
// ("Q4_K_M", "Q8_0", ...; the recipes are the GGUF ecosystem's default ones).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/dtype.h"
#include "tessera/status.h"

namespace tessera {

/// Reported once per tensor, after the tensor is done.
struct QuantizeProgress {
  size_t index = 0;  // 0-based index of the tensor just done
  size_t n_tensors = 0;
  std::string_view name;
  DType from = DType::F32;  // its type in the input
  DType to = DType::F32;    // its type in the output
  std::array<int64_t, 4> ne{1, 1, 1, 1};
  int n_dims = 1;
  bool converted = false;      // false: copied unchanged (norms, or already of the right type)
  std::string_view note;       // non-empty when the recipe's type did not fit: what was used
  uint64_t in_bytes_done = 0;  // tensor bytes of the input read so far
  uint64_t in_bytes_total = 0;
  uint64_t out_bytes_done = 0;  // tensor bytes of the output produced so far
};

struct QuantizeParams {
  std::string type_name;          // a recipe: one of quantize_type_names() (any case)
  int n_threads = 0;              // threads that share each tensor's rows; 0 = all cores
  bool allow_requantize = false;  // accept inputs whose tensors are already quantized
  bool pure = false;              // no mixes: every weight matrix gets the base type
  /// An importance matrix file (`tessera imatrix`, or the reference's llama-imatrix):
  /// each matrix with an entry of its name is quantized by its type's weighted search
  /// (an expert stack's experts each with their slice); the file's name, dataset, entry
  /// and chunk counts go to the quantize.imatrix.* keys. Some targets need one
  /// (QuantRecipe::needs_imatrix).
  std::string imatrix_path;
  std::function<void(const QuantizeProgress&)> progress;  // optional
};

/// What a quantization did.
struct QuantizeReport {
  std::string recipe;      // canonical recipe name ("Q4_K_M" for "q4_k")
  uint32_t file_type = 0;  // written to general.file_type
  size_t n_tensors = 0;
  size_t n_converted = 0;  // tensors whose type changed
  size_t n_fallbacks = 0;  // tensors that got a fallback type (see QuantizeProgress::note)
  size_t n_imatrix = 0;    // tensors quantized by a weighted search (their type has one)
  size_t n_imatrix_entries = 0;  // entries of the importance matrix file (0 without one)
  uint64_t n_elements = 0;
  uint64_t in_tensor_bytes = 0, out_tensor_bytes = 0;
  uint64_t in_file_bytes = 0, out_file_bytes = 0;
  double seconds = 0;
  std::vector<std::pair<DType, size_t>> type_counts;  // output tensors per type
};

/// Quantizes the GGUF model `in` into a new file `out` (never the same file). All
/// metadata is copied; general.file_type and general.quantization_version (2) are set.
/// Errors name the file, the tensor or the type: an unknown recipe (listing the valid
/// ones), an unreadable input, an already-quantized tensor without allow_requantize, a
/// type tessera cannot convert, a failed write (no partial file is left), a target or a
/// tensor that needs an importance matrix without one (naming the type, or the tensor and
/// its type), an unreadable importance matrix, or an entry whose size does not fit its
/// tensor.
/// Memory: the input stays mapped; conversion works in row chunks per thread, but the
/// output tensors are held in memory until the file is written.
Result<QuantizeReport> quantize_model(const std::string& in, const std::string& out,
                                      const QuantizeParams& params);

/// The recipe names quantize_model accepts, in a sensible order for help texts.
std::vector<std::string> quantize_type_names();
/// A one-line description of a recipe ("" for an unknown name).
std::string quantize_type_summary(std::string_view name);
/// Bits per weight of a recipe (0 for an unknown name): the reference quantizer's figure
/// for the mix where it states one (the i-quant and ternary targets), else the base
/// type's blocks' (8 * bytes / elements per block; a mix's other tensors add a little).
double quantize_type_bpw(std::string_view name);
/// Whether a recipe's bits per weight is the reference's figure for the mix (true) or
/// the base type's blocks' (false).
bool quantize_type_bpw_is_mix(std::string_view name);

}  // namespace tessera
