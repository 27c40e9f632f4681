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

/// Writes the fp16 super-scale h of an IQ1_M block (its nibble k in the top of the
/// little-endian scale word k), keeping the sub-block scales.
inline void set_iq1_m_scale(uint8_t* block, uint16_t h) {
  for (size_t k = 0; k < 4; ++k) {
    uint8_t& top = block[offsetof(quant::BlockIQ1_M, scales) + 2 * k + 1];
    top = uint8_t((top & 0x0f) | (((h >> (4 * k)) & 0xf) << 4));
  }
}

/// Whether the engine can write type t (quantize_rows; with importance weights where the
/// format needs them).
inline bool can_quantize(DType t) {
  const quant::Format* f = quant::format(t);
  return f != nullptr && (f->quantize != nullptr || f->quantize_weighted != nullptr);
}

/// Quantizes one row of x to t with quantize_rows, with unit importance weights where the
/// format needs importance weights.
inline std::vector<uint8_t> quantize_row(DType t, const std::vector<float>& x) {
  const int64_t n = int64_t(x.size());
  std::vector<uint8_t> q(dtype_row_size(t, n));
  const std::vector<float> unit(x.size(), 1.0f);
  const bool weighted = quant::format(t)->needs_importance;
  quant::quantize_rows(t, x.data(), q.data(), 1, n, weighted ? unit.data() : nullptr);
  return q;
}

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
