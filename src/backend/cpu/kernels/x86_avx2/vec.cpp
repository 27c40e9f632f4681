// AVX2 vector kernels (AVX2 + FMA + F16C). Compiled with per-file target flags: reached
// only through dispatch.cpp after a cpuid check. Everything here has internal linkage
// and uses no inline library functions, so no AVX2 code can leak into a shared
// (COMDAT) symbol that the rest of the program would call.
#include "backend/cpu/kernels/x86_avx2/exp.h"
#include "backend/cpu/kernels/x86_common.h"
#include "backend/cpu/vec.h"

#include <immintrin.h>

#include <cstdint>

namespace tessera::cpu::avx2 {
namespace {

using x86::hsum;

constexpr int64_t kW = 8;  // floats per register

// Lanes [0, left) set, for maskload/maskstore (left in [0, 8]).
inline __m256i tail_mask(int64_t left) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(left)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Up to 8 halves, zero-padded (no 16-bit masked loads in AVX2).
inline __m128i load_f16_part(const uint16_t* p, int64_t left) {
  alignas(16) uint16_t buf[8] = {};
  for (int64_t j = 0; j < left; ++j) buf[j] = p[j];
  return _mm_load_si128(reinterpret_cast<const __m128i*>(buf));
}

struct LoadF32 {
  const float* p;
  __m256 full(int64_t i) const { return _mm256_loadu_ps(p + i); }
  __m256 part(int64_t i, int64_t left) const { return _mm256_maskload_ps(p + i, tail_mask(left)); }
};
struct LoadF16 {
  const uint16_t* p;
  __m256 full(int64_t i) const {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)));
  }
  __m256 part(int64_t i, int64_t left) const { return _mm256_cvtph_ps(load_f16_part(p + i, left)); }
};
// bfloat16 is the top half of a float: widened to 32 bits and shifted up (exact).
struct LoadBF16 {
  const uint16_t* p;
  static __m256 widen(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
  __m256 full(int64_t i) const { return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i))); }
  __m256 part(int64_t i, int64_t left) const { return widen(load_f16_part(p + i, left)); }
};

// The one summation order of every dot here: two accumulators over 16-element steps,
// then an 8-element step into acc0, a masked tail into acc1, and a fixed reduction.
template <int R, typename A>
inline void dot_rows(A a, const float* const* b, int64_t n, float* out) {
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 * kW <= n; i += 2 * kW) {
    for (int k = 0; k < 2; ++k) {
      const __m256 va = a.full(i + k * kW);
      for (int r = 0; r < R; ++r) {
        acc[r][k] = _mm256_fmadd_ps(va, _mm256_loadu_ps(b[r] + i + k * kW), acc[r][k]);
      }
    }
  }
  if (i + kW <= n) {
    const __m256 va = a.full(i);
    for (int r = 0; r < R; ++r)
      acc[r][0] = _mm256_fmadd_ps(va, _mm256_loadu_ps(b[r] + i), acc[r][0]);
    i += kW;
  }
  if (i < n) {
    const __m256 va = a.part(i, n - i);
    const __m256i m = tail_mask(n - i);
    for (int r = 0; r < R; ++r)
      acc[r][1] = _mm256_fmadd_ps(va, _mm256_maskload_ps(b[r] + i, m), acc[r][1]);
  }
  for (int r = 0; r < R; ++r) out[r] = hsum(_mm256_add_ps(acc[r][0], acc[r][1]));
}

float dot_f32(const float* a, const float* b, int64_t n) {
  float out;
  dot_rows<1>(LoadF32{a}, &b, n, &out);
  return out;
}

void dot_f32_x4(const float* a, const float* const* b, int64_t n, float* out) {
  dot_rows<4>(LoadF32{a}, b, n, out);
}

float dot_f16_f32(const uint16_t* a, const float* b, int64_t n) {
  float out;
  dot_rows<1>(LoadF16{a}, &b, n, &out);
  return out;
}

float dot_bf16_f32(const uint16_t* a, const float* b, int64_t n) {
  float out;
  dot_rows<1>(LoadBF16{a}, &b, n, &out);
  return out;
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  const LoadF16 a{x};
  int64_t i = 0;
  for (; i + kW <= n; i += kW) _mm256_storeu_ps(y + i, a.full(i));
  if (i < n) _mm256_maskstore_ps(y + i, tail_mask(n - i), a.part(i, n - i));
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  if (i < n) {
    alignas(16) uint16_t buf[8];
    const __m256 v = _mm256_maskload_ps(x + i, tail_mask(n - i));
    _mm_store_si128(reinterpret_cast<__m128i*>(buf), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    for (int64_t j = 0; j < n - i; ++j) y[i + j] = buf[j];
  }
}

inline __m256 from_bf16(__m128i h) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

void bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    _mm256_storeu_ps(y + i, from_bf16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  }
  if (i < n) _mm256_maskstore_ps(y + i, tail_mask(n - i), from_bf16(load_f16_part(x + i, n - i)));
}

// Round to nearest even on the bit pattern (as core/fp16.h); NaNs become quiet NaNs.
inline __m128i to_bf16(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i w = _mm256_blendv_epi8(rounded, quiet, nan);  // 32-bit values < 65536
  const __m256i packed = _mm256_packus_epi32(w, w);           // per 128-bit lane
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}

void f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), to_bf16(_mm256_loadu_ps(x + i)));
  }
  if (i < n) {
    alignas(16) uint16_t buf[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(buf),
                    to_bf16(_mm256_maskload_ps(x + i, tail_mask(n - i))));
    for (int64_t j = 0; j < n - i; ++j) y[i + j] = buf[j];
  }
}

// Sum of f(x) over a row with two accumulators; the masked tail feeds zeros to f
// (f(0) must be 0).
template <typename F>
inline float reduce_sum(const float* x, int64_t n, F f) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 * kW <= n; i += 2 * kW) {
    acc0 = f(_mm256_loadu_ps(x + i), acc0);
    acc1 = f(_mm256_loadu_ps(x + i + kW), acc1);
  }
  if (i + kW <= n) {
    acc0 = f(_mm256_loadu_ps(x + i), acc0);
    i += kW;
  }
  if (i < n) acc1 = f(_mm256_maskload_ps(x + i, tail_mask(n - i)), acc1);
  return hsum(_mm256_add_ps(acc0, acc1));
}

float sum_f32(const float* x, int64_t n) {
  return reduce_sum(x, n, [](__m256 v, __m256 acc) { return _mm256_add_ps(acc, v); });
}

float sumsq_f32(const float* x, int64_t n) {
  return reduce_sum(x, n, [](__m256 v, __m256 acc) { return _mm256_fmadd_ps(v, v, acc); });
}

float max_f32(const float* x, int64_t n) {
  const __m256 neg_inf = _mm256_set1_ps(-__builtin_inff());
  __m256 acc = neg_inf;
  int64_t i = 0;
  for (; i + kW <= n; i += kW) acc = _mm256_max_ps(_mm256_loadu_ps(x + i), acc);
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    const __m256 v =
        _mm256_blendv_ps(neg_inf, _mm256_maskload_ps(x + i, m), _mm256_castsi256_ps(m));
    acc = _mm256_max_ps(v, acc);
  }
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// y[i] = f(x[i]) (binary: f(a[i], b[i])) with a masked tail.
template <typename F>
inline void map1(float* y, const float* x, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, f(_mm256_maskload_ps(x + i, m)));
  }
}
template <typename F>
inline void map2(float* y, const float* a, const float* b, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW)
    _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, f(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m)));
  }
}

void add_f32(float* y, const float* a, const float* b, int64_t n) {
  map2(y, a, b, n, [](__m256 u, __m256 v) { return _mm256_add_ps(u, v); });
}
void mul_f32(float* y, const float* a, const float* b, int64_t n) {
  map2(y, a, b, n, [](__m256 u, __m256 v) { return _mm256_mul_ps(u, v); });
}
void scale_f32(float* y, const float* x, float s, int64_t n) {
  const __m256 vs = _mm256_set1_ps(s);
  map1(y, x, n, [vs](__m256 v) { return _mm256_mul_ps(v, vs); });
}
void add_scalar_f32(float* y, const float* x, float c, int64_t n) {
  const __m256 vc = _mm256_set1_ps(c);
  map1(y, x, n, [vc](__m256 v) { return _mm256_add_ps(v, vc); });
}

float exp_sum_f32(float* y, const float* x, float m, int64_t n) {
  const __m256 vm = _mm256_set1_ps(m);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    _mm256_storeu_ps(y + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  if (i < n) {
    const __m256i mk = tail_mask(n - i);
    const __m256 e = _mm256_and_ps(exp_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, mk), vm)),
                                   _mm256_castsi256_ps(mk));
    _mm256_maskstore_ps(y + i, mk, e);
    acc = _mm256_add_ps(acc, e);
  }
  return hsum(acc);
}

void silu_f32(float* y, const float* x, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  map1(y, x, n, [one](__m256 v) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), v));
    return _mm256_div_ps(v, _mm256_add_ps(one, e));
  });
}

void gelu_f32(float* y, const float* x, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 c = _mm256_set1_ps(-2.0f * 0.7978845608028654f);
  const __m256 k = _mm256_set1_ps(0.044715f);
  map1(y, x, n, [=](__m256 v) {
    const __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(k, v), v, one);   // 1 + k x^2
    const __m256 e = exp_ps(_mm256_mul_ps(_mm256_mul_ps(c, v), inner));  // exp(-2u)
    return _mm256_div_ps(v, _mm256_add_ps(one, e));
  });
}

}  // namespace

const VecKernels kKernels = {
    Isa::Avx2,   dot_f32,     dot_f32_x4,     dot_f16_f32, dot_bf16_f32, f16_to_f32, f32_to_f16,
    bf16_to_f32, f32_to_bf16, sum_f32,        sumsq_f32,   max_f32,    add_f32,
    mul_f32,     scale_f32,   add_scalar_f32, exp_sum_f32, silu_f32,   gelu_f32,
};

}  // namespace tessera::cpu::avx2
