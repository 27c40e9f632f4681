// The fused attention op against a double-precision softmax(scale q k^T + mask) v:
// grouped-query heads, F16 and F32 caches, head sizes that are and are not multiples of
// the vector width, decode (one token) and prompt batches, causal and ragged masks, tiles
// of 16 rows and of fewer than 4 rows (which take another path), F16 caches read directly
// by decode tiles,
// a token that sees no cell (zeros), permuted queries / padded cache rows, and ALiBi
// (the mask holds minus the distance, scaled per head by its slope; head counts that are
// and are not powers of two), Gemma 2's soft-capped scores, and values of another head
// size than the keys (DeepSeek's MLA: larger, smaller, odd, on every path above).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/attention_reference.h"
#include "ops/op_test_util.h"

namespace tessera::test {
namespace {

struct AttnCase {
  int64_t hd, n_tokens, n_head, n_head_kv, n_kv;
  DType kv_type;
  bool mask = true;
  Layout q_layout = Layout::Permuted;
  Layout kv_layout = Layout::Contiguous;
  float max_bias = 0.0f;  // ALiBi when > 0
  float softcap = 0.0f;   // Gemma 2's score cap when > 0
  int64_t vd = 0;         // the values' head size; 0: hd
  int64_t v_dim() const { return vd > 0 ? vd : hd; }
};

std::ostream& operator<<(std::ostream& os, const AttnCase& c) {
  return os << "hd " << c.hd << " tokens " << c.n_tokens << " heads " << c.n_head << "/"
            << c.n_head_kv << " n_kv " << c.n_kv << " " << dtype_name(c.kv_type)
            << (c.mask ? "" : " no mask") << " q " << layout_name(c.q_layout) << " kv "
            << layout_name(c.kv_layout) << (c.max_bias > 0 ? " alibi" : "") << " softcap " << c.softcap
            << " vd " << c.v_dim();
}

constexpr DType kF16 = DType::F16;
constexpr DType kF32 = DType::F32;

const AttnCase kCases[] = {
    {64, 1, 8, 2, 37, kF16},                 // decode, GQA 4
    {64, 7, 4, 4, 32, kF32},                 // no GQA
    {64, 33, 8, 1, 64, kF16},                // multi-query, two row tiles per token pair
    {8, 5, 8, 8, 40, kF32},                  // tiny heads (stories260K)
    {80, 9, 6, 2, 23, kF16},                 // head size not a multiple of 16
    {128, 3, 2, 2, 200, kF16},               // long rows
    {16, 17, 3, 1, 50, kF32, false},         // no mask
    {32, 6, 4, 2, 45, kF16, true, Layout::Contiguous, Layout::Sliced},
    // 4 to 8 rows per tile (half a 512-bit vector of rows).
    {80, 2, 8, 2, 50, kF16},                 // 8 rows, head size 80
    {16, 5, 2, 2, 19, kF32, false},          // 5 rows, no mask
    // Fewer than 4 rows per KV head (decode without grouping): the row-at-a-time path.
    {64, 1, 4, 4, 45, kF16},
    {80, 1, 6, 3, 23, kF32},                 // 2 rows, head size 80
    {128, 3, 2, 2, 70, kF16},                // 3 rows, one of them masked entirely
    {8, 1, 8, 4, 17, kF32, false},           // tiny heads, no mask
    // F16 caches whose KV heads' rows fit one tile are read directly where the level can
    // (tile_f16): the cases above with 1-12 rows per head, and these.
    {64, 2, 16, 2, 100, kF16},               // 16 rows, two row chunks
    {8, 1, 8, 2, 33, kF16},                  // head size under one vector
    {96, 1, 8, 1, 161, kF16, false},         // 8 rows, 6 vectors of d, no mask
    {48, 1, 7, 1, 30, kF16, true, Layout::Permuted, Layout::Sliced},  // 7 rows, sliced cache
    // ALiBi: 8 heads (a power of two), 6 and 12 heads (the interleaved slopes of the rest),
    // prompt tiles, decode, F16 read directly, multi-query.
    {64, 5, 8, 2, 40, kF16, true, Layout::Permuted, Layout::Contiguous, 8.0f},
    {32, 7, 6, 6, 37, kF32, true, Layout::Permuted, Layout::Contiguous, 8.0f},
    {16, 17, 12, 3, 50, kF16, true, Layout::Contiguous, Layout::Contiguous, 8.0f},
    {64, 1, 8, 1, 33, kF16, true, Layout::Permuted, Layout::Contiguous, 8.0f},
    {32, 3, 4, 1, 29, kF32, true, Layout::Permuted, Layout::Sliced, 4.0f},
    // Soft-capped scores (Gemma 2): caps that bite on scores of about +-1, decode from an
    // F16 cache (which the capped path converts), prompt tiles, no mask, a sliced cache.
    {64, 1, 8, 2, 37, kF16, true, Layout::Permuted, Layout::Contiguous, 0.0f, 0.3f},
    {32, 6, 4, 2, 45, kF16, true, Layout::Contiguous, Layout::Sliced, 0.0f, 0.5f},
    {24, 17, 4, 4, 50, kF32, true, Layout::Permuted, Layout::Contiguous, 0.0f, 0.02f},
    {16, 5, 2, 2, 19, kF32, false, Layout::Permuted, Layout::Contiguous, 0.0f, 0.7f},
    {32, 7, 6, 6, 37, kF32, true, Layout::Permuted, Layout::Contiguous, 8.0f, 0.4f},
    // Values of another head size (DeepSeek-V2's MLA: keys 192, values 128): prompt tiles,
    // decode tiles (F16 read directly), the few-rows path, sizes off the vector width,
    // a sliced cache, ALiBi and soft caps.
    {32, 9, 4, 4, 40, kF16, true, Layout::Permuted, Layout::Contiguous, 0.0f, 0.0f, 16},
    {32, 13, 4, 4, 29, kF32, true, Layout::Contiguous, Layout::Contiguous, 0.0f, 0.0f, 16},
    {24, 5, 8, 2, 33, kF32, false, Layout::Permuted, Layout::Contiguous, 0.0f, 0.0f, 40},
    {20, 1, 8, 2, 37, kF16, true, Layout::Permuted, Layout::Contiguous, 0.0f, 0.0f, 12},
    {40, 1, 4, 4, 45, kF16, true, Layout::Permuted, Layout::Contiguous, 0.0f, 0.0f, 24},
    {12, 1, 3, 3, 23, kF32, true, Layout::Permuted, Layout::Contiguous, 0.0f, 0.0f, 36},
    {48, 2, 16, 2, 70, kF16, true, Layout::Permuted, Layout::Contiguous, 0.0f, 0.0f, 17},
    {18, 6, 4, 2, 45, kF16, true, Layout::Contiguous, Layout::Sliced, 0.0f, 0.0f, 10},
    {16, 17, 12, 3, 50, kF16, true, Layout::Contiguous, Layout::Contiguous, 8.0f, 0.0f, 24},
    {32, 6, 4, 2, 45, kF16, true, Layout::Contiguous, Layout::Sliced, 0.0f, 0.5f, 8},
};

// ALiBi's slope of head h, written out independently: the heads up to the largest power of
// two n get 2^(-8/n * (h+1) * max_bias/8); the others the odd slopes of 2n heads.
double slope(int64_t h, int64_t n_head, double max_bias) {
  int64_t n = 1;
  while (2 * n <= n_head) n *= 2;
  if (h < n) return std::pow(2.0, -max_bias * double(h + 1) / double(n));
  return std::pow(2.0, -max_bias * double(2 * (h - n) + 1) / double(2 * n));
}

const float kNegInf = -std::numeric_limits<float>::infinity();

// Cell c visible to token t: causal over positions (the first tokens see cells up to
// n_kv - n_tokens + t), with a few holes; the last token of multi-token cases sees none.
bool visible(const AttnCase& c, int64_t t, int64_t cell) {
  if (c.n_tokens > 2 && t == c.n_tokens - 1) return false;
  if ((cell * 7 + t * 3) % 11 == 0 && cell > 0) return false;
  return cell <= c.n_kv - c.n_tokens + t;
}

class AttentionTest : public ::testing::TestWithParam<AttnCase> {};

TEST_P(AttentionTest, MatchesReference) {
  const AttnCase& c = GetParam();
  OpTest t(53);
  Tensor* q = t.input(DType::F32, {c.hd, c.n_tokens, c.n_head, 1}, c.q_layout, -1, 1);
  Tensor* k = t.input(c.kv_type, {c.hd, c.n_kv, c.n_head_kv, 1}, c.kv_layout, -1, 1);
  Tensor* v = t.input(c.kv_type, {c.v_dim(), c.n_kv, c.n_head_kv, 1}, c.kv_layout, -1, 1);
  Tensor* mask = nullptr;
  if (c.mask) {
    std::vector<float> m;
    for (int64_t tok = 0; tok < c.n_tokens; ++tok) {
      const int64_t pos = c.n_kv - c.n_tokens + tok;  // the query's position (cells: their index)
      for (int64_t cell = 0; cell < c.n_kv; ++cell) {
        const float bias = c.max_bias > 0 ? -float(pos - cell) : 0.0f;
        m.push_back(visible(c, tok, cell) ? bias : kNegInf);
      }
    }
    mask = t.input_values(DType::F32, {c.n_kv, c.n_tokens, 1, 1}, m);
  }
  const float scale = 1.0f / std::sqrt(float(c.hd));
  Tensor* out = ops::attention(t.graph(), q, k, v, mask, scale, c.max_bias, c.softcap);

  Expected want;
  const int64_t group = c.n_head / c.n_head_kv;
  std::vector<double> s(static_cast<size_t>(c.n_kv));
  for (int64_t tok = 0; tok < c.n_tokens; ++tok) {
    for (int64_t h = 0; h < c.n_head; ++h) {
      const int64_t hk = h / group;
      for (int64_t cell = 0; cell < c.n_kv; ++cell) {
        double dot = 0;
        for (int64_t d = 0; d < c.hd; ++d) dot += t.at(q, d, tok, h) * t.at(k, d, cell, hk);
        const double bias = c.max_bias > 0 ? -slope(h, c.n_head, c.max_bias) * double(c.n_kv - c.n_tokens + tok - cell) : 0;
        const double z = c.softcap > 0 ? c.softcap * std::tanh(dot * scale / c.softcap) : dot * scale;
        s[size_t(cell)] = (mask && !visible(c, tok, cell)) ? -INFINITY : z + bias;
      }
      append_weighted_values(s, c.v_dim(), [&](int64_t d, int64_t cell) { return t.at(v, d, cell, hk); }, want);
    }
  }
  t.check(out, want, {2e-5, 1e-7});
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionTest, ::testing::ValuesIn(kCases));

}  // namespace
}  // namespace tessera::test
