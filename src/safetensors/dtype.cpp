// The safetensors element types: names, sizes, and conversion to float (the 8-bit floats
// as the OCP FP8 formats define them: E4M3 "FN" has no infinities and one NaN code per
// sign, E5M2 is IEEE-like, the top byte of an IEEE half).
#include <cmath>
#include <cstring>
#include <limits>

#include "core/fp16.h"
#include "tessera/safetensors.h"

namespace tessera::safetensors {
namespace {

float e4m3_to_f32(uint8_t b) {
  const float sign = (b & 0x80) ? -1.0f : 1.0f;
  const int e = (b >> 3) & 0xF;
  const int m = b & 0x7;
  if (e == 0xF && m == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(float(m) / 8.0f, -6);  // subnormal
  return sign * std::ldexp(1.0f + float(m) / 8.0f, e - 7);
}

float e5m2_to_f32(uint8_t b) { return f16_to_f32(uint16_t(uint16_t(b) << 8)); }

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // little-endian hosts, as the format
  return v;
}

}  // namespace

const char* dtype_name(Dtype t) {
  switch (t) {
    case Dtype::F64: return "F64";
    case Dtype::F32: return "F32";
    case Dtype::F16: return "F16";
    case Dtype::BF16: return "BF16";
    case Dtype::F8_E4M3: return "F8_E4M3";
    case Dtype::F8_E5M2: return "F8_E5M2";
    case Dtype::I64: return "I64";
    case Dtype::I32: return "I32";
    case Dtype::I16: return "I16";
    case Dtype::I8: return "I8";
    case Dtype::U8: return "U8";
    case Dtype::U16: return "U16";
    case Dtype::U32: return "U32";
    case Dtype::U64: return "U64";
    case Dtype::Bool: return "BOOL";
  }
  return "?";
}

size_t dtype_size(Dtype t) {
  switch (t) {
    case Dtype::F64: case Dtype::I64: case Dtype::U64: return 8;
    case Dtype::F32: case Dtype::I32: case Dtype::U32: return 4;
    case Dtype::F16: case Dtype::BF16: case Dtype::I16: case Dtype::U16: return 2;
    case Dtype::F8_E4M3: case Dtype::F8_E5M2: case Dtype::I8: case Dtype::U8: case Dtype::Bool: return 1;
  }
  return 1;
}

Status to_float(const TensorInfo& t, std::span<float> out) {
  const size_t n = size_t(t.n_elements());
  if (out.size() != n) {
    return Status::error("safetensors: to_float of '" + t.name + "': " + std::to_string(out.size()) +
                         " floats for " + std::to_string(n) + " elements");
  }
  const uint8_t* p = t.data;
  switch (t.dtype) {
    case Dtype::F32:
      if (n > 0) std::memcpy(out.data(), p, n * 4);
      return Status::ok();
    case Dtype::F64:
      for (size_t i = 0; i < n; ++i) out[i] = float(load<double>(p + 8 * i));
      return Status::ok();
    case Dtype::F16:
      for (size_t i = 0; i < n; ++i) out[i] = f16_to_f32(load<uint16_t>(p + 2 * i));
      return Status::ok();
    case Dtype::BF16:
      for (size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(load<uint16_t>(p + 2 * i));
      return Status::ok();
    case Dtype::F8_E4M3:
      for (size_t i = 0; i < n; ++i) out[i] = e4m3_to_f32(p[i]);
      return Status::ok();
    case Dtype::F8_E5M2:
      for (size_t i = 0; i < n; ++i) out[i] = e5m2_to_f32(p[i]);
      return Status::ok();
    default:
      return Status::error("safetensors: tensor '" + t.name + "' is " + dtype_name(t.dtype) +
                           ", not a floating-point type");
  }
}

}  // namespace tessera::safetensors
