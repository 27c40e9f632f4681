#include "backend/cpu/ops/common.h"

#include <cstring>

#include "backend/cpu/quant_kernels.h"
#include "backend/cpu/vec.h"
#include "core/check.h"
#include "core/fp16.h"
#include "quant/convert.h"

namespace tessera::cpu {
namespace {

constexpr size_t kAlign = 64;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

bool dense_rows(const Tensor* t) { return t->nb[0] == dtype_traits(t->type).type_size; }

}  // namespace

bool is_plain_float(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16;
}

float load_float(DType type, const char* p) {
  uint16_t h;
  switch (type) {
    case DType::F32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::F16:
      std::memcpy(&h, p, 2);
      return f16_to_f32(h);
    case DType::BF16:
      std::memcpy(&h, p, 2);
      return bf16_to_f32(h);
    default:
      TESSERA_CHECK_MSG(false, "load_float: not a plain float type");
  }
}

void store_float(DType type, char* p, float v) {
  uint16_t h;
  switch (type) {
    case DType::F32:
      std::memcpy(p, &v, 4);
      return;
    case DType::F16:
      h = f32_to_f16(v);
      std::memcpy(p, &h, 2);
      return;
    case DType::BF16:
      h = f32_to_bf16(v);
      std::memcpy(p, &h, 2);
      return;
    default:
      TESSERA_CHECK_MSG(false, "store_float: not a plain float type");
  }
}

bool rows_readable(const Tensor* t) {
  const DTypeTraits& tr = dtype_traits(t->type);
  return quant::to_float_fn(t->type) != nullptr && (tr.block_size == 1 || dense_rows(t));
}

bool rows_writable(const Tensor* t) {
  const DTypeTraits& tr = dtype_traits(t->type);
  return quant::from_float_fn(t->type) != nullptr && (tr.block_size == 1 || dense_rows(t));
}

// F32/F16/BF16 rows go through the vector kernels when dense and element by element
// when strided; other types use their traits' converter (per element when strided).
const float* read_row(const Tensor* t, int64_t i1, int64_t i2, int64_t i3, float* buf) {
  const char* row = elem_ptr(t, 0, i1, i2, i3);
  const int64_t n = t->ne[0];
  const size_t nb0 = t->nb[0];
  if (dense_rows(t)) {
    switch (t->type) {
      case DType::F32:
        return reinterpret_cast<const float*>(row);
      case DType::F16:
        vec_kernels().f16_to_f32(reinterpret_cast<const uint16_t*>(row), buf, n);
        return buf;
      case DType::BF16:
        vec_kernels().bf16_to_f32(reinterpret_cast<const uint16_t*>(row), buf, n);
        return buf;
      default:
        if (const ToFloatRowFn f = quant_to_float(quant_kernels(), t->type)) {
          f(row, buf, n);  // the vector level's (the KV cache's formats)
        } else {
          quant::to_float_fn(t->type)(row, buf, n);
        }
        return buf;
    }
  }
  if (is_plain_float(t->type)) {
    for (int64_t i = 0; i < n; ++i) buf[i] = load_float(t->type, row + i * nb0);
    return buf;
  }
  const ToFloatFn to_float = quant::to_float_fn(t->type);
  for (int64_t i = 0; i < n; ++i) to_float(row + i * nb0, buf + i, 1);
  return buf;
}

void write_row(const Tensor* t, int64_t i1, int64_t i2, int64_t i3, const float* src) {
  char* row = elem_ptr(t, 0, i1, i2, i3);
  const int64_t n = t->ne[0];
  const size_t nb0 = t->nb[0];
  if (dense_rows(t)) {
    switch (t->type) {
      case DType::F32:
        if (reinterpret_cast<const char*>(src) != row) std::memcpy(row, src, size_t(n) * 4);
        return;
      case DType::F16:
        vec_kernels().f32_to_f16(src, reinterpret_cast<uint16_t*>(row), n);
        return;
      case DType::BF16:
        vec_kernels().f32_to_bf16(src, reinterpret_cast<uint16_t*>(row), n);
        return;
      default:
        quant::from_float_fn(t->type)(src, row, n);
        return;
    }
  }
  if (is_plain_float(t->type)) {
    for (int64_t i = 0; i < n; ++i) store_float(t->type, row + i * nb0, src[i]);
    return;
  }
  const FromFloatFn from_float = quant::from_float_fn(t->type);
  for (int64_t i = 0; i < n; ++i) from_float(src + i, row + i * nb0, 1);
}

size_t thread_scratch_size(int64_t n, int nth) {
  return kAlign + size_t(nth) * round_up(size_t(n) * sizeof(float));
}

char* align64(char* p) {
  const auto u = reinterpret_cast<uintptr_t>(p);
  return p + (kAlign - u % kAlign) % kAlign;
}

float* thread_scratch(const KernelParams& p, int64_t n) {
  const size_t slice = round_up(size_t(n) * sizeof(float));
  TESSERA_CHECK(p.work != nullptr && thread_scratch_size(n, p.nth) <= p.work_size);
  return reinterpret_cast<float*>(align64(p.work) + size_t(p.ith) * slice);
}

int32_t read_i32(const Tensor* t, int64_t i) {
  const ElemIndex e = elem_index(t, i);
  int32_t v;
  std::memcpy(&v, elem_ptr(t, e.i[0], e.i[1], e.i[2], e.i[3]), 4);
  return v;
}

}  // namespace tessera::cpu
