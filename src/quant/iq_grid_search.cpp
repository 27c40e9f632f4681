// The grid maps of iq_grid_search.h.
#include "quant/iq_grid_search.h"

#include <algorithm>
#include <cfloat>

#include "core/check.h"
#include "quant/iq_tables.h"
#include "quant/strict_fp.h"  // last: applies to everything below

namespace tessera::quant::detail {
namespace {

// Squared distances, in levels, from every combination of `n` levels (the key's bits
// from `shift` on) to coordinates first..first + n - 1 of every grid point: the full
// distance is the sum of two such halves, which keeps the build of the maps fast.
std::vector<uint8_t> half_distances(const std::vector<uint8_t>& levels, int size, int dims,
                                    int bits, int first, int n) {
  const int n_keys = 1 << (bits * n);
  std::vector<uint8_t> d(size_t(n_keys) * size);
  for (int k = 0; k < n_keys; ++k) {
    for (int j = 0; j < size; ++j) {
      int sum = 0;
      for (int i = 0; i < n; ++i) {
        const int diff =
            ((k >> (bits * i)) & ((1 << bits) - 1)) - levels[size_t(j) * dims + first + i];
        sum += diff * diff;
      }
      d[size_t(k) * size + j] = uint8_t(sum);
    }
  }
  return d;
}

}  // namespace

IqGrid::IqGrid(std::span<const uint64_t> points, int dims, std::span<const uint8_t> values,
               int n_nearest)
    : dims_(dims), size_(int(points.size())), bits_(values.size() <= 4 ? 2 : 3) {
  levels_.resize(size_t(size_) * dims_);
  for (int j = 0; j < size_; ++j) {
    for (int i = 0; i < dims_; ++i) {
      const auto byte = uint8_t(points[size_t(j)] >> (8 * i));
      const auto at = std::find(values.begin(), values.end(), byte);
      TESSERA_CHECK_MSG(at != values.end(), "i-quant grid: a coordinate outside its values");
      levels_[size_t(j) * dims_ + i] = uint8_t(at - values.begin());
    }
  }
  const int n_keys = 1 << (bits_ * dims_);
  map_.assign(size_t(n_keys), -1);
  for (int j = 0; j < size_; ++j) {
    int k = 0;
    for (int i = 0; i < dims_; ++i) k |= int(levels(j)[i]) << (bits_ * i);
    map_[size_t(k)] = j;
  }

  const int half = dims_ / 2;
  const int half_mask = (1 << (bits_ * half)) - 1;
  const std::vector<uint8_t> low = half_distances(levels_, size_, dims_, bits_, 0, half);
  const std::vector<uint8_t> high = half_distances(levels_, size_, dims_, bits_, half, half);
  std::vector<int> dist(size_t(size_), 0);
  const int max_dist = dims_ * ((1 << bits_) - 1) * ((1 << bits_) - 1);
  std::vector<int> count(size_t(max_dist) + 1);  // points at each distance
  std::vector<int> nearest;  // the n_nearest smallest distinct distances, ascending
  for (int k = 0; k < n_keys; ++k) {
    if (map_[size_t(k)] >= 0) continue;
    const uint8_t* dl = low.data() + size_t(k & half_mask) * size_;
    const uint8_t* dh = high.data() + size_t(k >> (bits_ * half)) * size_;
    std::fill(count.begin(), count.end(), 0);
    for (int j = 0; j < size_; ++j) {
      dist[size_t(j)] = dl[j] + dh[j];
      ++count[size_t(dist[size_t(j)])];
    }
    nearest.clear();
    for (int d = 0; d <= max_dist && int(nearest.size()) < n_nearest; ++d) {
      if (count[size_t(d)] > 0) nearest.push_back(d);
    }
    map_[size_t(k)] = -int32_t(neighbours_.size() + 1);
    const size_t count_at = neighbours_.size();
    neighbours_.push_back(0);
    for (const int d : nearest) {
      for (int j = 0; j < size_; ++j) {
        if (dist[size_t(j)] == d) neighbours_.push_back(uint16_t(j));
      }
    }
    neighbours_[count_at] = uint16_t(neighbours_.size() - count_at - 1);
  }
}

std::span<const uint16_t> IqGrid::neighbours(int key) const {
  const int32_t m = map_[size_t(key)];
  TESSERA_CHECK_MSG(m < 0, "i-quant grid: neighbours asked of a grid point");
  const uint16_t* list = neighbours_.data() + (-m - 1);
  return {list + 1, list[0]};
}

int IqGrid::best_neighbour(int key, const float* x, const float* w, float scale, const float* value,
                           int8_t* L) const {
  const std::span<const uint16_t> candidates = neighbours(key);
  int best = candidates[0];
  float best_d2 = FLT_MAX;
  for (const uint16_t j : candidates) {
    const uint8_t* lv = levels(j);
    float d2 = 0;
    for (int i = 0; i < dims_; ++i) {
      const float diff = scale * value[lv[i]] - x[i];
      d2 += w[i] * diff * diff;
    }
    if (d2 < best_d2) {
      best_d2 = d2;
      best = j;
    }
  }
  for (int i = 0; i < dims_; ++i) L[i] = int8_t(levels(best)[i]);
  return best;
}

const IqGrid& iq_grid(IqGridKind kind) {
  // The coordinates of each grid in the order of the numbers they stand for (see
  // iq_tables.h), and how many distinct distances of neighbours the reference quantizer
  // considers for it.
  static constexpr uint8_t kIq2Values[] = {8, 25, 43};
  static constexpr uint8_t kIq3xxsValues[] = {4, 12, 20, 28, 36, 44, 52, 62};
  static constexpr uint8_t kIq3sValues[] = {1, 3, 5, 7, 9, 11, 13, 15};
  static constexpr uint8_t kIq1Values[] = {0xff, 0x00, 0x01};  // int8 -1, 0, +1
  const auto widen = [](const uint32_t* p, int n) { return std::vector<uint64_t>(p, p + n); };
  switch (kind) {
    case IqGridKind::kIq2xxs: {
      static const IqGrid g({kIq2xxsGrid, 256}, 8, kIq2Values, 2);
      return g;
    }
    case IqGridKind::kIq2xs: {
      static const IqGrid g({kIq2xsGrid, 512}, 8, kIq2Values, 2);
      return g;
    }
    case IqGridKind::kIq2s: {
      static const IqGrid g({kIq2sGrid, 1024}, 8, kIq2Values, 1);
      return g;
    }
    case IqGridKind::kIq3xxs: {
      static const IqGrid g(widen(kIq3xxsGrid, 256), 4, kIq3xxsValues, 2);
      return g;
    }
    case IqGridKind::kIq3s: {
      static const IqGrid g(widen(kIq3sGrid, 512), 4, kIq3sValues, 3);
      return g;
    }
    case IqGridKind::kIq1s: {
      static const IqGrid g({kIq1sGrid, 2048}, 8, kIq1Values, 3);
      return g;
    }
  }
  ::tessera::detail::check_failed(__FILE__, __LINE__, "kind", "i-quant grid: unknown kind");
}

}  // namespace tessera::quant::detail
