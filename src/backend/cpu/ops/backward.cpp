#include "backend/cpu/ops/backward.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <variant>

#include "backend/cpu/ops/common.h"
#include "backend/cpu/vec.h"
#include "core/check.h"

namespace tessera::cpu {
namespace {

// 16 floats are one 64-byte cache line: threads' chunks start on separate lines when
// the rows do.
constexpr int64_t kLine = 16;
// sum_to adds many input rows into each chunk of its result: 2048 floats (8 KiB) stay
// in L1 meanwhile.
constexpr int64_t kSumChunk = 2048;

bool is_f32(const Tensor* t) { return t->type == DType::F32; }
bool f32_result(const Tensor* node) { return is_f32(node) && node->is_contiguous(); }

size_t gather_work_size(const Tensor* src, int nth) {
  return src->nb[0] == sizeof(float) ? 0 : thread_scratch_size(src->ne[0], nth);
}

// Elements [i0, i0 + n) of row (i1, i2, i3) of the F32 tensor a: a pointer into a when
// its rows are dense, else gathered into buf.
const float* span(const Tensor* a, int64_t i0, int64_t n, int64_t i1, int64_t i2, int64_t i3,
                  float* buf) {
  const char* p = elem_ptr(a, i0, i1, i2, i3);
  if (a->nb[0] == sizeof(float)) return reinterpret_cast<const float*>(p);
  for (int64_t i = 0; i < n; ++i) std::memcpy(buf + i, p + i * int64_t(a->nb[0]), sizeof(float));
  return buf;
}

// y += x. Float adds are exact roundings either way, so a chunk gives the same bits
// whichever branch its length takes (lengths depend on the thread count).
void add_into(float* y, const float* x, int64_t n) {
  if (n >= kLine) {
    vec_kernels().add_f32(y, y, x, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

// Rows of n floats cut into chunks of whole cache lines (the last of a row may be
// shorter): enough work items for nth threads when there are fewer rows than threads,
// and none longer than max_len.
struct Chunks {
  int64_t len;      // floats per chunk
  int64_t per_row;  // chunks per row
};
Chunks row_chunks(int64_t nrows, int64_t n, int nth, int64_t max_len) {
  if (nrows <= 0 || n <= 0) return {kLine, 0};
  const int64_t want = std::max((nth + nrows - 1) / nrows, (n + max_len - 1) / max_len);
  const int64_t len = ((n + want - 1) / want + kLine - 1) / kLine * kLine;
  return {len, (n + len - 1) / len};
}

// This thread's share [begin, end) of n elements, cut at cache lines.
void flat_share(int64_t n, const KernelParams& p, int64_t* begin, int64_t* end) {
  split_range((n + kLine - 1) / kLine, p.ith, p.nth, begin, end);
  *begin *= kLine;
  *end = std::min(*end * kLine, n);
}

void zero_share(Tensor* node, const KernelParams& p) {
  int64_t b, e;
  flat_share(node->nelements(), p, &b, &e);
  if (e > b) std::memset(static_cast<float*>(node->data) + b, 0, size_t(e - b) * sizeof(float));
}

// node = src0 (F32, any strides, node's shape): by elements when src0 is contiguous,
// else by rows, gathered.
void copy_share(Tensor* node, const Tensor* a, const KernelParams& p) {
  if (a->is_contiguous()) {
    int64_t b, e;
    flat_share(node->nelements(), p, &b, &e);
    if (e > b) {
      std::memcpy(static_cast<float*>(node->data) + b, static_cast<const float*>(a->data) + b,
                  size_t(e - b) * sizeof(float));
    }
    return;
  }
  for_each_row(node, p, [](float* y, const float* x, int64_t n) {
    if (x != y) std::memcpy(y, x, size_t(n) * sizeof(float));
  });
}

}  // namespace

// --- acc ------------------------------------------------------------------------------

bool acc_supports(const Tensor* node) {
  const Tensor* a = node->src[0];
  return f32_result(node) && (a == nullptr || (is_f32(a) && a->same_shape(*node))) &&
         is_f32(node->src[1]);
}

size_t acc_work_size(const Tensor* node, int nth) { return gather_work_size(node->src[1], nth); }

// The result starts as src0 or as zeros. Nothing to do when the graph allocator put it
// over src0 (then node->data == src0->data, the same for every thread).
bool acc_prepare(Tensor* node, const KernelParams& p) {
  const Tensor* a = node->src[0];
  if (a != nullptr && a->data == node->data) return false;
  if (a == nullptr) {
    zero_share(node, p);
  } else {
    copy_share(node, a, p);
  }
  return true;
}

// Adds src1 into the window. src1's rows, cut into chunks when there are fewer rows than
// threads, are split over the threads; the window does not overlap itself, so each
// element of the result gets at most one add, from one thread.
void acc_compute(Tensor* node, const KernelParams& p) {
  const Tensor* b = node->src[1];
  const AccParams& ap = std::get<AccParams>(node->params);
  const int64_t n = b->ne[0];
  const Chunks ch = row_chunks(b->nrows(), n, p.nth, n);
  float* buf = b->nb[0] == sizeof(float) ? nullptr : thread_scratch(p, n);
  int64_t w0, w1;
  split_range(b->nrows() * ch.per_row, p.ith, p.nth, &w0, &w1);
  for (int64_t w = w0; w < w1; ++w) {
    const RowIndex ri = row_index(b, w / ch.per_row);
    const int64_t c0 = w % ch.per_row * ch.len;
    const int64_t len = std::min(ch.len, n - c0);
    const float* src = span(b, c0, len, ri.i1, ri.i2, ri.i3, buf);
    char* dst = static_cast<char*>(node->data) + ap.offset + size_t(c0) * ap.nb[0] +
                size_t(ri.i1) * ap.nb[1] + size_t(ri.i2) * ap.nb[2] + size_t(ri.i3) * ap.nb[3];
    if (ap.nb[0] == sizeof(float)) {
      add_into(reinterpret_cast<float*>(dst), src, len);
      continue;
    }
    for (int64_t i = 0; i < len; ++i)
      *reinterpret_cast<float*>(dst + size_t(i) * ap.nb[0]) += src[i];
  }
}

// --- sum_to ---------------------------------------------------------------------------

bool sum_to_supports(const Tensor* node) { return f32_result(node) && is_f32(node->src[0]); }

size_t sum_to_work_size(const Tensor* node, int nth) { return gather_work_size(node->src[0], nth); }

namespace {

// Elements [c0, c0 + len) of result row ro: zeroed, then every input row that folds
// onto ro adds (dims 3, 2, 1 outer to inner) its segments k0 = c0, c0 + ne0, ... in
// turn. The order depends on the shapes only. A result of one column takes each input
// row's vector sum instead.
void sum_chunk(const Tensor* a, Tensor* node, const RowIndex& ro, int64_t c0, int64_t len,
               float* buf) {
  const int64_t n0 = node->ne[0];
  float* out = reinterpret_cast<float*>(elem_ptr(node, c0, ro.i1, ro.i2, ro.i3));
  std::memset(out, 0, size_t(len) * sizeof(float));
  for (int64_t i3 = ro.i3; i3 < a->ne[3]; i3 += node->ne[3]) {
    for (int64_t i2 = ro.i2; i2 < a->ne[2]; i2 += node->ne[2]) {
      for (int64_t i1 = ro.i1; i1 < a->ne[1]; i1 += node->ne[1]) {
        if (n0 == 1) {
          out[0] += vec_kernels().sum_f32(span(a, 0, a->ne[0], i1, i2, i3, buf), a->ne[0]);
          continue;
        }
        for (int64_t k0 = c0; k0 < a->ne[0]; k0 += n0) {
          add_into(out, span(a, k0, len, i1, i2, i3, buf), len);
        }
      }
    }
  }
}

}  // namespace

// Work items are (result row, chunk of it). The common case, a [E, N] summed to [E],
// gives each thread a chunk of E that it accumulates over the N rows.
void sum_to_compute(Tensor* node, const KernelParams& p) {
  const Tensor* a = node->src[0];
  const int64_t n0 = node->ne[0];
  const Chunks ch = row_chunks(node->nrows(), n0, p.nth, kSumChunk);
  float* buf = a->nb[0] == sizeof(float) ? nullptr : thread_scratch(p, a->ne[0]);
  int64_t w0, w1;
  split_range(node->nrows() * ch.per_row, p.ith, p.nth, &w0, &w1);
  for (int64_t w = w0; w < w1; ++w) {
    const int64_t c0 = w % ch.per_row * ch.len;
    sum_chunk(a, node, row_index(node, w / ch.per_row), c0, std::min(ch.len, n0 - c0), buf);
  }
}

// --- get_rows_back --------------------------------------------------------------------

bool get_rows_back_supports(const Tensor* node) {
  return f32_result(node) && is_f32(node->src[0]) && node->src[1]->type == DType::I32;
}

size_t get_rows_back_work_size(const Tensor* node, int nth) {
  return gather_work_size(node->src[0], nth);
}

bool get_rows_back_prepare(Tensor* node, const KernelParams& p) {
  zero_share(node, p);
  return true;
}

// Each thread owns a range of columns (of dim 0) of every result row and adds the rows
// j = 0, 1, ... of dy in turn, so repeated ids accumulate in the order of j whatever
// the thread count.
void get_rows_back_compute(Tensor* node, const KernelParams& p) {
  const Tensor* dy = node->src[0];
  const Tensor* ids = node->src[1];
  const int64_t e = node->ne[0];
  const Chunks ch = row_chunks(1, e, p.nth, e);
  int64_t w0, w1;
  split_range(ch.per_row, p.ith, p.nth, &w0, &w1);
  if (w0 >= w1) return;
  const int64_t c0 = w0 * ch.len;
  const int64_t len = std::min(w1 * ch.len, e) - c0;
  float* buf = dy->nb[0] == sizeof(float) ? nullptr : thread_scratch(p, e);
  for (int64_t j = 0; j < dy->ne[1]; ++j) {
    const int32_t id = read_i32(ids, j);
    TESSERA_CHECK_MSG(id >= 0 && id < node->ne[1], "get_rows_back: id out of range");
    float* out = reinterpret_cast<float*>(elem_ptr(node, c0, id, 0, 0));
    add_into(out, span(dy, c0, len, j, 0, 0, buf), len);
  }
}

// --- rms_norm_back, soft_max_back, silu_back ------------------------------------------

namespace {

// Calls f(y, a, b, n) for each result row this thread owns: y is the result's row, a
// and b the rows of src0 and src1 (a gathered into y, b into this thread's scratch,
// when strided). f may read a[i] and then write y[i] (they may alias).
template <typename F>
void for_each_row_pair(Tensor* node, const KernelParams& p, F f) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  float* buf = b->nb[0] == sizeof(float) ? nullptr : thread_scratch(p, node->ne[0]);
  int64_t r0, r1;
  split_range(node->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(node, r);
    float* y = reinterpret_cast<float*>(elem_ptr(node, 0, ri.i1, ri.i2, ri.i3));
    f(y, read_row(a, ri.i1, ri.i2, ri.i3, y), read_row(b, ri.i1, ri.i2, ri.i3, buf), node->ne[0]);
  }
}

}  // namespace

bool row_pair_supports(const Tensor* node) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  return f32_result(node) && is_f32(a) && is_f32(b) && a->same_shape(*node) && b->same_shape(*node);
}

size_t row_pair_work_size(const Tensor* node, int nth) {
  return gather_work_size(node->src[1], nth);
}

// dx = r (dy - x r^2 mean(dy x)), r = 1 / sqrt(mean(x^2) + eps) as the forward computes
// it. The row sums are float, in the vector kernels' fixed order (sumsq_f32 as in the
// forward, dot_f32): it depends on the vector level, never on the thread count.
void rms_norm_back_compute(Tensor* node, const KernelParams& p) {
  const float eps = std::get<NormParams>(node->params).eps;
  const VecKernels& vk = vec_kernels();
  for_each_row_pair(node, p, [&](float* dx, const float* x, const float* dy, int64_t n) {
    const float r = 1.0f / std::sqrt(vk.sumsq_f32(x, n) / float(n) + eps);
    const float k = r * r * (vk.dot_f32(dy, x, n) / float(n));
    for (int64_t i = 0; i < n; ++i) dx[i] = r * (dy[i] - x[i] * k);
  });
}

// dx = scale y (dy - dot(dy, y)) (src0 dy, src1 y).
void soft_max_back_compute(Tensor* node, const KernelParams& p) {
  const float scale = std::get<SoftMaxParams>(node->params).scale;
  const VecKernels& vk = vec_kernels();
  for_each_row_pair(node, p, [&](float* dx, const float* dy, const float* y, int64_t n) {
    const float s = vk.dot_f32(dy, y, n);
    for (int64_t i = 0; i < n; ++i) dx[i] = scale * y[i] * (dy[i] - s);
  });
}

// dx = dy s (1 + x (1 - s)), s = sigmoid(x): the derivative of x s. Far below zero
// exp(-x) overflows to inf and s is 0, which gives 0, not NaN.
void silu_back_compute(Tensor* node, const KernelParams& p) {
  for_each_row_pair(node, p, [](float* dx, const float* x, const float* dy, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const float s = 1.0f / (1.0f + std::exp(-x[i]));
      dx[i] = dy[i] * s * (1.0f + x[i] * (1.0f - s));
    }
  });
}

}  // namespace tessera::cpu
