// IEEE half and bfloat16 conversions (round to nearest even), scalar and exact.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/hd.h"

namespace tessera {

TESSERA_HD float bits_to_f32(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
TESSERA_HD uint32_t f32_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

TESSERA_HD float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    // zero or subnormal: mant * 2^-24
    const float v = float(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_to_f32(sign | 0x7f800000u | (mant << 13));
  return bits_to_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

TESSERA_HD uint16_t f32_to_f16(float f) {
  const uint32_t x = f32_to_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return uint16_t(sign | 0x7e00);                // NaN
  if (abs >= 0x477ff000) return uint16_t(sign | 0x7c00);               // overflow -> inf
  if (abs < 0x38800000) {                                              // subnormal or zero
    const float a = bits_to_f32(abs);
    // round(a / 2^-24) with ties to even via the FPU's default rounding
    const float scaled = a * 16777216.0f;
    uint32_t m = uint32_t(scaled);
    const float rem = scaled - float(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1))) ++m;
    return uint16_t(sign | m);
  }
  const uint32_t rounded = abs + 0x0fff + ((abs >> 13) & 1);  // nearest even at bit 13
  return uint16_t(sign | ((rounded - 0x38000000) >> 13));
}

TESSERA_HD float bf16_to_f32(uint16_t h) { return bits_to_f32(uint32_t(h) << 16); }

TESSERA_HD uint16_t f32_to_bf16(float f) {
  const uint32_t x = f32_to_bits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40);  // quiet NaN
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

}  // namespace tessera
