#include "backend/cpu/ops/mul_mat_x16.h"

#include <algorithm>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/ops/common.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/vec.h"

namespace tessera::cpu {
namespace {

constexpr size_t kAlign = 64;
// Activation bytes a chunk of columns may take: the chunk stays in L2 (2 MiB on the
// machines we measure) while every weight group of the thread passes over it.
constexpr size_t kChunkBytes = 1u << 20;
// The work queue hands out weight groups in multiples of two: decode reads the k-quants
// two groups at a time (pairs_then_groups), and the AVX-512 F16 and BF16 tiles take two.
constexpr int64_t kGrain = 2;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// What the kernels read as activations: BlockQ8X rows (Q4_0, Q8_0), BlockQ8KX rows
// (k-quants), bf16 rows (BF16 weights), or float rows (F16 weights): src1 itself when it
// is contiguous, else a packed copy.
struct X16Layout {
  bool quantized;    // src0 is a quantized _X16 type (else F16_X16 or BF16_X16)
  bool bf16;         // src0 is BF16_X16: activations rounded to bf16
  bool k_quant;      // super-blocks of 256 and BlockQ8KX activations
  bool direct;       // float activations read straight from src1
  size_t act_row;    // bytes of one activation row
  size_t act_bytes;  // all activation rows in the scratch (rounded to 64; 0 when direct)
  size_t buf_bytes;  // per-thread float row for quantizing strided src1 rows (else 0)
  bool own;          // few rows: every thread prepares all of them in its own area
};

// Up to this many activation rows (generation, small batches), every thread quantizes
// (or packs) all of them itself in compute: a microsecond of repeated work instead of a
// shared copy and a barrier between prepare and compute.
constexpr int64_t kOwnRows = 4;

X16Layout layout_of(const Tensor* node) {
  const Tensor* b = node->src[1];
  X16Layout l{};
  l.bf16 = node->src[0]->type == DType::BF16_X16;
  l.quantized = node->src[0]->type != DType::F16_X16 && !l.bf16;
  l.k_quant = x16_super_blocks(node->src[0]->type);
  l.direct = node->src[0]->type == DType::F16_X16 && b->is_contiguous();
  if (l.k_quant) {
    l.act_row = size_t(b->ne[0] / 256) * sizeof(BlockQ8KX);
  } else if (l.bf16) {
    l.act_row = size_t(b->ne[0]) * sizeof(uint16_t);
  } else {
    l.act_row = l.quantized ? size_t(b->ne[0] / 32) * sizeof(BlockQ8X) : size_t(b->ne[0]) * sizeof(float);
  }
  l.act_bytes = l.direct ? 0 : round_up(l.act_row * size_t(b->nrows()));
  l.buf_bytes = (l.quantized || l.bf16) && b->nb[0] != sizeof(float) ? round_up(size_t(b->ne[0]) * sizeof(float)) : 0;
  l.own = !l.direct && b->nrows() <= kOwnRows;
  return l;
}

// Thread ith's area: its own copy of the activation rows (when l.own) and its float row.
char* thread_area(char* work, const X16Layout& l, int ith) {
  char* base = align64(work);
  return l.own ? base + size_t(ith) * (l.act_bytes + l.buf_bytes) : base + l.act_bytes + size_t(ith) * l.buf_bytes;
}

// Writes activation rows [r0, r1) of src1 at act: quantized (quantized weights), rounded
// to bf16 (BF16 weights) or packed floats (F16 weights). buf: a float row for strided
// src1 rows.
void fill_rows(const Tensor* node, const X16Layout& l, int64_t r0, int64_t r1, char* act, float* buf) {
  const Tensor* b = node->src[1];
  if (l.bf16) {
    const VecKernels& v = vec_kernels();
    for (int64_t r = r0; r < r1; ++r) {
      const RowIndex ri = row_index(b, r);
      v.f32_to_bf16(read_row(b, ri.i1, ri.i2, ri.i3, buf), reinterpret_cast<uint16_t*>(act + size_t(r) * l.act_row),
                    b->ne[0]);
    }
    return;
  }
  if (!l.quantized) {
    for (int64_t r = r0; r < r1; ++r) {
      const RowIndex ri = row_index(b, r);
      auto* row = reinterpret_cast<float*>(act + size_t(r) * l.act_row);
      const float* src = read_row(b, ri.i1, ri.i2, ri.i3, row);
      if (src != row) std::copy(src, src + b->ne[0], row);
    }
    return;
  }
  const GemmKernels& k = gemm_kernels();
  const int32_t zero_point = l.k_quant ? 0 : x16_zero_point(node->src[0]->type);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(b, r);
    const float* row = read_row(b, ri.i1, ri.i2, ri.i3, buf);
    char* out = act + size_t(r) * l.act_row;
    if (l.k_quant) {
      k.quantize_q8kx(row, out, b->ne[0]);
    } else {
      k.quantize_q8x(row, out, b->ne[0], zero_point);
    }
  }
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
  return kAlign + (l.own ? 0 : l.act_bytes) + size_t(nth) * ((l.own ? l.act_bytes : 0) + l.buf_bytes);
}

// Quantizes src1 rows (quantized weights), rounds them to bf16 (BF16 weights) or packs
// strided ones (F16 weights), split over threads, into the activation rows at the start
// of the scratch (unless l.own).
bool mul_mat_x16_prepare(Tensor* node, const KernelParams& p) {
  const X16Layout l = layout_of(node);
  if (l.direct || l.own) return false;
  int64_t r0, r1;
  split_range(node->src[1]->nrows(), p.ith, p.nth, &r0, &r1);
  char* area = thread_area(p.work, l, p.ith);
  fill_rows(node, l, r0, r1, align64(p.work), l.buf_bytes ? reinterpret_cast<float*>(area) : nullptr);
  return true;
}

// The weight groups are split between the threads; with fewer groups than threads, the
// columns are. When all columns fit in one chunk (generation, small batches) the groups
// are handed out through a WorkQueue: each thread streams its own share of the matrix in
// order, in ranges that shrink towards the share's end, and one that finishes early takes
// over the back half of what another has left instead of waiting for it (against fixed
// runs per thread: docs/performance.md, "Kernel history"). dst is dense: column c (a src1
// row, all planes flattened) is dst + c * ne0. Every output is computed by one tile with a fixed order
// of operations, so the split never changes the results.
void mul_mat_x16_compute(Tensor* node, const KernelParams& p) {
  const Tensor* a = node->src[0];
  const X16Layout l = layout_of(node);
  const GemmKernels& kernels = gemm_kernels();
  const int64_t k = a->ne[0];
  const int64_t n_groups = a->ne[1] / kGroupRows;
  const int64_t n_cols = node->src[1]->nrows();
  const size_t group_bytes = size_t(kGroupRows) * a->nb[1];
  const char* act = l.direct ? static_cast<const char*>(node->src[1]->data) : align64(p.work);
  if (l.own) {
    char* mine = thread_area(p.work, l, p.ith);
    fill_rows(node, l, 0, n_cols, mine, l.buf_bytes ? reinterpret_cast<float*>(mine + l.act_bytes) : nullptr);
    act = mine;
  }
  auto* dst = static_cast<float*>(node->data);
  const size_t dst_stride = size_t(node->ne[0]);

  auto run = [&](int64_t g0, int64_t g1, int64_t cs, int64_t ce) {
    const char* x = act + size_t(cs) * l.act_row;
    if (l.quantized) {  // one call for the run: decode may read several groups at once
      const char* w = static_cast<const char*>(a->data) + size_t(g0) * group_bytes;
      gemm_x16(kernels, a->type)(w, g1 - g0, k / (l.k_quant ? 256 : 32), x, l.act_row, ce - cs,
                                 dst + size_t(cs) * dst_stride + size_t(g0 * kGroupRows), dst_stride);
      return;
    }
    // Likewise for F16 and BF16: the AVX-512 tiles take two groups at a time.
    const char* w = static_cast<const char*>(a->data) + size_t(g0) * group_bytes;
    float* d = dst + size_t(cs) * dst_stride + size_t(g0 * kGroupRows);
    if (l.bf16) {
      kernels.gemm_bf16_x16(w, g1 - g0, k, reinterpret_cast<const uint16_t*>(x), size_t(k), ce - cs, d, dst_stride);
    } else {
      kernels.gemm_f16_x16(w, g1 - g0, k, reinterpret_cast<const float*>(x), size_t(k), ce - cs, d, dst_stride);
    }
  };
  // Whole tiles of every level's kernels: multiples of 24 quantized columns (tiles of 8
  // and 24), 12 float or bf16 ones (tiles of 3, 6 and 12; an F16 ffn_down row, k = 5632,
  // leaves room for 45 columns: 36 read the weights from memory 14 times a prompt of 512,
  // not 21).
  const int64_t tile = l.quantized ? 24 : 12;
  const int64_t chunk = std::max<int64_t>(tile, int64_t(kChunkBytes / l.act_row) / tile * tile);
  if (n_cols <= chunk && n_groups >= p.nth && p.slots != nullptr) {
    const int64_t n_items = std::min(n_groups, WorkQueue::kMaxItems);
    WorkQueue queue(p.slots, p.ith, p.nth, p.seq, n_items, kGrain);
    for (int64_t f, e; queue.next(&f, &e);) run(n_groups * f / n_items, n_groups * e / n_items, 0, n_cols);
    return;
  }
  int64_t g0 = 0, g1 = n_groups, c0 = 0, c1 = n_cols;
  if (n_groups >= p.nth) {
    split_range(n_groups, p.ith, p.nth, &g0, &g1);
  } else {
    split_range(n_cols, p.ith, p.nth, &c0, &c1);
  }
  for (int64_t cs = c0; cs < c1; cs += chunk) run(g0, g1, cs, std::min(c1, cs + chunk));
}

}  // namespace tessera::cpu
