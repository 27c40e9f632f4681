#include "quant/convert.h"

#include <cstring>

#include "core/fp16.h"
#include "quant/quant.h"

namespace tessera::quant {
namespace {

void f32_to_float(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }
void f32_from_float(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }

void f16_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
}
void f16_from_float(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
}
void bf16_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
}
void bf16_from_float(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
}
template <typename T>
void int_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const T*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = float(s[i]);
}

}  // namespace

ToFloatFn to_float_fn(DType type) {
  if (const Format* f = format(type)) return f->dequantize;
  switch (type) {
    case DType::F32: return f32_to_float;
    case DType::F16: return f16_to_float;
    case DType::BF16: return bf16_to_float;
    case DType::I8: return int_to_float<int8_t>;
    case DType::I16: return int_to_float<int16_t>;
    case DType::I32: return int_to_float<int32_t>;
    case DType::I64: return int_to_float<int64_t>;
    case DType::F64: return int_to_float<double>;
    default: return nullptr;
  }
}

FromFloatFn from_float_fn(DType type) {
  if (const Format* f = format(type)) return f->quantize;
  switch (type) {
    case DType::F32: return f32_from_float;
    case DType::F16: return f16_from_float;
    case DType::BF16: return bf16_from_float;
    default: return nullptr;
  }
}

}  // namespace tessera::quant
