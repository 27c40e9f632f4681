#include "backend/cpu/ops/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/ops/common.h"
#include "backend/cpu/vec.h"
#include "core/check.h"

namespace tessera::cpu {
namespace {

constexpr size_t kAlign = 64;
size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Scratch of the forward: one double per row (its loss), then per thread a row of exps.
size_t losses_bytes(const Tensor* logits) {
  return round_up(size_t(logits->ne[1]) * sizeof(double));
}

const float* logits_row(const Tensor* logits, int64_t r) {
  return reinterpret_cast<const float*>(elem_ptr(logits, 0, r, 0, 0));
}

// Row r's target; -1 (or any negative) skips the row. One at or past the vocabulary is a
// bug of whoever built the targets, not bad input the loss could ignore.
int32_t target_of(const Tensor* targets, int64_t r, int64_t n_vocab) {
  const int32_t t = read_i32(targets, r);
  TESSERA_CHECK_MSG(t < n_vocab, "cross_entropy: a target is not below the vocabulary size");
  return t;
}

// logsumexp(x) - x[target]. The max is subtracted before exp, so that logits of any size
// are safe; exp and the sum of the exps are float (the vector kernels: a relative error of
// a few ulp in the sum, i.e. a few 1e-7 absolute in the loss), the log and the differences
// double. buf: n floats.
double row_loss(const VecKernels& vk, const float* x, int64_t n, int32_t target, float* buf) {
  const float max = vk.max_f32(x, n);
  const float sum = vk.exp_sum_f32(buf, x, max, n);
  return double(max) + std::log(double(sum)) - double(x[target]);
}

bool logits_ok(const Tensor* logits) {
  return logits->type == DType::F32 && logits->nb[0] == sizeof(float) &&
         logits->nb[1] % sizeof(float) == 0;
}

}  // namespace

bool cross_entropy_supports(const Tensor* node) {
  return node->type == DType::F32 && logits_ok(node->src[0]) && node->src[1]->type == DType::I32;
}

size_t cross_entropy_work_size(const Tensor* node, int nth) {
  const Tensor* logits = node->src[0];
  return kAlign + losses_bytes(logits) +
         size_t(nth) * round_up(size_t(logits->ne[0]) * sizeof(float));
}

// Every thread computes the losses of its share of rows into the scratch.
bool cross_entropy_prepare(Tensor* node, const KernelParams& p) {
  const Tensor* logits = node->src[0];
  const int64_t n_vocab = logits->ne[0];
  char* work = align64(p.work);
  auto* losses = reinterpret_cast<double*>(work);
  auto* buf = reinterpret_cast<float*>(work + losses_bytes(logits) +
                                       size_t(p.ith) * round_up(size_t(n_vocab) * sizeof(float)));
  const VecKernels& vk = vec_kernels();
  int64_t r0, r1;
  split_range(logits->ne[1], p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    const int32_t t = target_of(node->src[1], r, n_vocab);
    losses[r] = t < 0 ? 0.0 : row_loss(vk, logits_row(logits, r), n_vocab, t, buf);
  }
  return true;  // compute sums what every thread wrote
}

// Thread 0 sums the losses in row order, so the result does not depend on the threads.
void cross_entropy_compute(Tensor* node, const KernelParams& p) {
  if (p.ith != 0) return;
  const Tensor* logits = node->src[0];
  const auto* losses = reinterpret_cast<const double*>(align64(p.work));
  double sum = 0;
  int64_t count = 0;
  for (int64_t r = 0; r < logits->ne[1]; ++r) {
    if (read_i32(node->src[1], r) < 0) continue;
    sum += losses[r];
    ++count;
  }
  *static_cast<float*>(node->data) = count > 0 ? float(sum / double(count)) : 0.0f;
}

bool cross_entropy_back_supports(const Tensor* node) {
  const Tensor* dloss = node->src[2];
  return node->type == DType::F32 && node->is_contiguous() && logits_ok(node->src[0]) &&
         node->src[1]->type == DType::I32 && dloss->type == DType::F32;
}

// Rows split over threads; each thread counts the targets itself (a scan of n ints is
// cheaper than a barrier).
void cross_entropy_back_compute(Tensor* node, const KernelParams& p) {
  const Tensor* logits = node->src[0];
  const Tensor* targets = node->src[1];
  const int64_t n_vocab = logits->ne[0];
  int64_t count = 0;
  for (int64_t r = 0; r < logits->ne[1]; ++r) count += read_i32(targets, r) >= 0;
  float dloss;
  std::memcpy(&dloss, node->src[2]->data, sizeof(float));
  const float g = count > 0 ? dloss / float(count) : 0.0f;
  const VecKernels& vk = vec_kernels();
  int64_t r0, r1;
  split_range(logits->ne[1], p.ith, p.nth, &r0, &r1);
  for (int64_t r = r0; r < r1; ++r) {
    float* y = reinterpret_cast<float*>(elem_ptr(node, 0, r, 0, 0));
    const int32_t t = target_of(targets, r, n_vocab);
    if (t < 0) {
      std::fill(y, y + n_vocab, 0.0f);
      continue;
    }
    const float* x = logits_row(logits, r);
    const float max = vk.max_f32(x, n_vocab);
    const float sum = vk.exp_sum_f32(y, x, max, n_vocab);
    vk.scale_f32(y, y, g / sum, n_vocab);
    y[t] -= g;
  }
}

}  // namespace tessera::cpu
