// attention_back's dq, dk and dv against finite differences of a double-precision
// attention forward (softmax(scale q k^T + slope * mask) v), so that the test checks the
// gradient's mathematics rather than a transcription of the kernel's formulas: grouped-
// query heads (group 1, 2, 3, multi-query), head sizes that are and are not multiples of
// the vector width, decode and prompt batches, cell counts below, at and past the
// kernel's blocks of 16 cells (and blocks no token sees), causal masks with holes, tokens
// that see no cell (last and in the middle), no mask, ALiBi with a head count that is not
// a power of two, q as the permuted view the model passes, padded rows, and soft-capped
// scores (Gemma 2).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <vector>

#include "ops/grad_test_util.h"

namespace tessera::test {
namespace {

struct BackCase {
  int64_t hd, n_tokens, n_head, n_head_kv, n_kv;
  bool mask = true;       // causal with holes: see visible()
  int64_t blind = -1;     // a token that sees no cell at all (-1: none)
  int64_t unused = 0;     // trailing cells no token sees, as in a cache (and 2 more mask rows)
  float max_bias = 0.0f;  // ALiBi when > 0
  Layout q_layout = Layout::Permuted;
  Layout kv_layout = Layout::Contiguous;  // also d out's
  float softcap = 0.0f;  // Gemma 2's score cap when > 0
};

std::ostream& operator<<(std::ostream& os, const BackCase& c) {
  return os << "hd " << c.hd << " tokens " << c.n_tokens << " heads " << c.n_head << "/"
            << c.n_head_kv << " n_kv " << c.n_kv << (c.mask ? " causal" : " no mask") << " blind "
            << c.blind << " unused " << c.unused << (c.max_bias > 0 ? " alibi" : "") << " q "
            << layout_name(c.q_layout) << " kv " << layout_name(c.kv_layout) << " softcap " << c.softcap;
}

constexpr Layout kContiguous = Layout::Contiguous;
constexpr Layout kSliced = Layout::Sliced;

const BackCase kCases[] = {
    {8, 5, 4, 4, 7},                      // tiny heads, no GQA
    {33, 9, 6, 2, 40, true, 8},           // odd head size, GQA 3, three blocks of cells
    {64, 1, 6, 3, 40},                    // decode, GQA 2
    {64, 17, 2, 2, 17, true, 16},         // a training batch: n_kv == n_tokens
    {16, 17, 6, 6, 19, false},            // no mask
    {8, 5, 2, 1, 1},                      // one cell: only the last token sees it
    {32, 7, 6, 3, 20, true, 3, 0, 8.0f},  // ALiBi, 6 heads (interleaved slopes)
    {24, 6, 6, 2, 33, true, -1, 0, 8.0f, kContiguous, kSliced},
    {40, 4, 3, 1, 18, false, -1, 0, 0.0f, kSliced, kSliced},  // multi-query, padded rows
    {16, 6, 4, 2, 50, true, 2, 20},                           // blocks of cells no row sees
    // Soft-capped scores (Gemma 2), with and without a mask, ALiBi, GQA.
    {33, 9, 6, 2, 40, true, 8, 0, 0.0f, Layout::Permuted, kContiguous, 0.3f},
    {16, 17, 6, 6, 19, false, -1, 0, 0.0f, Layout::Permuted, kContiguous, 0.5f},
    {32, 7, 6, 3, 20, true, 3, 0, 8.0f, Layout::Permuted, kContiguous, 0.4f},
};

const double kNegInf = -std::numeric_limits<double>::infinity();

// Query t, at position n_kv - unused - n_tokens + t, sees the cells up to its position,
// but for a few holes.
bool visible(const BackCase& c, int64_t t, int64_t cell) {
  if (t == c.blind) return false;
  if ((cell * 7 + t * 3) % 11 == 0 && cell > 0) return false;
  return cell <= c.n_kv - c.unused - c.n_tokens + t;
}

int64_t mask_rows(const BackCase& c) { return c.n_tokens + (c.unused > 0 ? 2 : 0); }

// The mask [n_kv, mask_rows] row-major (empty without one): 0, or minus the distance for
// ALiBi, where visible; -inf elsewhere; rows past the tokens' are 0 (never read).
std::vector<float> mask_values(const BackCase& c) {
  std::vector<float> m;
  if (!c.mask) return m;
  for (int64_t t = 0; t < mask_rows(c); ++t) {
    const int64_t pos = c.n_kv - c.unused - c.n_tokens + t;
    for (int64_t cell = 0; cell < c.n_kv; ++cell) {
      const float bias = c.max_bias > 0 ? -float(pos - cell) : 0.0f;
      if (t >= c.n_tokens) {
        m.push_back(0.0f);
      } else {
        m.push_back(visible(c, t, cell) ? bias : float(kNegInf));
      }
    }
  }
  return m;
}

// ALiBi's slope of head h, written out independently of core/op.h.
double slope(const BackCase& c, int64_t h) {
  if (c.max_bias <= 0) return 1.0;
  int64_t n = 1;
  while (2 * n <= c.n_head) n *= 2;
  if (h < n) return std::pow(2.0, -double(c.max_bias) * double(h + 1) / double(n));
  return std::pow(2.0, -double(c.max_bias) * double(2 * (h - n) + 1) / double(2 * n));
}

// attention(q, k, v, mask) in double, q [hd, n_tokens, n_head], k and v [hd, n_kv,
// n_head_kv], all row-major; the result [hd, n_head, n_tokens] row-major.
std::vector<double> attention_ref(const BackCase& c, const std::vector<float>& mask,
                                  const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v) {
  const int64_t hd = c.hd, group = c.n_head / c.n_head_kv;
  const double scale = 1.0 / std::sqrt(double(hd));
  std::vector<double> out(size_t(hd * c.n_head * c.n_tokens), 0.0);
  std::vector<double> s(size_t(c.n_kv));
  for (int64_t h = 0; h < c.n_head; ++h) {
    const double* kh = &k[size_t(h / group * c.n_kv * hd)];
    const double* vh = &v[size_t(h / group * c.n_kv * hd)];
    const double sl = slope(c, h);
    for (int64_t t = 0; t < c.n_tokens; ++t) {
      const double* qr = &q[size_t((h * c.n_tokens + t) * hd)];
      double max = kNegInf;
      for (int64_t cell = 0; cell < c.n_kv; ++cell) {
        double dot = 0;
        for (int64_t d = 0; d < hd; ++d) dot += qr[d] * kh[cell * hd + d];
        const double m = mask.empty() ? 0.0 : double(mask[size_t(t * c.n_kv + cell)]);
        const double z = c.softcap > 0 ? c.softcap * std::tanh(scale * dot / c.softcap) : scale * dot;
        s[size_t(cell)] = m == kNegInf ? kNegInf : z + sl * m;
        max = std::max(max, s[size_t(cell)]);
      }
      if (max == kNegInf) continue;  // sees no cell: zeros
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - max));
      double* o = &out[size_t((t * c.n_head + h) * hd)];
      for (int64_t cell = 0; cell < c.n_kv; ++cell) {
        for (int64_t d = 0; d < hd; ++d) o[d] += s[size_t(cell)] / sum * vh[cell * hd + d];
      }
    }
  }
  return out;
}

enum class Grad { Q, K, V };
const char* grad_name(Grad g) { return g == Grad::Q ? "dq" : g == Grad::K ? "dk" : "dv"; }

// The kernel's float scores and softmax against double differences: with O(1) inputs each
// gradient element is off by a few float ulps of the sum of |terms| it adds (the
// magnitudes fd_expected estimates); the cases here measure up to 4e-7 of it on every
// vector level, and 5e-6 leaves room for longer rows. The absolute part covers elements
// whose terms all but vanish, where only the differences' own noise remains (about
// 1e-16 |f| / 1e-6 per output, summed over the outputs: ~1e-10 measured).
constexpr Tolerance kTol{5e-6, 1e-8};

class AttentionBackTest : public ::testing::TestWithParam<BackCase> {};

void check_grad(const BackCase& c, Grad which) {
  SCOPED_TRACE(grad_name(which));
  OpTest t(71);  // the same seed for each gradient: the same inputs
  Tensor* q = t.input(DType::F32, {c.hd, c.n_tokens, c.n_head, 1}, c.q_layout);
  Tensor* k = t.input(DType::F32, {c.hd, c.n_kv, c.n_head_kv, 1}, c.kv_layout);
  Tensor* v = t.input(DType::F32, {c.hd, c.n_kv, c.n_head_kv, 1}, c.kv_layout);
  Tensor* dout = t.input(DType::F32, {c.hd, c.n_head, c.n_tokens, 1}, c.kv_layout);
  const std::vector<float> mv = mask_values(c);
  Tensor* mask =
      mv.empty() ? nullptr : t.input_values(DType::F32, {c.n_kv, mask_rows(c), 1, 1}, mv);
  const float scale = 1.0f / std::sqrt(float(c.hd));
  const ops::AttentionGrads g =
      ops::attention_back(t.graph(), q, k, v, mask, dout, scale, c.max_bias, c.softcap);

  const std::vector<double> qv = values_of(t, q), kv = values_of(t, k), vv = values_of(t, v);
  ForwardFn f;
  std::vector<double> x;
  Tensor* out = nullptr;
  switch (which) {
    case Grad::Q:
      f = [&](const std::vector<double>& xq) { return attention_ref(c, mv, xq, kv, vv); };
      x = qv;
      out = g.dq;
      break;
    case Grad::K:
      f = [&](const std::vector<double>& xk) { return attention_ref(c, mv, qv, xk, vv); };
      x = kv;
      out = g.dk;
      break;
    case Grad::V:
      f = [&](const std::vector<double>& xv) { return attention_ref(c, mv, qv, kv, xv); };
      x = vv;
      out = g.dv;
      break;
  }
  t.check(out, fd_expected(f, x, values_of(t, dout)), kTol);
}

TEST_P(AttentionBackTest, MatchesFiniteDifferences) {
  for (Grad which : {Grad::Q, Grad::K, Grad::V}) check_grad(GetParam(), which);
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionBackTest, ::testing::ValuesIn(kCases));

}  // namespace
}  // namespace tessera::test
