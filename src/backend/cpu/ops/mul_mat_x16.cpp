#include "backend/cpu/ops/mul_mat_x16.h"

#include <algorithm>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/ops/common.h"
#include "backend/cpu/repack.h"

namespace tessera::cpu {
namespace {

constexpr size_t kAlign = 64;
// Activation bytes a chunk of columns may take: the chunk stays in L2 (2 MiB on the
// machines we measure) while every weight group of the thread passes over it.
constexpr size_t kChunkBytes = 1u << 20;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct X16Layout {
  size_t act_row;    // bytes of one quantized src1 row
  size_t act_bytes;  // all quantized src1 rows (rounded to 64)
  size_t buf_bytes;  // per-thread float row for strided src1 rows (else 0)
};

X16Layout layout_of(const Tensor* node) {
  const Tensor* b = node->src[1];
  X16Layout l{};
  l.act_row = size_t(b->ne[0] / 32) * sizeof(BlockQ8X);
  l.act_bytes = round_up(l.act_row * size_t(b->nrows()));
  l.buf_bytes = b->nb[0] == sizeof(float) ? 0 : round_up(size_t(b->ne[0]) * sizeof(float));
  return l;
}

}  // namespace

bool is_x16(DType t) { return dtype_traits(t).row_group == kGroupRows; }

bool mul_mat_x16_supports(const Tensor* node) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  return is_x16(a->type) && a->ne[2] == 1 && a->ne[3] == 1 && a->ne[1] % kGroupRows == 0 &&
         a->is_contiguous() && b->type == DType::F32 && node->type == DType::F32 &&
         node->is_contiguous();
}

size_t mul_mat_x16_work_size(const Tensor* node, int nth) {
  const X16Layout l = layout_of(node);
  return kAlign + l.act_bytes + size_t(nth) * l.buf_bytes;
}

// Quantizes src1 rows, split over threads, into BlockQ8X rows at the start of the scratch.
bool mul_mat_x16_prepare(Tensor* node, const KernelParams& p) {
  const Tensor* b = node->src[1];
  const X16Layout l = layout_of(node);
  const GemmKernels& k = gemm_kernels();
  const int32_t zero_point = x16_zero_point(node->src[0]->type);
  char* act = align64(p.work);
  float* buf = l.buf_bytes
                   ? reinterpret_cast<float*>(act + l.act_bytes + size_t(p.ith) * l.buf_bytes)
                   : nullptr;
  int64_t r0, r1;
  split_range(b->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(b, r);
    k.quantize_q8x(read_row(b, ri.i1, ri.i2, ri.i3, buf), act + size_t(r) * l.act_row, b->ne[0],
                   zero_point);
  }
  return true;
}

// Threads split the weight groups; with fewer groups than threads they split columns.
// dst is dense: column c (a src1 row, all planes flattened) is dst + c * ne0.
void mul_mat_x16_compute(Tensor* node, const KernelParams& p) {
  const Tensor* a = node->src[0];
  const X16Layout l = layout_of(node);
  const GemmX16Fn gemm = gemm_x16(gemm_kernels(), a->type);
  const int64_t nb = a->ne[0] / 32;
  const int64_t n_groups = a->ne[1] / kGroupRows;
  const int64_t n_cols = node->src[1]->nrows();
  const size_t group_bytes = size_t(kGroupRows) * a->nb[1];
  const char* act = align64(p.work);
  auto* dst = static_cast<float*>(node->data);
  const size_t dst_stride = size_t(node->ne[0]);

  int64_t g0 = 0, g1 = n_groups, c0 = 0, c1 = n_cols;
  if (n_groups >= p.nth) {
    split_range(n_groups, p.ith, p.nth, &g0, &g1);
  } else {
    split_range(n_cols, p.ith, p.nth, &c0, &c1);
  }
  const int64_t chunk = std::max<int64_t>(8, int64_t(kChunkBytes / l.act_row) / 8 * 8);
  for (int64_t cs = c0; cs < c1; cs += chunk) {
    const int64_t ce = std::min(c1, cs + chunk);
    for (int64_t g = g0; g < g1; ++g) {
      gemm(static_cast<const char*>(a->data) + size_t(g) * group_bytes, nb,
           act + size_t(cs) * l.act_row, l.act_row, ce - cs,
           dst + size_t(cs) * dst_stride + size_t(g * kGroupRows), dst_stride);
    }
  }
}

}  // namespace tessera::cpu
