// Helpers shared by the quantized-kernel tests: where a weight block keeps its fp16
// scales, and the magnitude a quantized dot's float rounding is measured against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/quant.h"
#include "tessera/dtype.h"

namespace tessera::test {

using quant::fp16_fields;

/// The magnitude of the terms a quantized dot of x (n elements of weight type t) and y
/// (its partner) adds up: sum_e (|s_e| + |m_e|) |y_e|, where s_e is element e's scale
/// term and m_e its min term (formats with a min), each the reference dequantization of
/// the block with the other fp16 field zeroed. The fast kernels keep the integer sums of
/// groups of elements exact and differ from the reference only in the order of float
/// operations on them, so their error is a few ulps of this. (It bounds the sum of
/// |block contributions| from above; the two differ only where a block's terms cancel.)
inline double term_magnitude(DType t, const uint8_t* x, const uint8_t* y, int64_t n) {
  const quant::Format* f = quant::format(t);
  const size_t xbb = dtype_traits(t).type_size;
  const int64_t bs = dtype_traits(t).block_size;
  const std::vector<size_t> fields = fp16_fields(t);
  std::vector<float> yv(static_cast<size_t>(n));
  quant::format(f->dot_partner)->dequantize(y, yv.data(), n);
  std::vector<uint8_t> block(xbb);
  std::vector<float> part(static_cast<size_t>(bs));
  double mag = 0;
  for (int64_t i = 0; i < n / bs; ++i) {
    const uint8_t* xb = x + size_t(i) * xbb;
    const float* yb = yv.data() + i * bs;
    for (size_t keep = 0; keep < std::max<size_t>(fields.size(), 1); ++keep) {
      std::memcpy(block.data(), xb, xbb);
      if (fields.size() == 2) std::memset(block.data() + fields[1 - keep], 0, 2);
      f->dequantize(block.data(), part.data(), bs);
      for (int64_t e = 0; e < bs; ++e) mag += std::fabs(double(part[size_t(e)]) * double(yb[e]));
    }
  }
  return mag;
}

}  // namespace tessera::test
