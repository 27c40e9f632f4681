// AVX2 kernel for the repacked BF16_X16 weights (gemm_kernels.h, layout in repack.h):
// the contract's vdpbf16ps steps done with FMAs. A bfloat16 is the top half of a float,
// so a 32-bit word holding an element pair gives the odd element as a float by masking
// off its low half and the even one by shifting it up; the products of two bfloat16s are
// exact in float, so an fmadd per element, odd before even, rounds as vdpbf16ps does. Its
// denormal handling (inputs read as zero, results flushed) is MXCSR's DAZ and FTZ, set
// while the chains run (FlushDenormals) and restored before their final sum.
//
// One table entry serves both AVX2 tables (with and without AVX-VNNI: there are no
// integer sums here). The blocking is the F16 kernel's (kernels/x86_avx2/gemm_x16.cpp,
// "F16"): decode streams the group once with both 8-row halves in one pass; prompts
// convert the group's weights to floats one K-block at a time, in L1, and reuse them for
// every column of a column block, with the tiles prefetching the next K-block.
#include "backend/cpu/kernels/x86_intrin.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/kernels/x86_tile_loops.h"
#include "backend/cpu/repack.h"

namespace tessera::cpu::avx2 {
namespace {

using x86::for_each_tile;
using x86::prefetch_stream;

constexpr int kHalfRows = 8;
constexpr int kBlock = 256;       // elements per K-block (a multiple of 4: chains keep their pair parity)
constexpr int kCols = 3;          // columns per prompt tile: 12 accumulators
constexpr int kColBlock = 120;    // columns per column block (their chains: 15 KiB)
constexpr int kDecodeCols = 2;    // up to this many columns, the streaming decode tile
constexpr int64_t kLines = kBlock * kGroupRows * 2 / 64;  // cache lines of one K-block

// MXCSR with flush-to-zero (bit 15) and denormals-are-zero (bit 6) for one scope.
class FlushDenormals {
 public:
  FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
  ~FlushDenormals() { _mm_setcsr(saved_); }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  unsigned saved_;
};

inline __m256i high_halves() { return _mm256_set1_epi32(int32_t(0xFFFF0000u)); }
inline __m256 even_of(__m256i pairs) { return _mm256_castsi256_ps(_mm256_slli_epi32(pairs, 16)); }
inline __m256 odd_of(__m256i pairs, __m256i hi) { return _mm256_castsi256_ps(_mm256_and_si256(pairs, hi)); }

// Element pair p of an activation row, in every lane.
inline __m256i pair_of(const uint16_t* x, int64_t p) {
  int32_t word;
  std::memcpy(&word, x + 2 * p, 4);
  return _mm256_set1_epi32(word);
}

// Pair p of rows [8h, 8h + 8) of the group.
inline __m256i weight_pairs(const uint16_t* w, int64_t p, int h) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + (p * kGroupRows + h * kHalfRows) * 2));
}

// The chains of one output column across K-blocks: [chain][row].
struct Chains {
  alignas(32) float v[2][kGroupRows];
};

// Pair p of every column into chain J (two fmadds per half: odd element, then even).
template <int N, int J>
[[gnu::always_inline]] inline void decode_step(const uint16_t* w, int64_t p, const uint16_t* x, size_t x_stride,
                                               __m256i hi, __m256 (&acc)[2][N][2]) {
  for (int h = 0; h < 2; ++h) {
    const __m256i wp = weight_pairs(w, p, h);
    const __m256 we = even_of(wp), wo = odd_of(wp, hi);
    for (int c = 0; c < N; ++c) {
      const __m256i xp = pair_of(x + size_t(c) * x_stride, p);
      acc[h][c][J] = _mm256_fmadd_ps(wo, odd_of(xp, hi), acc[h][c][J]);
      acc[h][c][J] = _mm256_fmadd_ps(we, even_of(xp), acc[h][c][J]);
    }
  }
}

// The chains of decode, stored into ch. Not inlined into decode_tile: there the MXCSR
// writes around it made GCC keep the accumulators in memory.
template <int N>
[[gnu::noinline]] void decode_chains(const uint16_t* w, int64_t k, const uint16_t* x, size_t x_stride, Chains* ch) {
  __m256 acc[2][N][2];  // [half][column][chain]
  for (auto& h : acc) {
    for (auto& c : h) c[0] = c[1] = _mm256_setzero_ps();
  }
  const __m256i hi = high_halves();
  const int64_t np = k / 2;
  int64_t p = 0;
  for (; p + 2 <= np; p += 2) {
    prefetch_stream(reinterpret_cast<const uint8_t*>(w), size_t(p) * 64, 128);
    decode_step<N, 0>(w, p, x, x_stride, hi, acc);
    decode_step<N, 1>(w, p + 1, x, x_stride, hi, acc);
  }
  if (p < np) decode_step<N, 0>(w, p, x, x_stride, hi, acc);
  for (int h = 0; h < 2; ++h) {
    for (int c = 0; c < N; ++c) {
      for (int j = 0; j < 2; ++j) _mm256_store_ps(ch[c].v[j] + h * kHalfRows, acc[h][c][j]);
    }
  }
}

// Sums a column's two chains into its 16 outputs.
inline void store_sums(const Chains& ch, float* out) {
  for (int h = 0; h < 2; ++h) {
    _mm256_storeu_ps(out + h * kHalfRows,
                     _mm256_add_ps(_mm256_load_ps(ch.v[0] + h * kHalfRows), _mm256_load_ps(ch.v[1] + h * kHalfRows)));
  }
}

template <int N>
void decode_tile(const uint16_t* w, int64_t k, const uint16_t* x, size_t x_stride, float* dst, size_t dst_stride) {
  Chains ch[N];
  {
    const FlushDenormals ftz;
    decode_chains<N>(w, k, x, x_stride, ch);
  }
  for (int c = 0; c < N; ++c) store_sums(ch[c], dst + size_t(c) * dst_stride);
}

// Pairs [0, n / 2) of a K-block (wf: [element][16 rows] floats) against N columns,
// continuing the chains in ch; prefetches pf_lines lines from pf (one per pair of pairs).
template <int N>
void prompt_tile(const float* wf, int64_t n, const uint16_t* x, size_t x_stride, Chains* ch, const char* pf,
                 int64_t pf_lines) {
  __m256 acc[N][2][2];  // [column][half][chain]
  for (int c = 0; c < N; ++c) {
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < 2; ++j) acc[c][h][j] = _mm256_load_ps(ch[c].v[j] + h * kHalfRows);
    }
  }
  const __m256i hi = high_halves();
  auto step = [&](int64_t p, int j) {
    const float* we = wf + 2 * p * kGroupRows;
    const float* wo = we + kGroupRows;
    for (int c = 0; c < N; ++c) {
      const __m256i xp = pair_of(x + size_t(c) * x_stride, p);
      const __m256 xo = odd_of(xp, hi), xe = even_of(xp);
      for (int h = 0; h < 2; ++h) {
        acc[c][h][j] = _mm256_fmadd_ps(_mm256_load_ps(wo + h * kHalfRows), xo, acc[c][h][j]);
        acc[c][h][j] = _mm256_fmadd_ps(_mm256_load_ps(we + h * kHalfRows), xe, acc[c][h][j]);
      }
    }
  };
  const int64_t np = n / 2;
  int64_t p = 0;
  for (; p + 2 <= np; p += 2) {
    if (p / 2 < pf_lines) _mm_prefetch(pf + p / 2 * 64, _MM_HINT_T1);
    step(p, 0);
    step(p + 1, 1);
  }
  if (p < np) step(p, 0);
  for (int c = 0; c < N; ++c) {
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < 2; ++j) _mm256_store_ps(ch[c].v[j] + h * kHalfRows, acc[c][h][j]);
    }
  }
}

// Three or more columns: column blocks of kColBlock, K-blocks of kBlock.
void prompt_gemm(const uint16_t* w, int64_t k, const uint16_t* x, size_t x_stride, int64_t n_cols, float* dst,
                 size_t dst_stride) {
  alignas(32) float wf[kBlock * kGroupRows];
  Chains chains[kColBlock];
  const __m256i hi = high_halves();
  for (int64_t c0 = 0; c0 < n_cols; c0 += kColBlock) {
    const int64_t nc = std::min<int64_t>(kColBlock, n_cols - c0);
    for (int64_t c = 0; c < nc; ++c) chains[c] = Chains{};
    {
      const FlushDenormals ftz;
      for (int64_t e0 = 0; e0 < k; e0 += kBlock) {
        const int64_t n = std::min<int64_t>(kBlock, k - e0);
        for (int64_t p = 0; p < n / 2; ++p) {
          for (int h = 0; h < 2; ++h) {
            const __m256i wp = weight_pairs(w, e0 / 2 + p, h);
            _mm256_store_ps(wf + 2 * p * kGroupRows + h * kHalfRows, even_of(wp));
            _mm256_store_ps(wf + (2 * p + 1) * kGroupRows + h * kHalfRows, odd_of(wp, hi));
          }
        }
        const uint16_t* xb = x + size_t(c0) * x_stride + size_t(e0);
        const char* next = reinterpret_cast<const char*>(w + (e0 + kBlock) * kGroupRows);
        const int64_t per_tile = (kLines * kCols + nc - 1) / nc;
        for_each_tile<kCols>(nc, [&](auto cols, int64_t c) {
          const int64_t l0 = std::min(kLines, c / kCols * per_tile);
          prompt_tile<decltype(cols)::value>(wf, n, xb + size_t(c) * x_stride, x_stride, chains + c, next + l0 * 64,
                                             std::min(per_tile, kLines - l0));
        });
      }
    }
    for (int64_t c = 0; c < nc; ++c) store_sums(chains[c], dst + size_t(c0 + c) * dst_stride);
  }
}

}  // namespace

void gemm_bf16_x16(const void* w, int64_t n_groups, int64_t k, const uint16_t* x, size_t x_stride, int64_t n_cols,
                   float* dst, size_t dst_stride) {
  for (int64_t g = 0; g < n_groups; ++g) {
    const uint16_t* h = static_cast<const uint16_t*>(w) + g * kGroupRows * k;
    float* d = dst + g * kGroupRows;
    if (n_cols > kDecodeCols) {
      prompt_gemm(h, k, x, x_stride, n_cols, d, dst_stride);
    } else if (n_cols == 2) {
      decode_tile<2>(h, k, x, x_stride, d, dst_stride);
    } else if (n_cols == 1) {
      decode_tile<1>(h, k, x, x_stride, d, dst_stride);
    }
  }
}

}  // namespace tessera::cpu::avx2
