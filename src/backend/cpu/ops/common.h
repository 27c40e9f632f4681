// Helpers shared by the CPU op kernels: strided addressing, reading and writing rows of
// any convertible type as float, thread scratch, and I32 index reads.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/op_table.h"
#include "core/tensor.h"

namespace tessera::cpu {

/// Address of element (i0, i1, i2, i3).
inline char* elem_ptr(const Tensor* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return static_cast<char*>(t->data) + i0 * int64_t(t->nb[0]) + i1 * int64_t(t->nb[1]) +
         i2 * int64_t(t->nb[2]) + i3 * int64_t(t->nb[3]);
}

/// Coordinates (i1, i2, i3) of row r (rows ordered with i1 fastest).
struct RowIndex {
  int64_t i1, i2, i3;
};
inline RowIndex row_index(const Tensor* t, int64_t r) {
  const int64_t i1 = r % t->ne[1];
  const int64_t i23 = r / t->ne[1];
  return {i1, i23 % t->ne[2], i23 / t->ne[2]};
}

/// Coordinates of the element with linear (row-major, i0 fastest) index i.
struct ElemIndex {
  int64_t i[4];
};
inline ElemIndex elem_index(const Tensor* t, int64_t i) {
  ElemIndex e{};
  for (int d = 0; d < kMaxDims; ++d) {
    e.i[d] = i % t->ne[d];
    i /= t->ne[d];
  }
  return e;
}

/// F32, F16 or BF16: types every kernel reads and writes element by element.
bool is_plain_float(DType type);
float load_float(DType type, const char* p);
void store_float(DType type, char* p, float v);

/// Whether read_row works for t: the type converts to float, and its rows are dense
/// unless it has one element per block.
bool rows_readable(const Tensor* t);
/// Whether write_row works for t (the same, converting from float).
bool rows_writable(const Tensor* t);

/// Row (i1, i2, i3) of t as ne0 floats: a pointer into t when it is F32 with dense rows,
/// else the row converted into buf (ne0 floats).
const float* read_row(const Tensor* t, int64_t i1, int64_t i2, int64_t i3, float* buf);
/// Converts ne0 floats into row (i1, i2, i3) of t, in t's type and strides.
void write_row(const Tensor* t, int64_t i1, int64_t i2, int64_t i3, const float* src);

/// Scratch bytes for nth per-thread slices of n floats each (64-byte aligned slices).
size_t thread_scratch_size(int64_t n, int nth);
/// This thread's slice of n floats in scratch laid out by thread_scratch_size.
float* thread_scratch(const KernelParams& p, int64_t n);
/// Rounds a pointer up to 64 bytes (the work buffer itself is not aligned).
char* align64(char* p);

/// Element i (linear index) of an I32 tensor of any layout.
int32_t read_i32(const Tensor* t, int64_t i);

/// Calls f(y, x, n) for each row of dst this thread owns, where y is dst's row and x is
/// src0's row (gathered into y first when src0's rows are strided).
template <typename F>
void for_each_row(Tensor* dst, const KernelParams& p, F f) {
  const Tensor* a = dst->src[0];
  int64_t r0, r1;
  split_range(dst->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(dst, r);
    float* y = reinterpret_cast<float*>(elem_ptr(dst, 0, ri.i1, ri.i2, ri.i3));
    f(y, read_row(a, ri.i1, ri.i2, ri.i3, y), dst->ne[0]);
  }
}

}  // namespace tessera::cpu
