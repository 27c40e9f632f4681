#include "backend/cpu/ops/routing.h"

#include <cmath>
#include <variant>

#include "backend/cpu/ops/common.h"
#include "core/check.h"

namespace tessera::cpu {
namespace {

bool dense_f32_rows(const Tensor* t) { return t->type == DType::F32 && t->nb[0] == sizeof(float); }

}  // namespace

void sigmoid_compute(Tensor* node, const KernelParams& p) {
  for_each_row(node, p, [](float* y, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
  });
}

bool div_supports(const Tensor* node) {
  return dense_f32_rows(node) && node->src[0]->type == DType::F32 && node->src[1]->type == DType::F32;
}

size_t div_work_size(const Tensor* node, int nth) {
  const Tensor* b = node->src[1];
  return b->nb[0] == sizeof(float) ? 0 : thread_scratch_size(b->ne[0], nth);
}

// dst = a / b, b's row (i1 % ne11, ...) repeated along dim 0 when it is shorter.
void div_compute(Tensor* node, const KernelParams& p) {
  const Tensor* a = node->src[0];
  const Tensor* b = node->src[1];
  const int64_t ne0 = node->ne[0];
  const int64_t ne10 = b->ne[0];
  float* buf = b->nb[0] == sizeof(float) ? nullptr : thread_scratch(p, ne10);
  int64_t r0, r1;
  split_range(node->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(node, r);
    float* y = reinterpret_cast<float*>(elem_ptr(node, 0, ri.i1, ri.i2, ri.i3));
    const float* x = read_row(a, ri.i1, ri.i2, ri.i3, y);
    const float* w = read_row(b, ri.i1 % b->ne[1], ri.i2 % b->ne[2], ri.i3 % b->ne[3], buf);
    for (int64_t i = 0; i < ne0; ++i) y[i] = x[i] / w[i % ne10];
  }
}

bool sum_rows_supports(const Tensor* node) {
  return node->type == DType::F32 && rows_readable(node->src[0]) && node->src[0]->type == DType::F32;
}

// Each row summed in order in double, rounded once.
void sum_rows_compute(Tensor* node, const KernelParams& p) {
  const Tensor* a = node->src[0];
  int64_t r0, r1;
  split_range(node->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(node, r);
    double s = 0;
    for (int64_t i = 0; i < a->ne[0]; ++i) s += double(*reinterpret_cast<const float*>(elem_ptr(a, i, ri.i1, ri.i2, ri.i3)));
    *reinterpret_cast<float*>(elem_ptr(node, 0, ri.i1, ri.i2, ri.i3)) = float(s);
  }
}

bool top_k_supports(const Tensor* node) {
  return node->type == DType::I32 && node->nb[0] == sizeof(int32_t) && rows_readable(node->src[0]) &&
         node->src[0]->type == DType::F32;
}

size_t top_k_work_size(const Tensor* node, int nth) { return thread_scratch_size(node->src[0]->ne[0], nth); }

// Selection by repeated maximum: k passes over the row, each taking the largest value not
// yet taken, the lowest id among equals (k is the experts used per token: 1 to 8).
void top_k_compute(Tensor* node, const KernelParams& p) {
  const Tensor* a = node->src[0];
  const int64_t n = a->ne[0];
  const int64_t k = std::get<TopKParams>(node->params).k;
  float* buf = thread_scratch(p, n);
  int64_t r0, r1;
  split_range(node->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(node, r);
    const float* x = read_row(a, ri.i1, ri.i2, ri.i3, buf);
    auto* y = reinterpret_cast<int32_t*>(elem_ptr(node, 0, ri.i1, ri.i2, ri.i3));
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;
      for (int64_t i = 0; i < n; ++i) {
        bool taken = false;
        for (int64_t t = 0; t < j; ++t) taken = taken || y[t] == int32_t(i);
        // NaN is never larger, so a row of NaNs still yields distinct ids.
        if (!taken && (best < 0 || x[i] > x[best])) best = i;
      }
      y[j] = int32_t(best);
    }
  }
}

bool take_along_supports(const Tensor* node) {
  return node->type == DType::F32 && node->src[0]->type == DType::F32 && node->src[1]->type == DType::I32;
}

void take_along_compute(Tensor* node, const KernelParams& p) {
  const Tensor* a = node->src[0];
  const Tensor* ids = node->src[1];
  int64_t r0, r1;
  split_range(node->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(node, r);
    for (int64_t i = 0; i < node->ne[0]; ++i) {
      const int32_t id = *reinterpret_cast<const int32_t*>(elem_ptr(ids, i, ri.i1, ri.i2, ri.i3));
      TESSERA_CHECK_MSG(id >= 0 && id < a->ne[0], "take_along: id out of range");
      *reinterpret_cast<float*>(elem_ptr(node, i, ri.i1, ri.i2, ri.i3)) =
          *reinterpret_cast<const float*>(elem_ptr(a, id, ri.i1, ri.i2, ri.i3));
    }
  }
}

bool take_along_back_supports(const Tensor* node) {
  return node->type == DType::F32 && node->is_contiguous() && node->src[0]->type == DType::F32 &&
         node->src[1]->type == DType::I32;
}

// Each thread owns whole rows of the result: zeroed, then the row's values added at their
// ids in order (repeated ids accumulate).
void take_along_back_compute(Tensor* node, const KernelParams& p) {
  const Tensor* dy = node->src[0];
  const Tensor* ids = node->src[1];
  int64_t r0, r1;
  split_range(node->nrows(), p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const RowIndex ri = row_index(node, r);
    auto* y = reinterpret_cast<float*>(elem_ptr(node, 0, ri.i1, ri.i2, ri.i3));
    for (int64_t i = 0; i < node->ne[0]; ++i) y[i] = 0.0f;
    for (int64_t i = 0; i < ids->ne[0]; ++i) {
      const int32_t id = *reinterpret_cast<const int32_t*>(elem_ptr(ids, i, ri.i1, ri.i2, ri.i3));
      TESSERA_CHECK_MSG(id >= 0 && id < node->ne[0], "take_along_back: id out of range");
      y[id] += *reinterpret_cast<const float*>(elem_ptr(dy, i, ri.i1, ri.i2, ri.i3));
    }
  }
}

}  // namespace tessera::cpu
