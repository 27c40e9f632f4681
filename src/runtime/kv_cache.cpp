#include "runtime/kv_cache.h"

#include <algorithm>
#include <limits>

namespace tessera {

Result<std::unique_ptr<KvCache>> KvCache::create(const HParams& h, int64_t n_ctx, DType type,
                                                 Backend& backend) {
  if (type != DType::F16 && type != DType::F32) {
    return Status::error("kv cache: type " + std::string(dtype_name(type)) +
                         " is not supported (use f16 or f32)");
  }
  std::unique_ptr<KvCache> c(new KvCache());
  c->type_ = type;
  c->cell_pos_.assign(size_t(n_ctx), -1);
  const size_t align = backend.alignment();
  const size_t tensor_bytes = (dtype_row_size(type, h.n_embd_kv()) * size_t(n_ctx) + align - 1) /
                              align * align;
  Result<std::unique_ptr<Buffer>> buf = backend.alloc_buffer(tensor_bytes * 2 * size_t(h.n_layer));
  if (!buf) return buf.status().with_context("kv cache");
  c->buffer_ = std::move(*buf);
  c->buffer_->clear(0);  // free cells are masked, but must never hold NaN/Inf bytes
  size_t offset = 0;
  for (int64_t il = 0; il < h.n_layer; ++il) {
    KvLayer layer;
    layer.k = c->arena_.new_tensor(type, {h.n_embd_kv(), n_ctx, 1, 1}, "cache_k_l" + std::to_string(il));
    layer.v = c->arena_.new_tensor(type, {h.n_embd_kv(), n_ctx, 1, 1}, "cache_v_l" + std::to_string(il));
    c->buffer_->place(layer.k, offset);
    offset += tensor_bytes;
    c->buffer_->place(layer.v, offset);
    offset += tensor_bytes;
    c->layers_.push_back(layer);
  }
  return c;
}

Result<std::vector<int32_t>> KvCache::claim(std::span<const int32_t> positions) {
  std::vector<int32_t> cells;
  cells.reserve(positions.size());
  for (size_t j = 0; j < cell_pos_.size() && cells.size() < positions.size(); ++j) {
    if (cell_pos_[j] < 0) cells.push_back(int32_t(j));
  }
  if (cells.size() < positions.size()) {
    return Status::error("kv cache: full (" + std::to_string(n_ctx()) + " cells); " +
                         std::to_string(positions.size()) + " more tokens do not fit");
  }
  for (size_t i = 0; i < cells.size(); ++i) cell_pos_[size_t(cells[i])] = positions[i];
  return cells;
}

int64_t KvCache::n_kv() const {
  int64_t last = -1;
  for (int64_t j = n_ctx() - 1; j >= 0; --j) {
    if (cell_pos_[size_t(j)] >= 0) {
      last = j;
      break;
    }
  }
  const int64_t padded = (last + 1 + kPad - 1) / kPad * kPad;
  return std::min(std::max<int64_t>(padded, kPad), n_ctx());
}

void KvCache::fill_mask(std::span<const int32_t> positions, int64_t n_kv, float* mask) const {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < positions.size(); ++i) {
    float* row = mask + i * size_t(n_kv);
    for (int64_t j = 0; j < n_kv; ++j) {
      const int32_t p = cell_pos_[size_t(j)];
      row[j] = (p >= 0 && p <= positions[i]) ? 0.0f : neg_inf;
    }
  }
}

void KvCache::clear() { std::fill(cell_pos_.begin(), cell_pos_.end(), -1); }

}  // namespace tessera
