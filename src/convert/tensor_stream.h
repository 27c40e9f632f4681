// One planned tensor on its way to GGUF: its sources found and checked before anything is
// written (each shape against the plan, a dtype convert reads as weights), then its bytes
// produced while the file is written, a block of rows at a time, each source's mapped pages
// given back once read. Converting thus holds about one block (one tensor, for transforms
// that move values across rows) whatever the size of the checkpoint.
#pragma once

#include <array>
#include <vector>

#include "convert/hf_arch.h"
#include "convert/hf_checkpoint.h"
#include "tessera/dtype.h"
#include "tessera/gguf.h"

namespace tessera::convert {

/// The scales of an FP8 source (F8_E4M3/E5M2 weights), applied as it is read: DeepSeek-V3's
/// `<name>_scale_inv` (one per block of block_rows × block_cols weights, [ceil(rows /
/// block_rows), ceil(cols / block_cols)]) or compressed-tensors' `<name>_scale` (one per
/// tensor, or one per row).
struct SourceScale {
  std::vector<float> values;  // empty: the source is not scaled
  int64_t cols = 1;           // of the weight, as stored
  int64_t block_rows = 0, block_cols = 0;  // 0: one scale per tensor or per row
};

struct TensorJob {
  const TensorPlan* plan = nullptr;
  std::vector<const safetensors::TensorInfo*> sources;  // the plan's, in order
  std::vector<SourceScale> scales;                      // one per source
  DType type = DType::F32;                              // as written
  int n_dims = 1;
  std::array<int64_t, 4> ne = {1, 1, 1, 1};
  size_t nbytes = 0;
};

/// Finds p's sources in `ck` (taking them, and the scale tensors of FP8 ones, whose blocks
/// are `fp8_block` = config.json's quantization_config.weight_block_size) and checks them;
/// the type written is `weights` but for what the reference keeps F32 (1-D tensors, norms,
/// the plan's keep_f32).
Result<TensorJob> prepare_tensor(const TensorPlan& p, Checkpoint& ck, DType weights,
                                 std::array<int64_t, 2> fp8_block = {128, 128});

/// Produces the job's nbytes into `out`.
Status produce_tensor(const TensorJob& job, const Checkpoint& ck, const gguf::Writer::ByteSink& out);

}  // namespace tessera::convert
