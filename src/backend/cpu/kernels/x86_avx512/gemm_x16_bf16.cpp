// AVX-512 BF16 kernel for the repacked BF16_X16 weights (gemm_kernels.h, layout in
// repack.h). One 64-byte load holds an element pair of all 16 rows, and vdpbf16ps adds
// both products into the row's lane against one column's pair (a broadcast 32-bit
// word): the contract's step, to the bit, in one instruction. Pairs alternate between two
// accumulators per column (the contract's chains).
//
// A tile takes two groups (32 rows) and up to 6 columns: per two pairs, 4 weight loads and
// 12 broadcasts feed 24 vdpbf16ps with 24 accumulators. One group x 12 columns (the F16
// tile's shape) needs 2 loads and 24 broadcasts for as many, and ran 150-157 GMAC/s a core
// in cache against 215-222 for two groups x 6 (a loop outside the repo, Zen 5). An odd
// last group takes the one-group tile, 12 columns. Decode (up to kDecodeCols columns) is
// the one-group tile with one or two columns, each group streamed from memory with the
// prefetch sweep of the other kernels.
#include "backend/cpu/kernels/x86_intrin.h"

#include <cstring>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/kernels/x86_tile_loops.h"
#include "backend/cpu/repack.h"

namespace tessera::cpu::avx512 {
namespace {

using x86::prefetch_stream;

constexpr int kCols = 12;

inline __m512bh weight_pairs(const uint16_t* w, int64_t p) {
  return (__m512bh)_mm512_loadu_si512(w + p * kGroupRows * 2);
}

inline __m512bh pair_of(const uint16_t* x, int64_t p) {
  int32_t word;
  std::memcpy(&word, x + 2 * p, 4);
  return (__m512bh)_mm512_set1_epi32(word);
}

constexpr int kPairCols = 6;
// Up to this many columns (decode), one group at a time: two streams side by side decoded
// 2-16% slower than one (pp512 / tg64 pairs against the one-group tile, 3 rounds).
constexpr int64_t kDecodeCols = 2;

template <int N>
void tile_pair(const uint16_t* w, const uint16_t* v, int64_t k, const uint16_t* x, size_t x_stride, float* dst,
               size_t dst_stride) {
  __m512 acc[N][2][2];  // [column][group][chain]
  for (auto& c : acc) {
    for (auto& g : c) g[0] = g[1] = _mm512_setzero_ps();
  }
  const int64_t np = k / 2;
  int64_t p = 0;
  for (; p + 2 <= np; p += 2) {
    prefetch_stream(reinterpret_cast<const uint8_t*>(w), size_t(p) * 64, 128);
    prefetch_stream(reinterpret_cast<const uint8_t*>(v), size_t(p) * 64, 128);
    const __m512bh w0 = weight_pairs(w, p), w1 = weight_pairs(w, p + 1);
    const __m512bh v0 = weight_pairs(v, p), v1 = weight_pairs(v, p + 1);
    for (int c = 0; c < N; ++c) {
      const uint16_t* xc = x + size_t(c) * x_stride;
      const __m512bh x0 = pair_of(xc, p), x1 = pair_of(xc, p + 1);
      acc[c][0][0] = _mm512_dpbf16_ps(acc[c][0][0], w0, x0);
      acc[c][0][1] = _mm512_dpbf16_ps(acc[c][0][1], w1, x1);
      acc[c][1][0] = _mm512_dpbf16_ps(acc[c][1][0], v0, x0);
      acc[c][1][1] = _mm512_dpbf16_ps(acc[c][1][1], v1, x1);
    }
  }
  if (p < np) {
    const __m512bh w0 = weight_pairs(w, p), v0 = weight_pairs(v, p);
    for (int c = 0; c < N; ++c) {
      const __m512bh x0 = pair_of(x + size_t(c) * x_stride, p);
      acc[c][0][0] = _mm512_dpbf16_ps(acc[c][0][0], w0, x0);
      acc[c][1][0] = _mm512_dpbf16_ps(acc[c][1][0], v0, x0);
    }
  }
  for (int c = 0; c < N; ++c) {
    for (int g = 0; g < 2; ++g) {
      _mm512_storeu_ps(dst + size_t(c) * dst_stride + size_t(g * kGroupRows), _mm512_add_ps(acc[c][g][0], acc[c][g][1]));
    }
  }
}

template <int N>
void tile(const uint16_t* w, int64_t k, const uint16_t* x, size_t x_stride, float* dst, size_t dst_stride) {
  __m512 acc[N][2];
  for (int c = 0; c < N; ++c) acc[c][0] = acc[c][1] = _mm512_setzero_ps();
  const int64_t np = k / 2;
  int64_t p = 0;
  for (; p + 2 <= np; p += 2) {
    prefetch_stream(reinterpret_cast<const uint8_t*>(w), size_t(p) * 64, 128);
    const __m512bh w0 = weight_pairs(w, p);
    const __m512bh w1 = weight_pairs(w, p + 1);
    for (int c = 0; c < N; ++c) {
      const uint16_t* xc = x + size_t(c) * x_stride;
      acc[c][0] = _mm512_dpbf16_ps(acc[c][0], w0, pair_of(xc, p));
      acc[c][1] = _mm512_dpbf16_ps(acc[c][1], w1, pair_of(xc, p + 1));
    }
  }
  if (p < np) {
    const __m512bh w0 = weight_pairs(w, p);
    for (int c = 0; c < N; ++c) acc[c][0] = _mm512_dpbf16_ps(acc[c][0], w0, pair_of(x + size_t(c) * x_stride, p));
  }
  for (int c = 0; c < N; ++c) _mm512_storeu_ps(dst + size_t(c) * dst_stride, _mm512_add_ps(acc[c][0], acc[c][1]));
}

}  // namespace

void gemm_bf16_x16(const void* w, int64_t n_groups, int64_t k, const uint16_t* x, size_t x_stride, int64_t n_cols,
                   float* dst, size_t dst_stride) {
  x86::pairs_of_groups<kPairCols, kCols>(
      static_cast<const uint16_t*>(w), n_groups, kGroupRows * k, n_cols, n_cols > kDecodeCols,
      [&](auto n, const uint16_t* a, const uint16_t* b, int64_t c, int64_t g) {
        tile_pair<decltype(n)::value>(a, b, k, x + c * x_stride, x_stride, dst + c * dst_stride + g * kGroupRows,
                                      dst_stride);
      },
      [&](auto n, const uint16_t* a, int64_t c, int64_t g) {
        tile<decltype(n)::value>(a, k, x + c * x_stride, x_stride, dst + c * dst_stride + g * kGroupRows, dst_stride);
      });
}

}  // namespace tessera::cpu::avx512
