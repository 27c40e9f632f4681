// The grid i-quant quantizers (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) on
// random rows: quantize -> dequantize round trips within each format's error, importance
// weights that lower the error where they say it counts, the sign rules of the formats,
// zero and tiny rows, and the grid neighbour maps the searches use.
#include "quant/iq_quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "quant/blocks.h"
#include "quant/iq_grid_search.h"
#include "quant/quant.h"
#include "tessera/dtype.h"

namespace tessera::quant {
namespace {

struct Case {
  DType type;
  double rmse_bound;  // relative RMSE of a Gaussian round trip, importance weights on
};

// Bounds: the measured relative RMSE of the Gaussian rows below (weighted search,
// log-normal importance) with a margin of about 10%.
const Case kCases[] = {
    {DType::IQ2_XXS, 0.42}, {DType::IQ2_XS, 0.37}, {DType::IQ2_S, 0.31},  {DType::IQ3_XXS, 0.245},
    {DType::IQ3_S, 0.165},  {DType::IQ1_S, 0.60},  {DType::IQ1_M, 0.565},
};

constexpr int64_t kRows = 5;         // odd
constexpr int64_t kCols = 3 * QK_K;  // several super-blocks

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Skewed importance per column: log-normal (a few columns matter far more than most).
std::vector<float> skewed_importance(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.5f);
  std::vector<float> v(n);
  for (float& x : v) x = std::exp(dist(rng));
  return v;
}

std::vector<float> round_trip(DType t, const std::vector<float>& x, int64_t rows, int64_t cols,
                              const float* importance) {
  const Format* f = format(t);
  EXPECT_NE(f, nullptr) << dtype_name(t);
  if (f == nullptr) return {};
  std::vector<uint8_t> q(dtype_row_size(t, cols) * size_t(rows));
  const std::vector<float> ones(size_t(cols), 1.0f);
  // The plain path is asked for through the function itself: quantize_rows refuses the
  // formats that need importance weights without them.
  if (importance != nullptr) {
    quantize_rows(t, x.data(), q.data(), rows, cols, importance);
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      f->quantize(x.data() + r * cols, q.data() + size_t(r) * dtype_row_size(t, cols), cols);
    }
  }
  std::vector<float> y(x.size());
  dequantize_rows(t, q.data(), y.data(), rows, cols);
  return y;
}

double weighted_error(const std::vector<float>& x, const std::vector<float>& y, int64_t cols,
                      const std::vector<float>& w) {
  double e = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = double(y[i]) - x[i];
    e += (w.empty() ? 1.0 : w[i % size_t(cols)]) * d * d;
  }
  return e;
}

TEST(IqQuantize, RoundTripWithinFormatError) {
  const std::vector<float> x = gaussian(size_t(kRows * kCols), 1);
  const std::vector<float> imp = skewed_importance(size_t(kCols), 2);
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(dtype_name(c.type)));
    const std::vector<float> y = round_trip(c.type, x, kRows, kCols, imp.data());
    ASSERT_EQ(y.size(), x.size());
    double err = 0, sum = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << i;
      err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
      sum += double(x[i]) * x[i];
    }
    const double rmse = std::sqrt(err / sum);
    std::printf("  %-8s relative RMSE %.4f (bound %.2f)\n", std::string(dtype_name(c.type)).c_str(),
                rmse, c.rmse_bound);
    EXPECT_LT(rmse, c.rmse_bound);
  }
}

TEST(IqQuantize, ImportanceLowersTheWeightedError) {
  const std::vector<float> x = gaussian(size_t(kRows * kCols), 3);
  const std::vector<float> imp = skewed_importance(size_t(kCols), 4);
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(dtype_name(c.type)));
    const double weighted =
        weighted_error(x, round_trip(c.type, x, kRows, kCols, imp.data()), kCols, imp);
    const double plain =
        weighted_error(x, round_trip(c.type, x, kRows, kCols, nullptr), kCols, imp);
    std::printf(
        "  %-8s importance-weighted error: with importance %.2f, without %.2f (ratio %.3f)\n",
        std::string(dtype_name(c.type)).c_str(), weighted, plain, weighted / plain);
    EXPECT_LT(weighted, 0.9 * plain);
  }
}

// Per group of 8, the signs of the dequantized values against those of x (all values of
// these formats are non-zero when their scale is). Formats with 7 sign bits per 8 store an
// even count of negatives: with an odd count in x, exactly one value (the smallest in
// weighted magnitude: without importance, the smallest |x|) has the wrong sign. Formats
// with 8 bits keep every sign.
TEST(IqQuantize, SignRules) {
  const std::vector<float> x = gaussian(size_t(kRows * kCols), 5);
  for (const DType t :
       {DType::IQ2_XXS, DType::IQ2_XS, DType::IQ3_XXS, DType::IQ2_S, DType::IQ3_S}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const bool even = t == DType::IQ2_XXS || t == DType::IQ2_XS || t == DType::IQ3_XXS;
    const std::vector<float> y = round_trip(t, x, kRows, kCols, nullptr);
    ASSERT_EQ(y.size(), x.size());
    int groups = 0;
    for (size_t g = 0; g < x.size(); g += 8) {
      int negatives = 0, wrong = 0, smallest = 0, wrong_at = -1;
      for (int i = 0; i < 8; ++i) {
        const float xi = x[g + size_t(i)], yi = y[g + size_t(i)];
        ASSERT_NE(yi, 0.0f);
        negatives += xi < 0;
        if ((xi < 0) != (yi < 0)) {
          ++wrong;
          wrong_at = i;
        }
        if (std::fabs(xi) < std::fabs(x[g + size_t(smallest)])) smallest = i;
      }
      if (even && negatives % 2 == 1) {
        ASSERT_EQ(wrong, 1) << "group at " << g;
        ASSERT_EQ(wrong_at, smallest) << "group at " << g;
        ++groups;
      } else {
        ASSERT_EQ(wrong, 0) << "group at " << g;
      }
    }
    if (even) {
      EXPECT_GT(groups, 0);
    }
  }
}

TEST(IqQuantize, ZeroAndTinyRows) {
  const int64_t cols = 2 * QK_K;
  const std::vector<float> imp = skewed_importance(size_t(cols), 6);
  std::vector<float> zero(size_t(cols), 0.0f);
  std::vector<float> tiny = gaussian(size_t(cols), 7);
  for (float& v : tiny) v *= 1e-30f;
  // A row whose first super-block is zero and whose second has a zero sub-block of 32.
  std::vector<float> mixed = gaussian(size_t(cols), 8);
  std::fill(mixed.begin(), mixed.begin() + QK_K, 0.0f);
  std::fill(mixed.begin() + QK_K + 64, mixed.begin() + QK_K + 96, 0.0f);
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(dtype_name(c.type)));
    for (const float* w : {imp.data(), static_cast<const float*>(nullptr)}) {
      for (const float v : round_trip(c.type, zero, 1, cols, w)) ASSERT_EQ(v, 0.0f);
      for (const float v : round_trip(c.type, tiny, 1, cols, w)) {
        ASSERT_TRUE(std::isfinite(v));
        ASSERT_LE(std::fabs(v), 1e-28f);
      }
      const std::vector<float> y = round_trip(c.type, mixed, 1, cols, w);
      for (int64_t i = 0; i < QK_K; ++i) ASSERT_EQ(y[size_t(i)], 0.0f) << i;
      double peak = 0;
      for (const float v : y) {
        ASSERT_TRUE(std::isfinite(v));
        peak = std::max(peak, double(std::fabs(v)));
      }
      EXPECT_GT(peak, 0.5);
      // The zero sub-block: no value of these formats is zero inside a non-zero
      // super-block; it gets the smallest scale code and the grid point of the smallest
      // magnitudes (IQ1: the all-zero point with its shift of 1/8).
      for (int64_t i = QK_K + 64; i < QK_K + 96; ++i) {
        ASSERT_LE(std::fabs(y[size_t(i)]), 0.25 * peak) << i;
      }
    }
  }
}

// Quantizing from several threads at once (the grids' maps are built on first use)
// gives the blocks of a single thread.
TEST(IqQuantize, ThreadsAgree) {
  const std::vector<float> x = gaussian(size_t(kCols), 9);
  const std::vector<float> imp = skewed_importance(size_t(kCols), 10);
  for (const Case& c : kCases) {
    const size_t bytes = dtype_row_size(c.type, kCols);
    std::vector<std::vector<uint8_t>> out(4, std::vector<uint8_t>(bytes));
    std::vector<std::thread> threads;
    for (auto& o : out) {
      threads.emplace_back(
          [&] { format(c.type)->quantize_weighted(x.data(), o.data(), kCols, imp.data()); });
    }
    for (auto& th : threads) th.join();
    for (const auto& o : out) EXPECT_EQ(o, out[0]) << dtype_name(c.type);
  }
}

// The neighbour lists against a brute-force search: for sampled combinations of levels
// off the grid, exactly the points at the n smallest distinct distances, ordered by
// distance then index; every grid point maps to itself.
TEST(IqQuantize, GridNeighbourMaps) {
  using detail::IqGridKind;
  struct G {
    IqGridKind kind;
    int n_nearest;
    int max_level;  // the searches round to 0..max_level
  };
  const G grids[] = {{IqGridKind::kIq2xxs, 2, 2}, {IqGridKind::kIq2xs, 2, 2},
                     {IqGridKind::kIq2s, 1, 2},   {IqGridKind::kIq3xxs, 2, 7},
                     {IqGridKind::kIq3s, 3, 7},   {IqGridKind::kIq1s, 3, 2}};
  std::mt19937 rng(11);
  for (const G& g : grids) {
    const detail::IqGrid& grid = detail::iq_grid(g.kind);
    const int dims = grid.dims();
    for (int j = 0; j < grid.size(); ++j) {
      int8_t L[8];
      for (int i = 0; i < dims; ++i) L[i] = int8_t(grid.levels(j)[i]);
      ASSERT_EQ(grid.index_of(grid.key(L)), j);
    }
    std::uniform_int_distribution<int> level(0, g.max_level);
    int checked = 0;
    while (checked < 300) {
      int8_t L[8];
      for (int i = 0; i < dims; ++i) L[i] = int8_t(level(rng));
      const int key = grid.key(L);
      if (grid.index_of(key) >= 0) continue;
      ++checked;
      std::vector<std::pair<int, int>> all;  // (distance, index)
      for (int j = 0; j < grid.size(); ++j) {
        int d = 0;
        for (int i = 0; i < dims; ++i) d += (L[i] - grid.levels(j)[i]) * (L[i] - grid.levels(j)[i]);
        all.emplace_back(d, j);
      }
      std::sort(all.begin(), all.end());
      std::vector<int> expected;
      int distinct = 0;
      for (size_t k = 0; k < all.size(); ++k) {
        if (k == 0 || all[k].first != all[k - 1].first) ++distinct;
        if (distinct > g.n_nearest) break;
        expected.push_back(all[k].second);
      }
      const auto got = grid.neighbours(key);
      ASSERT_EQ(std::vector<int>(got.begin(), got.end()), expected) << "key " << key;
    }
  }
}

}  // namespace
}  // namespace tessera::quant
