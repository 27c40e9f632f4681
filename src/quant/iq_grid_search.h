// The i-quant grids as their quantizers search them. A quantizer rounds a group of 8
// (IQ2, IQ1) or 4 (IQ3) values to levels independently, which usually gives a
// combination that is not a grid point; it then needs the grid points close to that
// combination. Following the reference quantizer (llama.cpp's iq2xs_init_impl and
// iq3xs_init_impl), every combination of levels maps either to the point it is or to
// its candidate neighbours: all points at the `n_nearest` smallest distinct squared
// distances (in levels), in order of distance, then of index. Among those the
// quantizer takes the one with the smallest weighted error (best_neighbour).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::quant::detail {

enum class IqGridKind { kIq2xxs, kIq2xs, kIq2s, kIq3xxs, kIq3s, kIq1s };

class IqGrid {
 public:
  /// Builds the maps of one grid: `points` pack `dims` one-byte coordinates each, the
  /// first in the lowest byte; `values` lists the bytes that occur as coordinates in
  /// ascending order of the number they stand for, and a coordinate's level is its
  /// position there.
  IqGrid(std::span<const uint64_t> points, int dims, std::span<const uint8_t> values,
         int n_nearest);

  int dims() const { return dims_; }
  int size() const { return size_; }
  /// The levels (dims of them) of point j.
  const uint8_t* levels(int j) const { return levels_.data() + size_t(j) * dims_; }
  /// The key of a combination of levels: level i at bits bits_per_level * i.
  int key(const int8_t* L) const {
    int k = 0;
    for (int i = 0; i < dims_; ++i) k |= int(L[i]) << (bits_ * i);
    return k;
  }
  /// The point a key is, or -1 where it is not on the grid.
  int index_of(int key) const { return map_[size_t(key)] >= 0 ? map_[size_t(key)] : -1; }
  /// The candidate neighbours of a key that is not on the grid.
  std::span<const uint16_t> neighbours(int key) const;
  /// Of the neighbours of `key` (not on the grid), the point with the smallest
  /// sum_i w[i] (scale * value[level_i] - x[i])^2, the first on ties; writes its levels
  /// to L (dims of them) and returns its index. `value` gives the number a level stands
  /// for in this search.
  int best_neighbour(int key, const float* x, const float* w, float scale, const float* value,
                     int8_t* L) const;

 private:
  int dims_;
  int size_;
  int bits_;
  std::vector<uint8_t> levels_;       // size x dims
  std::vector<int32_t> map_;          // per key: point index, or -(offset + 1) of its list
  std::vector<uint16_t> neighbours_;  // per listed key: count, then the points
};

/// The grid of a format, built on first use (thread-safe) and kept for the process.
/// IQ1_S and IQ1_M share kIq1s.
const IqGrid& iq_grid(IqGridKind kind);

}  // namespace tessera::quant::detail
