#include "backend/cpu/ops/copy.h"

#include <cstring>
#include <variant>

#include "backend/cpu/ops/common.h"
#include "core/check.h"

namespace tessera::cpu {
namespace {

bool dense_rows(const Tensor* t) { return t->nb[0] == dtype_traits(t->type).type_size; }

// Whether src's elements can be copied into dst (same element count): raw copies for
// one type, float conversions between F32/F16/BF16 for any shapes, and row-by-row
// conversion through float for other types with converters and equal row lengths.
bool can_copy(const Tensor* src, const Tensor* dst) {
  if (src->nelements() != dst->nelements()) return false;
  const DTypeTraits& ts = dtype_traits(src->type);
  if (src->type == dst->type) {
    return ts.block_size == 1 || (src->ne[0] == dst->ne[0] && dense_rows(src) && dense_rows(dst));
  }
  if (is_plain_float(src->type) && is_plain_float(dst->type)) return true;
  return src->ne[0] == dst->ne[0] && rows_readable(src) && rows_writable(dst);
}

// Copies src row (i1, i2, i3) into the dst row with the same linear row index; rows
// have the same length.
void copy_row(const Tensor* src, const Tensor* dst, const RowIndex& rs, const RowIndex& rd,
              float* buf) {
  if (src->type == dst->type) {
    const char* s = elem_ptr(src, 0, rs.i1, rs.i2, rs.i3);
    char* d = elem_ptr(dst, 0, rd.i1, rd.i2, rd.i3);
    if (dense_rows(src) && dense_rows(dst)) {
      std::memmove(d, s, src->row_size());
      return;
    }
    const size_t ts = dtype_traits(src->type).type_size;
    for (int64_t i = 0; i < src->ne[0]; ++i)
      std::memmove(d + i * dst->nb[0], s + i * src->nb[0], ts);
    return;
  }
  write_row(dst, rd.i1, rd.i2, rd.i3, read_row(src, rs.i1, rs.i2, rs.i3, buf));
}

// Copies src row (i1, i2, i3) element by element to the dst elements with the same
// linear indices (shapes differ; one element per block on both sides).
void copy_elements(const Tensor* src, const Tensor* dst, const RowIndex& rs, int64_t r) {
  ElemIndex e = elem_index(dst, r * src->ne[0]);
  const size_t ts = dtype_traits(src->type).type_size;
  for (int64_t i0 = 0; i0 < src->ne[0]; ++i0) {
    const char* s = elem_ptr(src, i0, rs.i1, rs.i2, rs.i3);
    char* d = elem_ptr(dst, e.i[0], e.i[1], e.i[2], e.i[3]);
    if (src->type == dst->type) {
      std::memmove(d, s, ts);
    } else {
      store_float(dst->type, d, load_float(src->type, s));
    }
    for (int k = 0; k < kMaxDims && ++e.i[k] == dst->ne[k]; ++k) e.i[k] = 0;
  }
}

// Row (i1, i2, i3) of t converted to F32 into y (gathered or converted as needed).
void copy_row_f32(const Tensor* t, int64_t i1, int64_t i2, int64_t i3, float* y) {
  const float* x = read_row(t, i1, i2, i3, y);
  if (x != y) std::memcpy(y, x, size_t(t->ne[0]) * sizeof(float));
}

}  // namespace

bool cpy_supports(const Tensor* node) { return can_copy(node->src[0], node); }
bool cont_supports(const Tensor* node) { return can_copy(node->src[0], node); }

size_t copy_work_size(const Tensor* node, int nth) {
  const Tensor* src = node->src[0];
  return src->type == node->type ? 0 : thread_scratch_size(src->ne[0], nth);
}

// Source rows are split across threads; element i of src (row-major) goes to element
// i of dst. Used by cpy (dst = the node, a view of the destination) and cont.
void copy_compute(Tensor* node, const KernelParams& p) {
  const Tensor* src = node->src[0];
  float* buf = src->type == node->type ? nullptr : thread_scratch(p, src->ne[0]);
  const bool by_rows = src->ne[0] == node->ne[0];
  int64_t r0, r1;
  split_range(src->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex rs = row_index(src, r);
    if (by_rows) {
      copy_row(src, node, rs, row_index(node, r), buf);
    } else {
      copy_elements(src, node, rs, r);
    }
  }
}

bool concat_supports(const Tensor* node) {
  return node->type == DType::F32 && node->nb[0] == sizeof(float) &&
         node->src[0]->type == DType::F32 && node->src[1]->type == DType::F32;
}

// Each dst row comes from a, from b, or (dim 0) from both, picked by its coordinates.
void concat_compute(Tensor* node, const KernelParams& p) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  const int dim = std::get<ConcatParams>(node->params).dim;
  int64_t r0, r1;
  split_range(node->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(node, r);
    float* y = reinterpret_cast<float*>(elem_ptr(node, 0, ri.i1, ri.i2, ri.i3));
    if (dim == 0) {
      copy_row_f32(a, ri.i1, ri.i2, ri.i3, y);
      copy_row_f32(b, ri.i1, ri.i2, ri.i3, y + a->ne[0]);
      continue;
    }
    int64_t c[4] = {0, ri.i1, ri.i2, ri.i3};
    const Tensor* s = a;
    if (c[dim] >= a->ne[dim]) {
      c[dim] -= a->ne[dim];
      s = b;
    }
    copy_row_f32(s, c[1], c[2], c[3], y);
  }
}

bool get_rows_supports(const Tensor* node) {
  return node->type == DType::F32 && node->nb[0] == sizeof(float) && rows_readable(node->src[0]) &&
         node->src[1]->type == DType::I32;
}

// Output row j is row ids[j] of src0, converted to F32 straight into the output.
void get_rows_compute(Tensor* node, const KernelParams& p) {
  const Tensor* a = node->src[0];
  const Tensor* ids = node->src[1];
  int64_t r0, r1;
  split_range(node->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(node, r);
    const int64_t id = read_i32(ids, ri.i1);
    TESSERA_CHECK_MSG(id >= 0 && id < a->ne[1], "get_rows: row id out of range");
    copy_row_f32(a, id, 0, 0, reinterpret_cast<float*>(elem_ptr(node, 0, ri.i1, ri.i2, ri.i3)));
  }
}

bool set_rows_supports(const Tensor* node) {
  return rows_writable(node) && node->src[1]->type == DType::F32 &&
         node->src[2]->type == DType::I32;
}

size_t set_rows_work_size(const Tensor* node, int nth) {
  const Tensor* src = node->src[1];
  return src->nb[0] == sizeof(float) ? 0 : thread_scratch_size(src->ne[0], nth);
}

// Threads split the destination rows, and each scans all ids in order, so a row named
// twice deterministically gets the last write and no two threads touch one row.
void set_rows_compute(Tensor* node, const KernelParams& p) {
  const Tensor* src = node->src[1];
  const Tensor* ids = node->src[2];
  float* buf = src->nb[0] == sizeof(float) ? nullptr : thread_scratch(p, src->ne[0]);
  int64_t d0, d1;
  split_range(node->ne[1], p.ith, p.nth, &d0, &d1);
  for (int64_t i = 0; i < src->ne[1]; ++i) {
    const int64_t id = read_i32(ids, i);
    TESSERA_CHECK_MSG(id >= 0 && id < node->ne[1], "set_rows: row id out of range");
    if (id < d0 || id >= d1) continue;
    write_row(node, id, 0, 0, read_row(src, i, 0, 0, buf));
  }
}

}  // namespace tessera::cpu
