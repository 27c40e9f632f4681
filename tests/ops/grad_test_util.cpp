#include "ops/grad_test_util.h"

#include <algorithm>
#include <cmath>

namespace tessera::test {

std::vector<double> values_of(const OpTest& t, const Tensor* x) {
  std::vector<double> v;
  v.reserve(size_t(x->nelements()));
  for_each_index(x->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    v.push_back(t.at(x, i0, i1, i2, i3));
  });
  return v;
}

Expected fd_expected(const ForwardFn& f, const std::vector<double>& x,
                     const std::vector<double>& dy, double h) {
  Expected e;
  e.value.resize(x.size());
  e.mag.resize(x.size());
  std::vector<double> xp = x;
  for (size_t i = 0; i < x.size(); ++i) {
    const double step = h * std::max(1.0, std::fabs(x[i]));
    xp[i] = x[i] + step;
    const std::vector<double> fp = f(xp);
    xp[i] = x[i] - step;
    const std::vector<double> fm = f(xp);
    xp[i] = x[i];
    double sum = 0, mag = 0;
    for (size_t j = 0; j < dy.size(); ++j) {
      const double d = (fp[j] - fm[j]) / (2 * step);
      sum += dy[j] * d;
      mag += std::fabs(dy[j] * d);
    }
    e.value[i] = sum;
    e.mag[i] = mag;
  }
  return e;
}

std::vector<double> fd_vjp(const ForwardFn& f, const std::vector<double>& x,
                           const std::vector<double>& dy, double h) {
  return fd_expected(f, x, dy, h).value;
}

Expected fd_by_segments(const std::vector<double>& x, const std::vector<double>& dy, int64_t seg,
                        const SegmentFn& f) {
  Expected e;
  for (int64_t s = 0; s * seg < int64_t(x.size()); ++s) {
    const std::vector<double> xs(x.begin() + s * seg, x.begin() + (s + 1) * seg);
    const std::vector<double> dys(dy.begin() + s * seg, dy.begin() + (s + 1) * seg);
    const Expected part =
        fd_expected([&](const std::vector<double>& v) { return f(v, s); }, xs, dys);
    e.value.insert(e.value.end(), part.value.begin(), part.value.end());
    e.mag.insert(e.mag.end(), part.mag.begin(), part.mag.end());
  }
  return e;
}

}  // namespace tessera::test
