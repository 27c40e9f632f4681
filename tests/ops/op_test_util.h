// Harness for the op tests: build a one-op graph with the core/ops.h builders, give
// every leaf and non-view node its own memory, fill the leaves with seeded values, run
// it on CpuBackend with 1, 2 and 3 threads under every vector level this CPU has, and
// compare each result with a double-precision reference written in the test. Results
// must also be bit-identical across thread counts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/ops.h"

namespace tessera::test {

/// |got - want| <= abs + rel * mag, where mag is the reference's magnitude (|want|
/// unless the reference gives one, e.g. sum |a_i b_i| for a dot product).
struct Tolerance {
  double rel = 0;
  double abs = 0;
};

/// What a reference computes: one value per element of the result, in row-major order
/// (dim 0 fastest), and optionally a magnitude per element for the tolerance.
struct Expected {
  std::vector<double> value;
  std::vector<double> mag;
};

/// How an input is laid out in memory (all hold the same logical shape).
enum class Layout {
  Contiguous,
  Transposed,  // transpose() of a [ne1, ne0, ...] leaf: dim 0 strided
  Permuted,    // permute(0, 2, 1, 3) of a [ne0, ne2, ne1, ne3] leaf: rows dense, planes mixed
  Sliced,      // view() into a larger leaf: padded rows, non-zero offset
};
const char* layout_name(Layout layout);

/// A tensor of shape ne laid out as `layout`: a view (transpose, permute, slice) of a
/// tensor that make(shape) creates (Contiguous: make(ne) itself).
Tensor* laid_out(Graph& g, const Shape& ne, Layout layout, const std::function<Tensor*(const Shape&)>& make);

class OpTest {
 public:
  explicit OpTest(uint64_t seed = 1);
  ~OpTest();
  OpTest(const OpTest&) = delete;
  OpTest& operator=(const OpTest&) = delete;

  Graph& graph() { return graph_; }
  /// Elementwise nodes (add, mul, scale, silu, gelu, ...) and acc over a contiguous src0
  /// write their result over src0, as the graph allocator arranges. Call before
  /// check()/run().
  void set_in_place(bool in_place) { in_place_ = in_place; }

  /// A leaf filled with uniform values in [lo, hi], rounded to its type (a block-quantized
  /// type: each row quantized as src/quant does; ne[0] a multiple of the block).
  Tensor* input(DType type, const Shape& ne, float lo = -1.0f, float hi = 1.0f);
  /// An input of logical shape ne laid out as `layout` (a view of a leaf unless contiguous).
  Tensor* input(DType type, const Shape& ne, Layout layout, float lo = -1.0f, float hi = 1.0f);
  /// A leaf with the given values (row-major), rounded to its type.
  Tensor* input_values(DType type, const Shape& ne, const std::vector<float>& values);
  /// An I32 leaf [n] with the given ids.
  Tensor* ids(const std::vector<int32_t>& ids);

  /// Element (i0..i3) of a leaf, or of a view of a leaf, as it is before compute (a
  /// quantized element: its block's dequantized value).
  double at(const Tensor* t, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const;

  /// Runs the graph of `out` under every vector level and with 1, 2, 3 threads; checks
  /// each result against `want` and bit-identity across thread counts.
  void check(Tensor* out, const Expected& want, Tolerance tol);

  /// Runs the graph of `out` once with nth threads; returns out's elements row-major.
  std::vector<double> run(Tensor* out, int nth);

 private:
  struct Memory;
  Tensor* add_leaf(DType type, const Shape& ne, const std::vector<float>& values);
  void prepare_graph(Tensor* out);
  void reset_memory();
  std::vector<uint8_t> element_bytes(const Tensor* t) const;

  Graph graph_;
  std::mt19937 rng_;
  std::vector<std::unique_ptr<Memory>> memory_;
  Tensor* planned_ = nullptr;
  bool in_place_ = false;
};

/// Calls f(i0, i1, i2, i3) for every element of shape ne, row-major.
void for_each_index(const Shape& ne,
                    const std::function<void(int64_t, int64_t, int64_t, int64_t)>& f);

/// The element at p of a float or I32 tensor of `type`, as a double (a test failure for
/// other types).
double load(DType type, const uint8_t* p);

/// Float rounded to F16 / BF16 and back (what storing into such a tensor gives).
double round_to(DType type, double v);

}  // namespace tessera::test
