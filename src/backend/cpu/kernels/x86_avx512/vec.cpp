// AVX-512 vector kernels (F, BW, DQ, VL + FMA, F16C). Compiled with per-file target
// flags: reached only through dispatch.cpp after a cpuid check. Everything here has
// internal linkage and uses no inline library functions, so no AVX-512 code can leak
// into a shared (COMDAT) symbol that the rest of the program would call.
#include "backend/cpu/kernels/x86_intrin.h"

#include <cstdint>

#include "backend/cpu/kernels/x86_avx512/exp.h"
#include "backend/cpu/vec.h"

namespace tessera::cpu::avx512 {
namespace {

constexpr int64_t kW = 16;  // floats per register

inline __mmask16 tail_mask(int64_t left) { return __mmask16((1u << left) - 1u); }

// Loads 16 operands of the `a` side as float: plain floats or IEEE halves.
struct LoadF32 {
  const float* p;
  __m512 full(int64_t i) const { return _mm512_loadu_ps(p + i); }
  __m512 part(int64_t i, __mmask16 m) const { return _mm512_maskz_loadu_ps(m, p + i); }
};
struct LoadF16 {
  const uint16_t* p;
  __m512 full(int64_t i) const {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
  }
  __m512 part(int64_t i, __mmask16 m) const {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p + i));
  }
};
// bfloat16 is the top half of a float: widened to 32 bits and shifted up (exact).
struct LoadBF16 {
  const uint16_t* p;
  static __m512 widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  __m512 full(int64_t i) const { return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i))); }
  __m512 part(int64_t i, __mmask16 m) const { return widen(_mm256_maskz_loadu_epi16(m, p + i)); }
};

// The one summation order of every dot here: four accumulators over 64-element steps,
// then 16-element steps into acc0, a masked tail into acc1, and a fixed reduction.
template <int R, typename A>
inline void dot_rows(A a, const float* const* b, int64_t n, float* out) {
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r) {
    for (int k = 0; k < 4; ++k) acc[r][k] = _mm512_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 4 * kW <= n; i += 4 * kW) {
    for (int k = 0; k < 4; ++k) {
      const __m512 va = a.full(i + k * kW);
      for (int r = 0; r < R; ++r) {
        acc[r][k] = _mm512_fmadd_ps(va, _mm512_loadu_ps(b[r] + i + k * kW), acc[r][k]);
      }
    }
  }
  for (; i + kW <= n; i += kW) {
    const __m512 va = a.full(i);
    for (int r = 0; r < R; ++r) {
      acc[r][0] = _mm512_fmadd_ps(va, _mm512_loadu_ps(b[r] + i), acc[r][0]);
    }
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 va = a.part(i, m);
    for (int r = 0; r < R; ++r) {
      acc[r][1] = _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, b[r] + i), acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m512 s =
        _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), _mm512_add_ps(acc[r][2], acc[r][3]));
    out[r] = _mm512_reduce_add_ps(s);
  }
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
  for (; i + kW <= n; i += kW) _mm512_storeu_ps(y + i, a.full(i));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, a.part(i, m));
  }
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(x + i), kRound);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), h);
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), kRound));
  }
}

void bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const __m512i w =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    _mm512_storeu_ps(y + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, x + i));
    _mm512_mask_storeu_ps(y + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
}

// Round to nearest even on the bit pattern (as core/fp16.h); NaNs become quiet NaNs.
// (VCVTNEPS2BF16 would flush denormals, so it is not used.)
inline __m256i to_bf16(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

void f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), to_bf16(_mm512_loadu_ps(x + i)));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(y + i, m, to_bf16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

// Sum of f(x) over a row with four accumulators; the masked tail feeds zeros to f
// (f(0) must be 0).
template <typename F>
inline float reduce_sum(const float* x, int64_t n, F f) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
  int64_t i = 0;
  for (; i + 4 * kW <= n; i += 4 * kW) {
    for (int k = 0; k < 4; ++k) acc[k] = f(_mm512_loadu_ps(x + i + k * kW), acc[k]);
  }
  for (; i + kW <= n; i += kW) acc[0] = f(_mm512_loadu_ps(x + i), acc[0]);
  if (i < n) acc[1] = f(_mm512_maskz_loadu_ps(tail_mask(n - i), x + i), acc[1]);
  return _mm512_reduce_add_ps(
      _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

float sum_f32(const float* x, int64_t n) {
  return reduce_sum(x, n, [](__m512 v, __m512 acc) { return _mm512_add_ps(acc, v); });
}

float sumsq_f32(const float* x, int64_t n) {
  return reduce_sum(x, n, [](__m512 v, __m512 acc) { return _mm512_fmadd_ps(v, v, acc); });
}

float max_f32(const float* x, int64_t n) {
  const float kNegInf = -__builtin_inff();
  __m512 acc = _mm512_set1_ps(kNegInf);
  int64_t i = 0;
  for (; i + kW <= n; i += kW) acc = _mm512_max_ps(_mm512_loadu_ps(x + i), acc);
  if (i < n) {
    const __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(kNegInf), tail_mask(n - i), x + i);
    acc = _mm512_max_ps(v, acc);
  }
  return _mm512_reduce_max_ps(acc);
}

// y[i] = f(x[i]) (binary: f(a[i], b[i])) with a masked tail.
template <typename F>
inline void map1(float* y, const float* x, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW) _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, f(_mm512_maskz_loadu_ps(m, x + i)));
  }
}
template <typename F>
inline void map2(float* y, const float* a, const float* b, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW)
    _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m,
                          f(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

void add_f32(float* y, const float* a, const float* b, int64_t n) {
  map2(y, a, b, n, [](__m512 u, __m512 v) { return _mm512_add_ps(u, v); });
}
void mul_f32(float* y, const float* a, const float* b, int64_t n) {
  map2(y, a, b, n, [](__m512 u, __m512 v) { return _mm512_mul_ps(u, v); });
}
void scale_f32(float* y, const float* x, float s, int64_t n) {
  const __m512 vs = _mm512_set1_ps(s);
  map1(y, x, n, [vs](__m512 v) { return _mm512_mul_ps(v, vs); });
}
void add_scalar_f32(float* y, const float* x, float c, int64_t n) {
  const __m512 vc = _mm512_set1_ps(c);
  map1(y, x, n, [vc](__m512 v) { return _mm512_add_ps(v, vc); });
}

float exp_sum_f32(float* y, const float* x, float m, int64_t n) {
  const __m512 vm = _mm512_set1_ps(m);
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    _mm512_storeu_ps(y + i, e);
    acc = _mm512_add_ps(acc, e);
  }
  if (i < n) {
    const __mmask16 mk = tail_mask(n - i);
    const __m512 e =
        _mm512_maskz_mov_ps(mk, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, x + i), vm)));
    _mm512_mask_storeu_ps(y + i, mk, e);
    acc = _mm512_add_ps(acc, e);
  }
  return _mm512_reduce_add_ps(acc);
}

void silu_f32(float* y, const float* x, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  map1(y, x, n, [one](__m512 v) {
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), v));
    return _mm512_div_ps(v, _mm512_add_ps(one, e));
  });
}

void gelu_f32(float* y, const float* x, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 c = _mm512_set1_ps(-2.0f * 0.7978845608028654f);
  const __m512 k = _mm512_set1_ps(0.044715f);
  map1(y, x, n, [=](__m512 v) {
    const __m512 inner = _mm512_fmadd_ps(_mm512_mul_ps(k, v), v, one);   // 1 + k x^2
    const __m512 e = exp_ps(_mm512_mul_ps(_mm512_mul_ps(c, v), inner));  // exp(-2u)
    return _mm512_div_ps(v, _mm512_add_ps(one, e));
  });
}

}  // namespace

const VecKernels kKernels = {
    Isa::Avx512, dot_f32,     dot_f32_x4,     dot_f16_f32, dot_bf16_f32, f16_to_f32, f32_to_f16,
    bf16_to_f32, f32_to_bf16, sum_f32,        sumsq_f32,   max_f32,    add_f32,
    mul_f32,     scale_f32,   add_scalar_f32, exp_sum_f32, silu_f32,   gelu_f32,
};

}  // namespace tessera::cpu::avx512
