#include "backend/cpu/ops/mul_mat_id.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/ops/common.h"
#include "backend/cpu/ops/mul_mat_x16.h"
#include "backend/cpu/quant_kernels.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/vec.h"
#include "core/check.h"

namespace tessera::cpu {
namespace {

constexpr size_t kAlign = 64;
constexpr int64_t kItemRows = 16;      // weight rows per work item (one _X16 group)
constexpr int64_t kRunItems = 8;       // _X16 groups per kernel call (the output tile's rows / 16)
constexpr size_t kChunkBytes = 1u << 20;  // activation bytes per kernel call (kept in L2)
constexpr int64_t kStreamCost = 4;     // cost of reading an item's weights, in activation rows

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

enum class Path { X16, Quant, Float };

struct IdLayout {
  Path path;
  QuantMatmul mm;       // Quant: the partner quantizer and the dot
  bool k_quant;         // X16: BlockQ8KX activations
  int64_t k, m, n_expert, n_used, n_pairs;
  size_t act_row;       // bytes of one activation row in the scratch
  size_t map_bytes;     // int32 offsets [n_expert + 1], then order [n_pairs]
  size_t act_bytes;     // every pair's activation row, grouped by expert
  size_t row_bytes;     // per thread: a float row (strided activations)
  size_t extra_bytes;   // per thread: converted weight rows (Float) or the output tile (X16)
  int64_t chunk;        // X16: activation rows per kernel call
};

QuantMatmul quant_path(const Tensor* a) {
  if (is_x16(a->type) || !dtype_traits(a->type).is_quantized) return {};
  return quant_matmul(quant_kernels(), a->type);
}

IdLayout layout_of(const Tensor* node) {
  const Tensor* a = node->src[0];
  const Tensor* ids = node->src[2];
  IdLayout l{};
  l.k = a->ne[0];
  l.m = a->ne[1];
  l.n_expert = a->ne[2];
  l.n_used = ids->ne[0];
  l.n_pairs = ids->ne[0] * ids->ne[1];
  if (is_x16(a->type)) {
    l.path = Path::X16;
    l.k_quant = x16_super_blocks(a->type);
    if (a->type == DType::F16_X16) {
      l.act_row = size_t(l.k) * sizeof(float);
    } else if (a->type == DType::BF16_X16) {
      l.act_row = size_t(l.k) * sizeof(uint16_t);
    } else {
      l.act_row = l.k_quant ? size_t(l.k / 256) * sizeof(BlockQ8KX) : size_t(l.k / 32) * sizeof(BlockQ8X);
    }
    const bool floats = a->type == DType::F16_X16 || a->type == DType::BF16_X16;
    const int64_t tile = floats ? 12 : 24;  // whole tiles of every level's kernels
    l.chunk = std::max<int64_t>(tile, int64_t(kChunkBytes / l.act_row) / tile * tile);
    l.extra_bytes = round_up(size_t(kRunItems * kItemRows * l.chunk) * sizeof(float));
  } else if ((l.mm = quant_path(a))) {
    l.path = Path::Quant;
    l.act_row = dtype_row_size(l.mm.partner, l.k);
  } else {
    l.path = Path::Float;
    l.act_row = size_t(l.k) * sizeof(float);
    l.extra_bytes = round_up(size_t(kItemRows * l.k) * sizeof(float));
  }
  l.map_bytes = round_up(size_t(l.n_expert + 1 + l.n_pairs) * sizeof(int32_t));
  l.act_bytes = round_up(l.act_row * size_t(l.n_pairs));
  l.row_bytes = round_up(size_t(l.k) * sizeof(float));
  return l;
}

// Which pairs (p = token * n_used + i) each expert gets: offsets[e] .. offsets[e + 1] of
// order, in increasing p.
void route(const Tensor* ids, int64_t n_expert, int32_t* offsets, int32_t* order) {
  const int64_t n_used = ids->ne[0];
  const int64_t n_pairs = n_used * ids->ne[1];
  auto id_of = [&](int64_t p) { return *reinterpret_cast<const int32_t*>(elem_ptr(ids, p % n_used, p / n_used, 0, 0)); };
  std::fill(offsets, offsets + n_expert + 1, 0);
  for (int64_t p = 0; p < n_pairs; ++p) {
    const int32_t e = id_of(p);
    TESSERA_CHECK_MSG(e >= 0 && e < n_expert, "mul_mat_id: expert id out of range");
    ++offsets[e + 1];
  }
  for (int64_t e = 0; e < n_expert; ++e) offsets[e + 1] += offsets[e];
  std::vector<int32_t> next(offsets, offsets + n_expert);
  for (int64_t p = 0; p < n_pairs; ++p) order[next[size_t(id_of(p))]++] = int32_t(p);
}

// Writes the activation row of the pair at sorted position s into act: quantized for the
// weight type's kernels, or floats.
void fill_row(const Tensor* node, const IdLayout& l, const int32_t* order, int64_t s, char* act, float* buf) {
  const Tensor* b = node->src[1];
  const int64_t p = order[s];
  const float* row = read_row(b, (p % l.n_used) % b->ne[1], p / l.n_used, 0, buf);
  char* out = act + size_t(s) * l.act_row;
  if (l.path == Path::Quant) {
    l.mm.quantize(row, out, l.k);
  } else if (l.path == Path::X16 && node->src[0]->type == DType::BF16_X16) {
    vec_kernels().f32_to_bf16(row, reinterpret_cast<uint16_t*>(out), l.k);
  } else if (l.path == Path::X16 && node->src[0]->type != DType::F16_X16) {
    const GemmKernels& gk = gemm_kernels();
    if (l.k_quant) {
      gk.quantize_q8kx(row, out, l.k);
    } else {
      gk.quantize_q8x(row, out, l.k, x16_zero_point(node->src[0]->type));
    }
  } else {
    std::memcpy(out, row, size_t(l.k) * sizeof(float));
  }
}

struct Scratch {
  int32_t* offsets;
  int32_t* order;
  char* act;
  float* row;    // this thread's float row
  char* extra;   // this thread's weight rows or output tile
};

Scratch scratch_of(const IdLayout& l, const KernelParams& p) {
  char* base = align64(p.work);
  Scratch s{};
  s.offsets = reinterpret_cast<int32_t*>(base);
  s.order = s.offsets + l.n_expert + 1;
  s.act = base + l.map_bytes;
  char* mine = s.act + l.act_bytes + size_t(p.ith) * (l.row_bytes + l.extra_bytes);
  s.row = reinterpret_cast<float*>(mine);
  s.extra = mine + l.row_bytes;
  return s;
}

// This thread's share of the work items (expert e, rows [16 j, 16 j + 16)): the items of
// all experts in order, each costing its expert's activation rows plus kStreamCost, split
// into nth near-equal costs. Calls f(e, j0, j1) for each expert's run of items.
template <typename F>
void for_my_items(const IdLayout& l, const int32_t* offsets, const KernelParams& p, F f) {
  const int64_t n_items = (l.m + kItemRows - 1) / kItemRows;
  int64_t total = 0;
  for (int64_t e = 0; e < l.n_expert; ++e) {
    const int64_t c = offsets[e + 1] - offsets[e];
    if (c > 0) total += n_items * (c + kStreamCost);
  }
  const int64_t lo = total * p.ith / p.nth;
  const int64_t hi = total * (p.ith + 1) / p.nth;
  // The first item whose starting cost is >= x, of an expert starting at `base`.
  auto first_at = [&](int64_t x, int64_t base, int64_t w) {
    return std::clamp<int64_t>((x - base + w - 1) / w, 0, n_items);
  };
  int64_t base = 0;
  for (int64_t e = 0; e < l.n_expert; ++e) {
    const int64_t c = offsets[e + 1] - offsets[e];
    if (c == 0) continue;
    const int64_t w = c + kStreamCost;
    const int64_t j0 = first_at(lo, base, w);
    const int64_t j1 = first_at(hi, base, w);
    if (j0 < j1) f(e, j0, j1);
    base += n_items * w;
  }
}

// Expert e's items [j0, j1) (groups of 16 rows) against its activation rows, through the
// _X16 GEMM into this thread's tile, then each column copied to its pair's output row.
void x16_items(Tensor* node, const IdLayout& l, const Scratch& s, int64_t e, int64_t j0, int64_t j1) {
  const Tensor* a = node->src[0];
  const GemmKernels& gk = gemm_kernels();
  const char* w = static_cast<const char*>(a->data) + size_t(e) * a->nb[2];
  const size_t group_bytes = size_t(kItemRows) * a->nb[1];
  const int64_t off = s.offsets[e];
  const int64_t n = s.offsets[e + 1] - off;
  auto* tile = reinterpret_cast<float*>(s.extra);
  auto* dst = static_cast<float*>(node->data);
  const bool f16 = a->type == DType::F16_X16;
  const bool bf16 = a->type == DType::BF16_X16;
  for (int64_t cs = 0; cs < n; cs += l.chunk) {
    const int64_t nc = std::min(l.chunk, n - cs);
    const char* x = s.act + size_t(off + cs) * l.act_row;
    for (int64_t g = j0; g < j1; g += kRunItems) {
      const int64_t ng = std::min(kRunItems, j1 - g);
      const size_t stride = size_t(ng * kItemRows);
      if (bf16) {
        gk.gemm_bf16_x16(w + size_t(g) * group_bytes, ng, l.k, reinterpret_cast<const uint16_t*>(x), size_t(l.k), nc,
                         tile, stride);
      } else if (f16) {
        gk.gemm_f16_x16(w + size_t(g) * group_bytes, ng, l.k, reinterpret_cast<const float*>(x), size_t(l.k), nc, tile,
                        stride);
      } else {
        gemm_x16(gk, a->type)(w + size_t(g) * group_bytes, ng, l.k / (l.k_quant ? 256 : 32), x, l.act_row, nc, tile,
                              stride);
      }
      for (int64_t c = 0; c < nc; ++c) {
        const int64_t p = s.order[off + cs + c];
        std::memcpy(dst + p * l.m + g * kItemRows, tile + size_t(c) * stride, stride * sizeof(float));
      }
    }
  }
}

// Expert e's rows [16 j0, 16 j1) against its activation rows: one quantized dot (Quant)
// or one dot_f32 of the converted row (Float) per output, written to the pair's row.
void dot_items(Tensor* node, const IdLayout& l, const Scratch& s, int64_t e, int64_t j0, int64_t j1) {
  const Tensor* a = node->src[0];
  const VecKernels& vk = vec_kernels();
  const int64_t off = s.offsets[e];
  const int64_t n = s.offsets[e + 1] - off;
  auto* dst = static_cast<float*>(node->data);
  auto* conv = reinterpret_cast<float*>(s.extra);
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t r0 = j * kItemRows;
    const int64_t nr = std::min(kItemRows, l.m - r0);
    const void* rows[kItemRows];
    for (int64_t r = 0; r < nr; ++r) {
      rows[r] = l.path == Path::Quant ? static_cast<const void*>(elem_ptr(a, 0, r0 + r, e, 0))
                                      : read_row(a, r0 + r, e, 0, conv + r * l.k);
    }
    for (int64_t c = 0; c < n; ++c) {
      const char* x = s.act + size_t(off + c) * l.act_row;
      float* y = dst + int64_t(s.order[off + c]) * l.m + r0;
      for (int64_t r = 0; r < nr; ++r) {
        y[r] = l.path == Path::Quant ? l.mm.dot(l.k, rows[r], x)
                                     : vk.dot_f32(static_cast<const float*>(rows[r]), reinterpret_cast<const float*>(x), l.k);
      }
    }
  }
}

}  // namespace

bool mul_mat_id_supports(const Tensor* node) {
  const Tensor* a = node->src[0];
  if (node->type != DType::F32 || !node->is_contiguous() || node->src[1]->type != DType::F32) return false;
  if (node->src[2]->type != DType::I32 || a->ne[3] != 1) return false;
  if (is_x16(a->type)) return a->is_contiguous() && a->ne[1] % kGroupRows == 0;
  if (quant_path(a)) return a->nb[0] == dtype_traits(a->type).type_size;  // dense rows
  return rows_readable(a);
}

size_t mul_mat_id_work_size(const Tensor* node, int nth) {
  const IdLayout l = layout_of(node);
  return kAlign + l.map_bytes + l.act_bytes + size_t(nth) * (l.row_bytes + l.extra_bytes);
}

// Routes the pairs to their experts (thread 0 stores the map) and writes each pair's
// activation row at its expert-sorted position, the positions split over the threads.
bool mul_mat_id_prepare(Tensor* node, const KernelParams& p) {
  const IdLayout l = layout_of(node);
  const Scratch s = scratch_of(l, p);
  std::vector<int32_t> offsets(size_t(l.n_expert + 1));
  std::vector<int32_t> order(size_t(l.n_pairs));
  route(node->src[2], l.n_expert, offsets.data(), order.data());
  if (p.ith == 0) {
    std::copy(offsets.begin(), offsets.end(), s.offsets);
    std::copy(order.begin(), order.end(), s.order);
  }
  int64_t s0, s1;
  split_range(l.n_pairs, p.ith, p.nth, &s0, &s1);
  for (int64_t i = s0; i < s1; ++i) fill_row(node, l, order.data(), i, s.act, s.row);
  return true;
}

void mul_mat_id_compute(Tensor* node, const KernelParams& p) {
  const IdLayout l = layout_of(node);
  const Scratch s = scratch_of(l, p);
  for_my_items(l, s.offsets, p, [&](int64_t e, int64_t j0, int64_t j1) {
    if (l.path == Path::X16) {
      x16_items(node, l, s, e, j0, j1);
    } else {
      dot_items(node, l, s, e, j0, j1);
    }
  });
}

}  // namespace tessera::cpu
