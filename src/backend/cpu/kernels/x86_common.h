// Scalar-to-vector helpers the x86 kernel files (kernels/x86_avx2, kernels/x86_avx512)
// share, written with AVX2 / F16C intrinsics only, so the same source compiles in files of
// either level: horizontal sum and max of 8 floats, an int32 horizontal sum, single fp16
// conversions, unaligned loads, fp16 fields packed for one conversion, and the K-quant
// scale unpacking. Each helper does the same operations in the same order at both levels,
// so their results are bit-identical across levels. Like x86_tile_loops.h, everything has
// internal linkage (an unnamed namespace): each kernel file compiles its own copy with its
// own target flags, where an ordinary inline function would leave the linker one copy for
// both levels, possibly the AVX-512 one, which an AVX2-only CPU cannot run.
#pragma once

#if !defined(__AVX2__) || !defined(__F16C__)
#error "x86_common.h is for the x86 kernel files, compiled with -mavx2 -mf16c at least"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace tessera::cpu::x86 {
namespace {

inline float fp16(uint16_t h) { return _cvtsh_ss(h); }
// _cvtss_sh spelled out: clang's macro uses a compound literal, which -Wpedantic flags.
inline uint16_t to_fp16(float f) {
  return uint16_t(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}

inline __m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Sum of the 8 lanes in a fixed order: the halves, then pairs, then the last two.
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Four fp16 values as one 64-bit word, a in the low bits.
inline uint64_t halves(uint16_t a, uint16_t b, uint16_t c, uint16_t d) {
  return uint64_t(a) | uint64_t(b) << 16 | uint64_t(c) << 32 | uint64_t(d) << 48;
}

// The 8 6-bit scales (bytes 0..7) and 8 mins (bytes 8..15) of a Q4_K/Q5_K block.
inline __m128i k4_scales_mins(const uint8_t* packed) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  const uint32_t sc03 = u[0] & kLow6;
  const uint32_t sc47 = (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4);
  const uint32_t m03 = u[1] & kLow6;
  const uint32_t m47 = ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4);
  return _mm_set_epi32(int(m47), int(m03), int(sc47), int(sc03));
}

// The 16 signed 6-bit scales (sc - 32) of a Q3_K block, as bytes.
inline __m128i q3_scales(const uint8_t* packed) {
  constexpr uint32_t kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  const __m128i s = _mm_set_epi32(int(((u[1] >> 4) & kLow4) | (((u[2] >> 6) & kLow2) << 4)),
                                  int(((u[0] >> 4) & kLow4) | (((u[2] >> 4) & kLow2) << 4)),
                                  int((u[1] & kLow4) | (((u[2] >> 2) & kLow2) << 4)),
                                  int((u[0] & kLow4) | ((u[2] & kLow2) << 4)));
  return _mm_sub_epi8(s, _mm_set1_epi8(32));
}

}  // namespace
}  // namespace tessera::cpu::x86
