// The grad mode of the op tests: finite differences in double precision. A backward
// kernel (or a gradient the backward graph composes) is checked against the
// vector-Jacobian product J^T dy of the op's double-precision forward reference,
// computed by central differences, so that the test checks the gradient's mathematics
// and not only a transcription of a formula.
#pragma once

#include <functional>
#include <vector>

#include "ops/op_test_util.h"

namespace tessera::test {

/// A forward reference: the op's result (row-major) from its input's values (row-major),
/// in double. Other inputs are captured by the function.
using ForwardFn = std::function<std::vector<double>(const std::vector<double>& x)>;

/// The values of a leaf, or of a view of a leaf, before compute, row-major.
std::vector<double> values_of(const OpTest& t, const Tensor* x);

/// The gradient of sum(dy * f(x)) with respect to x by central differences with step
/// h * max(1, |x_i|), in double: J^T dy. f is called 2 x.size() times.
std::vector<double> fd_vjp(const ForwardFn& f, const std::vector<double>& x,
                           const std::vector<double>& dy, double h = 1e-6);

/// The finite-difference gradient as what OpTest::check expects, with the magnitudes
/// sum |dy_j| * |df_j/dx_i| estimated from the same differences (so that the tolerance's
/// relative part scales with the terms that were summed, not with a cancelled result).
Expected fd_expected(const ForwardFn& f, const std::vector<double>& x,
                     const std::vector<double>& dy, double h = 1e-6);

/// A forward acting on each run of `seg` consecutive elements of x alone (a row along dim
/// 0, or one element): f(the run's values, the run's number).
using SegmentFn = std::function<std::vector<double>(const std::vector<double>&, int64_t)>;

/// fd_expected one run at a time: the other runs' outputs do not move, so this is what
/// fd_expected over all of x gives, in time linear in the number of runs.
Expected fd_by_segments(const std::vector<double>& x, const std::vector<double>& dy, int64_t seg,
                        const SegmentFn& f);

}  // namespace tessera::test
