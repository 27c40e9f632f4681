// The attention op reading KV caches of every type a context can hold (ContextParams::
// type_k / type_v): BF16, the block-quantized types and mixed K/V types, against a
// double-precision softmax(scale q k^T + mask) v over the dequantized cache. The cache
// is seen as the runtime sees it (a window of cells of [n_embd_kv, n_ctx] rows, each
// head a whole number of blocks), with odd cell counts, decode and prompt batches
// (several tiles per head, so a thread's converted cells grow and are reused), grouped
// queries, ALiBi, and a window that starts past cell 0. The op reads exactly the values
// the reference dequantizes, so the tolerance is the F32 cache's.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/attention_reference.h"
#include "ops/op_test_util.h"

namespace tessera::test {
namespace {

struct CacheCase {
  DType type_k, type_v;
  int64_t hd, n_tokens, n_head, n_head_kv, n_kv;
  int64_t first_cell = 0;  // the window's first cell in the cache
  float max_bias = 0.0f;   // ALiBi when > 0
};

std::ostream& operator<<(std::ostream& os, const CacheCase& c) {
  return os << "k " << dtype_name(c.type_k) << " v " << dtype_name(c.type_v) << " hd " << c.hd << " tokens "
            << c.n_tokens << " heads " << c.n_head << "/" << c.n_head_kv << " n_kv " << c.n_kv << " from cell "
            << c.first_cell << (c.max_bias > 0 ? " alibi" : "");
}

constexpr DType kF32 = DType::F32, kF16 = DType::F16, kBF16 = DType::BF16, kQ8_0 = DType::Q8_0,
                kQ4_0 = DType::Q4_0, kQ4_1 = DType::Q4_1, kQ5_0 = DType::Q5_0, kQ5_1 = DType::Q5_1,
                kIQ4_NL = DType::IQ4_NL;

const CacheCase kCases[] = {
    // Each type for both K and V: decode (one tile per head) and a prompt (many).
    {kQ8_0, kQ8_0, 64, 1, 8, 2, 37},
    {kQ8_0, kQ8_0, 32, 33, 8, 2, 61, 3},
    {kQ4_0, kQ4_0, 64, 1, 4, 4, 45},
    {kQ4_0, kQ4_0, 32, 9, 6, 2, 23},
    {kQ4_1, kQ4_1, 96, 1, 8, 1, 161},
    {kQ4_1, kQ4_1, 32, 17, 4, 1, 50, 5},
    {kQ5_0, kQ5_0, 64, 2, 16, 2, 71},
    {kQ5_0, kQ5_0, 32, 7, 4, 4, 33},
    {kQ5_1, kQ5_1, 128, 1, 2, 2, 29},
    {kQ5_1, kQ5_1, 64, 12, 8, 2, 47, 1},
    {kIQ4_NL, kIQ4_NL, 64, 1, 8, 2, 37},
    {kIQ4_NL, kIQ4_NL, 32, 21, 4, 2, 55},
    {kBF16, kBF16, 64, 1, 8, 2, 37},
    {kBF16, kBF16, 40, 9, 6, 3, 31},  // BF16 has no blocks: any head size
    // Mixed types, K and V apart (F16 beside another type is converted per head too).
    {kQ8_0, kF16, 64, 1, 8, 2, 41},
    {kF16, kQ4_0, 32, 13, 4, 2, 39},
    {kF32, kQ8_0, 32, 5, 4, 4, 27, 2},
    {kQ4_1, kF32, 64, 1, 4, 1, 19},
    {kIQ4_NL, kQ5_1, 32, 3, 6, 6, 53},
    // ALiBi over a quantized cache.
    {kQ8_0, kQ4_0, 32, 5, 8, 2, 43, 0, 8.0f},
};

// Cell c visible to token t: causal, with holes; a prompt's last token sees nothing.
bool visible(const CacheCase& c, int64_t t, int64_t cell) {
  if (c.n_tokens > 2 && t == c.n_tokens - 1) return false;
  if ((cell * 5 + t * 3) % 13 == 0 && cell > 0) return false;
  return cell <= c.n_kv - c.n_tokens + t;
}

// ALiBi's slope of head h (heads up to the largest power of two n, then the odd slopes of 2n).
double slope(int64_t h, int64_t n_head, double max_bias) {
  int64_t n = 1;
  while (2 * n <= n_head) n *= 2;
  if (h < n) return std::pow(2.0, -max_bias * double(h + 1) / double(n));
  return std::pow(2.0, -max_bias * double(2 * (h - n) + 1) / double(2 * n));
}

// A window of n_kv cells from first_cell of a cache [d * n_head_kv, cells] of `type`,
// seen as [d, n_kv, n_head_kv] as the model's attention views it.
Tensor* cache_window(OpTest& t, DType type, int64_t d, int64_t n_head_kv, int64_t n_kv, int64_t first_cell) {
  Tensor* cache = t.input(type, {d * n_head_kv, first_cell + n_kv + 2, 1, 1}, -1, 1);
  const size_t row = cache->nb[1];
  return ops::view(t.graph(), cache, {d, n_kv, n_head_kv, 1},
                   {cache->nb[0], row, dtype_row_size(type, d), row * size_t(n_kv)}, size_t(first_cell) * row);
}

class AttentionCacheTypes : public ::testing::TestWithParam<CacheCase> {};

TEST_P(AttentionCacheTypes, MatchesReferenceOverTheDequantizedCache) {
  const CacheCase& c = GetParam();
  OpTest t(71);
  Tensor* q = t.input(DType::F32, {c.hd, c.n_tokens, c.n_head, 1}, Layout::Permuted, -1, 1);
  Tensor* k = cache_window(t, c.type_k, c.hd, c.n_head_kv, c.n_kv, c.first_cell);
  Tensor* v = cache_window(t, c.type_v, c.hd, c.n_head_kv, c.n_kv, c.first_cell);
  std::vector<float> m;
  for (int64_t tok = 0; tok < c.n_tokens; ++tok) {
    for (int64_t cell = 0; cell < c.n_kv; ++cell) {
      const float bias = c.max_bias > 0 ? -float(c.n_kv - c.n_tokens + tok - cell) : 0.0f;
      m.push_back(visible(c, tok, cell) ? bias : -INFINITY);
    }
  }
  Tensor* mask = t.input_values(DType::F32, {c.n_kv, c.n_tokens, 1, 1}, m);
  const float scale = 1.0f / std::sqrt(float(c.hd));
  Tensor* out = ops::attention(t.graph(), q, k, v, mask, scale, c.max_bias, 0.0f);

  // The cache as the reference reads it: every element dequantized once.
  auto values_of = [&](const Tensor* x) {
    std::vector<double> all;
    for (int64_t hk = 0; hk < c.n_head_kv; ++hk) {
      for (int64_t cell = 0; cell < c.n_kv; ++cell) {
        for (int64_t d = 0; d < c.hd; ++d) all.push_back(t.at(x, d, cell, hk));
      }
    }
    return all;
  };
  const std::vector<double> kd = values_of(k), vd = values_of(v);
  auto at = [&](const std::vector<double>& x, int64_t d, int64_t cell, int64_t hk) {
    return x[size_t((hk * c.n_kv + cell) * c.hd + d)];
  };
  Expected want;
  const int64_t group = c.n_head / c.n_head_kv;
  std::vector<double> s(static_cast<size_t>(c.n_kv));
  for (int64_t tok = 0; tok < c.n_tokens; ++tok) {
    for (int64_t h = 0; h < c.n_head; ++h) {
      const int64_t hk = h / group;
      for (int64_t cell = 0; cell < c.n_kv; ++cell) {
        double dot = 0;
        for (int64_t d = 0; d < c.hd; ++d) dot += t.at(q, d, tok, h) * at(kd, d, cell, hk);
        const double bias =
            c.max_bias > 0 ? -slope(h, c.n_head, c.max_bias) * double(c.n_kv - c.n_tokens + tok - cell) : 0.0;
        s[size_t(cell)] = visible(c, tok, cell) ? dot * scale + bias : -INFINITY;
      }
      append_weighted_values(s, c.hd, [&](int64_t d, int64_t cell) { return at(vd, d, cell, hk); }, want);
    }
  }
  t.check(out, want, {2e-5, 1e-7});
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionCacheTypes, ::testing::ValuesIn(kCases));

}  // namespace
}  // namespace tessera::test
