// The last step of the double-precision attention reference shared by attention_test.cpp
// and attention_cache_types_test.cpp: softmax over one query row's scores and the
// weighted sum of the values.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/op_test_util.h"

namespace tessera::test {

/// Softmax over `s` (one score per cell, -inf where masked; a row with every cell masked
/// gets zeros), then for each d < vd the weighted sum of value(d, cell) and of its
/// magnitude, appended to want. `s` is overwritten with the unnormalised weights.
template <typename Value>
void append_weighted_values(std::vector<double>& s, int64_t vd, const Value& value, Expected& want) {
  double max = -INFINITY;
  for (double x : s) max = std::max(max, x);
  double sum = 0;
  for (double& x : s) sum += (x = max == -INFINITY ? 0.0 : std::exp(x - max));
  for (int64_t d = 0; d < vd; ++d) {
    double o = 0, mag = 0;
    for (size_t cell = 0; cell < s.size(); ++cell) {
      const double x = value(d, int64_t(cell));
      o += s[cell] * x;
      mag += s[cell] * std::fabs(x);
    }
    want.value.push_back(sum > 0 ? o / sum : 0.0);
    want.mag.push_back(sum > 0 ? mag / sum : 0.0);
  }
}

}  // namespace tessera::test
