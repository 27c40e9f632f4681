#include "backend/cpu/ops/mul_mat.h"

#include <algorithm>

#include "backend/cpu/ops/common.h"
#include "backend/cpu/ops/mul_mat_x16.h"
#include "backend/cpu/quant_kernels.h"
#include "backend/cpu/vec.h"

namespace tessera::cpu {
namespace {

constexpr size_t kAlign = 64;
constexpr int64_t kBlockBytes = 128 * 1024;  // converted src0 rows held per thread
constexpr int64_t kMaxBlock = 16;            // src0 rows per block

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// How src0 rows reach the dot kernels. All of them give the same bits (see vec.h).
enum class RowMode {
  DirectF32,   // F32 with dense rows: pointers into src0
  DirectF16,   // F16 with dense rows and few src1 rows per src0 row: dot_f16_f32
  DirectBF16,  // BF16 likewise: dot_bf16_f32
  Convert,     // anything else: rows converted to F32 in this thread's scratch
};

struct Layout {
  bool pack_src1;      // src1 rows are strided: prepare packs them densely
  size_t src1_bytes;   // bytes of the packed src1 (0 when not packed)
  int64_t block;       // src0 rows per block
  size_t slice_bytes;  // per-thread scratch for converted src0 rows
  RowMode mode;
};

Layout layout_of(const Tensor* node) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  Layout l{};
  l.pack_src1 = b->nb[0] != sizeof(float);
  l.src1_bytes = l.pack_src1 ? round_up(size_t(b->nelements()) * sizeof(float)) : 0;
  const int64_t row_bytes = std::max<int64_t>(a->ne[0] * int64_t(sizeof(float)), 1);
  l.block = std::clamp<int64_t>(kBlockBytes / row_bytes, 1, kMaxBlock);
  const int64_t uses = b->ne[1] * (b->ne[2] / a->ne[2]) * (b->ne[3] / a->ne[3]);
  if (a->type == DType::F32 && a->nb[0] == sizeof(float)) {
    l.mode = RowMode::DirectF32;
  } else if (a->type == DType::F16 && a->nb[0] == 2 && uses < 4) {
    l.mode = RowMode::DirectF16;
  } else if (a->type == DType::BF16 && a->nb[0] == 2 && uses < 4) {
    l.mode = RowMode::DirectBF16;
  } else {
    l.mode = RowMode::Convert;
  }
  l.slice_bytes = l.mode == RowMode::Convert ? round_up(size_t(l.block * row_bytes)) : 0;
  return l;
}

// Where src1 rows are read from: src1 itself or its packed copy.
struct Src1 {
  const char* base;
  size_t nb1, nb2, nb3;
  const float* row(int64_t i1, int64_t i2, int64_t i3) const {
    return reinterpret_cast<const float*>(base + i1 * nb1 + i2 * nb2 + i3 * nb3);
  }
};

Src1 src1_of(const Tensor* node, const Layout& l, const KernelParams& p) {
  const Tensor* b = node->src[1];
  if (!l.pack_src1) return {static_cast<const char*>(b->data), b->nb[1], b->nb[2], b->nb[3]};
  const size_t nb1 = size_t(b->ne[0]) * sizeof(float);
  return {align64(p.work), nb1, nb1 * size_t(b->ne[1]), nb1 * size_t(b->ne[1] * b->ne[2])};
}

// A block of consecutive src0 rows of one plane, ready for the dot kernels.
struct Block {
  const void* rows[kMaxBlock];
  int64_t n;           // rows in the block
  int64_t i1, i2, i3;  // coordinates of the first row
};

// Dots every row of the block with src1 rows [j0, j1) of each src1 plane that reads the
// block's src0 plane, writing dst[block row, src1 row].
void dot_block(Tensor* dst, const Block& blk, const Src1& s1, RowMode mode, int64_t j0,
               int64_t j1) {
  const Tensor* a = dst->src[0];
  const Tensor* b = dst->src[1];
  const VecKernels& vk = vec_kernels();
  const int64_t k = a->ne[0];
  const int64_t r2 = b->ne[2] / a->ne[2];
  const int64_t r3 = b->ne[3] / a->ne[3];
  for (int64_t i3 = blk.i3 * r3; i3 < (blk.i3 + 1) * r3; ++i3) {
    for (int64_t i2 = blk.i2 * r2; i2 < (blk.i2 + 1) * r2; ++i2) {
      auto out = [&](int64_t m, int64_t j) {
        return reinterpret_cast<float*>(elem_ptr(dst, blk.i1 + m, j, i2, i3));
      };
      int64_t j = j0;
      const bool half = mode == RowMode::DirectF16 || mode == RowMode::DirectBF16;
      if (!half) {
        for (; j + 4 <= j1; j += 4) {
          const float* cols[4] = {s1.row(j, i2, i3), s1.row(j + 1, i2, i3), s1.row(j + 2, i2, i3),
                                  s1.row(j + 3, i2, i3)};
          for (int64_t m = 0; m < blk.n; ++m) {
            float r[4];
            vk.dot_f32_x4(static_cast<const float*>(blk.rows[m]), cols, k, r);
            for (int c = 0; c < 4; ++c) *out(m, j + c) = r[c];
          }
        }
      }
      for (; j < j1; ++j) {
        const float* col = s1.row(j, i2, i3);
        for (int64_t m = 0; m < blk.n; ++m) {
          const auto* half_row = static_cast<const uint16_t*>(blk.rows[m]);
          if (mode == RowMode::DirectF16) {
            *out(m, j) = vk.dot_f16_f32(half_row, col, k);
          } else if (mode == RowMode::DirectBF16) {
            *out(m, j) = vk.dot_bf16_f32(half_row, col, k);
          } else {
            *out(m, j) = vk.dot_f32(static_cast<const float*>(blk.rows[m]), col, k);
          }
        }
      }
    }
  }
}

// Src0 rows [r0, r1) (counted over all planes) against src1 rows [j0, j1) of each
// matching plane, one block of src0 rows at a time.
void mul_mat_range(Tensor* dst, const Layout& l, const Src1& s1, float* slice, int64_t r0,
                   int64_t r1, int64_t j0, int64_t j1) {
  const Tensor* a = dst->src[0];
  const int64_t k = a->ne[0];
  for (int64_t r = r0; r < r1;) {
    const RowIndex ri = row_index(a, r);
    Block blk{};
    blk.n = std::min({l.block, r1 - r, a->ne[1] - ri.i1});
    blk.i1 = ri.i1;
    blk.i2 = ri.i2;
    blk.i3 = ri.i3;
    for (int64_t m = 0; m < blk.n; ++m) {
      if (l.mode == RowMode::Convert) {
        blk.rows[m] = read_row(a, ri.i1 + m, ri.i2, ri.i3, slice + m * k);
      } else {
        blk.rows[m] = elem_ptr(a, 0, ri.i1 + m, ri.i2, ri.i3);
      }
    }
    dot_block(dst, blk, s1, l.mode, j0, j1);
    r += blk.n;
  }
}

// ---- quantized src0 -----------------------------------------------------------------
// prepare quantizes every src1 row once into src0's partner type (Q8_0, Q8_1 or Q8_K) at
// the start of the scratch; compute then makes each output one quantized dot.

constexpr int64_t kQuantBlockBytes = 16 * 1024;  // src0 rows kept in L1 while src1 streams

// The quantized kernels for this node, or empty when src0 takes the float path.
QuantMatmul quant_path(const Tensor* node) {
  const Tensor* a = node->src[0];
  if (!dtype_traits(a->type).is_quantized) return {};
  return quant_matmul(quant_kernels(), a->type);
}

struct QuantLayout {
  QuantMatmul mm;
  size_t q_row_bytes;  // one src1 row in the partner type
  size_t q_bytes;      // all src1 rows, quantized (rounded to 64)
  size_t buf_bytes;    // per-thread float row for src1 with strided rows (else 0)
  int64_t block;       // src0 rows per block
};

QuantLayout quant_layout_of(const Tensor* node, const QuantMatmul& mm) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  QuantLayout l{};
  l.mm = mm;
  l.q_row_bytes = dtype_row_size(mm.partner, b->ne[0]);
  l.q_bytes = round_up(l.q_row_bytes * size_t(b->nrows()));
  l.buf_bytes = b->nb[0] == sizeof(float) ? 0 : round_up(size_t(b->ne[0]) * sizeof(float));
  l.block = std::clamp<int64_t>(kQuantBlockBytes / std::max<int64_t>(int64_t(a->row_size()), 1), 1,
                                kMaxBlock);
  return l;
}

// Quantizes src1 rows [r0, r1) (counted over all planes) into their slots of the scratch.
void quantize_src1(const Tensor* b, const QuantLayout& l, char* q, float* buf, int64_t r0,
                   int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(b, r);
    const float* row = read_row(b, ri.i1, ri.i2, ri.i3, buf);
    l.mm.quantize(row, q + size_t(r) * l.q_row_bytes, b->ne[0]);
  }
}

// Src0 rows [r0, r1) (counted over all planes) against quantized src1 rows [j0, j1) of
// each plane that reads them. A block of src0 rows stays in cache while the src1 rows
// stream past it; with one src1 row, src0 is read once, block after block.
void quant_range(Tensor* dst, const QuantLayout& l, const char* q, int64_t r0, int64_t r1,
                 int64_t j0, int64_t j1) {
  const Tensor* a = dst->src[0];
  const Tensor* b = dst->src[1];
  const int64_t k = a->ne[0];
  const int64_t r2 = b->ne[2] / a->ne[2];
  const int64_t r3 = b->ne[3] / a->ne[3];
  const QuantDotFn dot = l.mm.dot;
  for (int64_t r = r0; r < r1;) {
    const RowIndex ri = row_index(a, r);
    const int64_t n = std::min({l.block, r1 - r, a->ne[1] - ri.i1});
    const void* rows[kMaxBlock];
    for (int64_t m = 0; m < n; ++m) rows[m] = elem_ptr(a, 0, ri.i1 + m, ri.i2, ri.i3);
    for (int64_t i3 = ri.i3 * r3; i3 < (ri.i3 + 1) * r3; ++i3) {
      for (int64_t i2 = ri.i2 * r2; i2 < (ri.i2 + 1) * r2; ++i2) {
        const int64_t plane = (i3 * b->ne[2] + i2) * b->ne[1];
        for (int64_t j = j0; j < j1; ++j) {
          const char* y = q + size_t(plane + j) * l.q_row_bytes;
          for (int64_t m = 0; m < n; ++m) {
            *reinterpret_cast<float*>(elem_ptr(dst, ri.i1 + m, j, i2, i3)) = dot(k, rows[m], y);
          }
        }
      }
    }
    r += n;
  }
}

}  // namespace

bool mul_mat_supports(const Tensor* node) {
  const Tensor* a = node->src[0];
  if (is_x16(a->type)) return mul_mat_x16_supports(node);
  if (node->type != DType::F32 || node->src[1]->type != DType::F32) return false;
  if (quant_path(node)) return a->nb[0] == dtype_traits(a->type).type_size;  // dense rows
  return rows_readable(a);
}

size_t mul_mat_work_size(const Tensor* node, int nth) {
  if (is_x16(node->src[0]->type)) return mul_mat_x16_work_size(node, nth);
  if (const QuantMatmul mm = quant_path(node)) {
    const QuantLayout ql = quant_layout_of(node, mm);
    return kAlign + ql.q_bytes + size_t(nth) * ql.buf_bytes;
  }
  const Layout l = layout_of(node);
  if (!l.pack_src1 && l.slice_bytes == 0) return 0;
  return kAlign + l.src1_bytes + size_t(nth) * l.slice_bytes;
}

// Quantized src0: quantizes all src1 rows into the partner type, split over src1 rows.
// Float src0: packs strided src1 rows into dense F32 rows. Either way at the start of the
// scratch, and compute runs after a barrier. Dense src1 with float src0 needs neither.
bool mul_mat_prepare(Tensor* node, const KernelParams& p) {
  if (is_x16(node->src[0]->type)) return mul_mat_x16_prepare(node, p);
  if (const QuantMatmul mm = quant_path(node)) {
    const QuantLayout ql = quant_layout_of(node, mm);
    char* q = align64(p.work);
    float* buf = ql.buf_bytes
                     ? reinterpret_cast<float*>(q + ql.q_bytes + size_t(p.ith) * ql.buf_bytes)
                     : nullptr;
    int64_t r0, r1;
    split_range(node->src[1]->nrows(), p.ith, p.nth, &r0, &r1);
    quantize_src1(node->src[1], ql, q, buf, r0, r1);
    return true;
  }
  const Layout l = layout_of(node);
  if (!l.pack_src1) return false;
  const Tensor* b = node->src[1];
  float* packed = reinterpret_cast<float*>(align64(p.work));
  int64_t r0, r1;
  split_range(b->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(b, r);
    read_row(b, ri.i1, ri.i2, ri.i3, packed + r * b->ne[0]);
  }
  return true;
}

// Threads split src0 rows over all planes; with fewer src0 rows than threads they split
// src1 rows instead. Either way each result element is one dot by one thread.
void mul_mat_compute(Tensor* node, const KernelParams& p) {
  if (is_x16(node->src[0]->type)) return mul_mat_x16_compute(node, p);
  const int64_t rows0 = node->src[0]->nrows();
  const int64_t rows1 = node->src[1]->ne[1];
  int64_t b = 0, e = 0;
  if (const QuantMatmul mm = quant_path(node)) {
    const QuantLayout ql = quant_layout_of(node, mm);
    const char* q = align64(p.work);
    if (rows0 >= p.nth) {
      split_range(rows0, p.ith, p.nth, &b, &e);
      quant_range(node, ql, q, b, e, 0, rows1);
    } else {
      split_range(rows1, p.ith, p.nth, &b, &e);
      if (b < e) quant_range(node, ql, q, 0, rows0, b, e);
    }
    return;
  }
  const Layout l = layout_of(node);
  const Src1 s1 = src1_of(node, l, p);
  float* slice = nullptr;
  if (l.slice_bytes) {
    slice =
        reinterpret_cast<float*>(align64(p.work) + l.src1_bytes + size_t(p.ith) * l.slice_bytes);
  }
  if (rows0 >= p.nth) {
    split_range(rows0, p.ith, p.nth, &b, &e);
    mul_mat_range(node, l, s1, slice, b, e, 0, rows1);
  } else {
    split_range(rows1, p.ith, p.nth, &b, &e);
    if (b < e) mul_mat_range(node, l, s1, slice, 0, rows0, b, e);
  }
}

}  // namespace tessera::cpu
