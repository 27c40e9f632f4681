#include "runtime/kv_cache.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "core/check.h"
#include "tessera/context.h"

namespace tessera {
namespace {

/// The sequences an operation on `seq` touches (all for seq < 0).
SeqMask mask_of(SeqId seq) {
  TESSERA_CHECK(seq < kMaxSeq);
  return seq < 0 ? ~SeqMask{0} : seq_bit(seq);
}

bool in_range(Pos pos, Pos p0, Pos p1) { return pos >= std::max(p0, 0) && (p1 < 0 || pos < p1); }

/// Whether `type` can hold rows of heads of `head_size` (keys: type_k; values: type_v),
/// and whether the backends that would hold them read it. `flag`: the parameter and the
/// command-line flag that chose it, for the messages.
Status check_type(DType type, int64_t head_size, const char* which, const char* flag,
                  std::span<Backend* const> backends) {
  const std::span<const DType> allowed = kv_cache_types();
  if (std::find(allowed.begin(), allowed.end(), type) == allowed.end()) {
    std::string names;
    for (DType t : allowed) names += (names.empty() ? "" : ", ") + std::string(dtype_name(t));
    const uint32_t id = uint32_t(type);
    const std::string name = is_known_dtype(id) ? std::string(dtype_name(type)) : "type id " + std::to_string(id);
    return Status::error("kv cache: " + name + " is not a cache type for the " + which +
                         " (" + std::string(flag) + "); use one of " + names);
  }
  const int64_t block = dtype_traits(type).block_size;
  if (head_size % block != 0) {
    return Status::error("kv cache: the " + std::string(which) + " cannot be stored as " +
                         std::string(dtype_name(type)) + " (" + std::string(flag) + "): its blocks of " + std::to_string(block) +
                         " need a head size that is a multiple of " + std::to_string(block) + ", and this model's is " +
                         std::to_string(head_size));
  }
  for (Backend* b : backends) {
    // The GPU backends' attention reads F16 and F32 caches only.
    if (type != DType::F16 && type != DType::F32 && b->can_hold_tensors() && !b->host_memory()) {
      return Status::error("kv cache: the " + std::string(which) + " cannot be stored as " +
                           std::string(dtype_name(type)) + " (" + std::string(flag) + ") on " + std::string(b->name()) +
                           ": layers on a GPU take an f16 or f32 cache");
    }
  }
  return Status::ok();
}

}  // namespace

std::span<const DType> kv_cache_types() {
  static constexpr DType kTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,  DType::Q4_0,
                                     DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::IQ4_NL};
  return kTypes;
}

Result<std::unique_ptr<KvCache>> KvCache::create(const HParams& h, int64_t n_ctx, int n_seq, DType type_k,
                                                 DType type_v, std::span<Backend* const> layer_backends) {
  TESSERA_RETURN_IF_ERROR(check_type(type_k, h.head_dim, "keys", "type_k, -ctk/--cache-type-k", layer_backends));
  TESSERA_RETURN_IF_ERROR(check_type(type_v, h.head_dim_v, "values", "type_v, -ctv/--cache-type-v", layer_backends));
  for (Backend* b : layer_backends) {
    if (type_k != type_v && b->can_hold_tensors() && !b->host_memory()) {
      return Status::error("kv cache: layers on " + std::string(b->name()) +
                           " take keys and values of one type (-ctk and -ctv the same)");
    }
  }
  if (n_ctx <= 0 || n_ctx > std::numeric_limits<int32_t>::max()) {
    return Status::error("kv cache: " + std::to_string(n_ctx) + " cells is out of range");
  }
  TESSERA_CHECK(int64_t(layer_backends.size()) == h.n_layer);
  std::unique_ptr<KvCache> c = cells_only(n_ctx, n_seq);
  c->type_k_ = type_k;
  c->type_v_ = type_v;
  c->set_mask_rule(h.alibi(), h.n_swa);
  c->set_causal(h.causal);
  for (int64_t il = 0; il < h.n_layer; ++il) {
    KvLayer layer;
    layer.k = c->arena_.new_tensor(type_k, {h.n_embd_kv(), n_ctx, 1, 1}, "cache_k_l" + std::to_string(il));
    layer.v = c->arena_.new_tensor(type_v, {h.n_embd_v(), n_ctx, 1, 1}, "cache_v_l" + std::to_string(il));
    c->layers_.push_back(layer);
  }
  // One buffer per backend for the layers it holds; a backend that cannot allocate
  // (another MPI rank's) leaves its layers without memory here.
  std::vector<Backend*> seen;
  for (Backend* b : layer_backends) {
    if (std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
    seen.push_back(b);
    const size_t align = b->alignment();
    auto bytes = [&](DType type, int64_t row) {
      return (dtype_row_size(type, row) * size_t(n_ctx) + align - 1) / align * align;
    };
    const size_t k_bytes = bytes(type_k, h.n_embd_kv());
    const size_t v_bytes = bytes(type_v, h.n_embd_v());
    std::vector<int64_t> mine;
    for (int64_t il = 0; il < h.n_layer; ++il) {
      if (layer_backends[size_t(il)] == b) mine.push_back(il);
    }
    if (!b->can_hold_tensors()) continue;
    Result<std::unique_ptr<Buffer>> buf = b->alloc_buffer((k_bytes + v_bytes) * mine.size());
    if (!buf) return buf.status().with_context("kv cache");
    (*buf)->clear(0);  // free cells are masked, but must never hold NaN/Inf bytes
    size_t offset = 0;
    for (int64_t il : mine) {
      (*buf)->place(c->layers_[size_t(il)].k, offset);
      (*buf)->place(c->layers_[size_t(il)].v, offset + k_bytes);
      offset += k_bytes + v_bytes;
    }
    c->buffers_.push_back(std::move(*buf));
  }
  return c;
}

std::unique_ptr<KvCache> KvCache::cells_only(int64_t n_ctx, int n_seq) {
  TESSERA_CHECK(n_seq >= 1 && n_seq <= kMaxSeq);
  std::unique_ptr<KvCache> c(new KvCache());
  c->cells_.assign(size_t(n_ctx), KvCell{});
  c->n_seq_ = n_seq;
  return c;
}

int64_t KvCache::bytes() const {
  int64_t total = 0;
  for (const KvLayer& l : layers_) {
    for (const Tensor* t : {l.k, l.v}) total += t->data ? int64_t(t->nbytes()) : 0;
  }
  return total;
}

int64_t KvCache::n_used() const {
  return std::count_if(cells_.begin(), cells_.end(), [](const KvCell& c) { return !c.free(); });
}

Result<std::vector<int32_t>> KvCache::find_slots(std::span<const SeqMask> seqs) const {
  const int64_t n = n_ctx();
  std::vector<bool> taken(size_t(n), false);
  std::vector<int64_t> cursor(size_t(n_seq_) + 1, -1);  // per region, then the whole cache
  auto next_free = [&](size_t slot, int64_t begin, int64_t end) -> int64_t {
    int64_t& j = cursor[slot];
    if (j < begin) j = begin;
    while (j < end && (!cells_[size_t(j)].free() || taken[size_t(j)])) ++j;
    return j < end ? j : -1;
  };
  std::vector<int32_t> cells;
  cells.reserve(seqs.size());
  for (SeqMask m : seqs) {
    TESSERA_CHECK(m != 0);
    const int s = std::countr_zero(m);  // its lowest sequence id
    // Sequences without a home region (ids >= the region count) take any free cell.
    int64_t j = s < n_seq_ ? next_free(size_t(s), n * s / n_seq_, n * (s + 1) / n_seq_) : -1;
    if (j < 0) j = next_free(size_t(n_seq_), 0, n);
    if (j < 0) {
      return Status::error("kv cache: context full: " + std::to_string(seqs.size()) + " tokens need cells, " +
                           std::to_string(cells.size()) + " of " + std::to_string(n) +
                           " cells are free (remove sequences with seq_rm or shift the context)");
    }
    taken[size_t(j)] = true;
    cells.push_back(int32_t(j));
  }
  return cells;
}

void KvCache::store(int32_t cell, Pos pos, SeqMask seqs, TokenId token) {
  TESSERA_CHECK(cell >= 0 && cell < n_ctx() && pos >= 0 && seqs != 0);
  cells_[size_t(cell)] = KvCell{pos, 0, token, seqs};
}

int64_t KvCache::n_kv() const {
  int64_t last = -1;
  for (int64_t j = n_ctx() - 1; j >= 0; --j) {
    if (!cells_[size_t(j)].free()) {
      last = j;
      break;
    }
  }
  const int64_t padded = (last + 1 + kPad - 1) / kPad * kPad;
  return std::min(std::max<int64_t>(padded, kPad), n_ctx());
}

std::pair<int64_t, int64_t> KvCache::window(SeqMask seqs, Pos max_pos) const {
  int64_t first = -1, last = -1;
  for (int64_t j = 0; j < n_ctx(); ++j) {
    const KvCell& c = cells_[size_t(j)];
    if ((c.seqs & seqs) == 0 || c.pos > max_pos) continue;
    if (first < 0) first = j;
    last = j;
  }
  if (first < 0) return {0, std::min(kPad, n_ctx())};  // nothing visible: any window
  return {first / kPad * kPad, std::min((last + kPad) / kPad * kPad, n_ctx())};
}

void KvCache::fill_mask(std::span<const Pos> positions, std::span<const SeqMask> seqs, int64_t kv_begin,
                        int64_t n_kv, float* mask, bool window) const {
  TESSERA_CHECK(positions.size() == seqs.size() && kv_begin >= 0 && kv_begin + n_kv <= n_ctx());
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < positions.size(); ++i) {
    float* row = mask + i * size_t(n_kv);
    for (int64_t j = 0; j < n_kv; ++j) {
      const KvCell& c = cells_[size_t(kv_begin + j)];
      const bool visible = (c.seqs & seqs[i]) != 0 && (!causal_ || c.pos <= positions[i]) &&
                           (!window || n_swa_ == 0 || positions[i] - c.pos < n_swa_);
      row[j] = !visible ? neg_inf : alibi_ ? -float(positions[i] - c.pos) : 0.0f;
    }
  }
}

void KvCache::seq_rm(SeqId seq, Pos p0, Pos p1) {
  const SeqMask m = mask_of(seq);
  for (KvCell& c : cells_) {
    if ((c.seqs & m) == 0 || !in_range(c.pos, p0, p1)) continue;
    c.seqs &= ~m;
    if (c.free()) c = KvCell{};
  }
}

void KvCache::seq_cp(SeqId src, SeqId dst, Pos p0, Pos p1) {
  const SeqMask from = mask_of(src);
  const SeqMask to = mask_of(dst);
  for (KvCell& c : cells_) {
    if ((c.seqs & from) != 0 && in_range(c.pos, p0, p1)) c.seqs |= to;
  }
}

Status KvCache::seq_copy(SeqId src, SeqId dst, Pos p0, Pos p1) {
  const SeqMask from = mask_of(src);
  std::vector<int32_t> sources;
  for (int64_t j = 0; j < n_ctx(); ++j) {
    const KvCell& c = cells_[size_t(j)];
    if ((c.seqs & from) != 0 && in_range(c.pos, p0, p1)) sources.push_back(int32_t(j));
  }
  std::sort(sources.begin(), sources.end(),
            [&](int32_t a, int32_t b) { return cells_[size_t(a)].pos < cells_[size_t(b)].pos; });
  const std::vector<SeqMask> masks(sources.size(), mask_of(dst));
  Result<std::vector<int32_t>> targets = find_slots(masks);
  if (!targets) return targets.status().with_context("seq_copy");
  for (size_t i = 0; i < sources.size(); ++i) {
    const int32_t from_cell = sources[i], to_cell = (*targets)[i];
    for (const KvLayer& l : layers_) {
      for (const Tensor* t : {l.k, l.v}) {
        if (t->data == nullptr) continue;  // another MPI rank's layer
        Backend& be = t->buffer->backend();
        if (!be.host_memory()) {  // a GPU's cache: the row goes through the host
          std::vector<char> row(t->nb[1]);
          be.get_tensor(t, row.data(), size_t(from_cell) * t->nb[1], row.size());
          be.set_tensor(const_cast<Tensor*>(t), row.data(), size_t(to_cell) * t->nb[1], row.size());
          continue;
        }
        char* base = static_cast<char*>(t->data);
        std::memcpy(base + size_t(to_cell) * t->nb[1], base + size_t(from_cell) * t->nb[1], t->nb[1]);
      }
    }
    KvCell c = cells_[size_t(from_cell)];
    c.seqs = mask_of(dst);
    cells_[size_t(to_cell)] = c;
    if (c.shift != 0) has_shift_ = true;
  }
  return Status::ok();
}

int64_t KvCache::home_free(SeqId seq) const {
  if (seq < 0 || seq >= n_seq_) return 0;
  const int64_t n = n_ctx();
  int64_t free = 0;
  for (int64_t j = n * seq / n_seq_; j < n * (seq + 1) / n_seq_; ++j) free += cells_[size_t(j)].free() ? 1 : 0;
  return free;
}

void KvCache::seq_keep(SeqId seq) {
  const SeqMask m = mask_of(seq);
  for (KvCell& c : cells_) {
    c.seqs &= m;
    if (c.free()) c = KvCell{};
  }
}

Status KvCache::seq_add(SeqId seq, Pos p0, Pos p1, Pos delta) {
  const SeqMask m = mask_of(seq);
  for (const KvCell& c : cells_) {
    if ((c.seqs & m) != 0 && in_range(c.pos, p0, p1) && (c.seqs & ~m) != 0) {
      return Status::error("seq_add: the cell at position " + std::to_string(c.pos) +
                           " of sequence " + std::to_string(seq) +
                           " is shared with other sequences; shifting it would move them too");
    }
  }
  if (delta == 0) return Status::ok();
  for (KvCell& c : cells_) {
    if ((c.seqs & m) == 0 || !in_range(c.pos, p0, p1)) continue;
    c.pos += delta;
    c.shift += delta;
    has_shift_ = true;
    if (c.pos < 0) c = KvCell{};
  }
  return Status::ok();
}

Pos KvCache::seq_pos_max(SeqId seq) const {
  const SeqMask m = mask_of(seq);
  Pos best = -1;
  for (const KvCell& c : cells_) {
    if ((c.seqs & m) != 0) best = std::max(best, c.pos);
  }
  return best;
}

Pos KvCache::seq_pos_min(SeqId seq) const {
  const SeqMask m = mask_of(seq);
  Pos best = -1;
  for (const KvCell& c : cells_) {
    if ((c.seqs & m) != 0 && (best < 0 || c.pos < best)) best = c.pos;
  }
  return best;
}

std::array<Pos, kMaxSeq> KvCache::seq_pos_maxes() const {
  std::array<Pos, kMaxSeq> best;
  best.fill(-1);
  for (const KvCell& c : cells_) {
    for (SeqMask m = c.seqs; m != 0; m &= m - 1) {
      Pos& b = best[size_t(std::countr_zero(m))];
      b = std::max(b, c.pos);
    }
  }
  return best;
}

std::vector<TokenId> KvCache::seq_tokens(SeqId seq) const {
  const SeqMask m = mask_of(seq);
  std::vector<std::pair<Pos, TokenId>> found;
  for (const KvCell& c : cells_) {
    if ((c.seqs & m) != 0) found.emplace_back(c.pos, c.token);
  }
  std::sort(found.begin(), found.end());
  std::vector<TokenId> tokens;
  tokens.reserve(found.size());
  for (const auto& [pos, token] : found) tokens.push_back(token);
  return tokens;
}

std::vector<int32_t> KvCache::shifts(int64_t n) const {
  TESSERA_CHECK(n <= n_ctx());
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) out[size_t(j)] = cells_[size_t(j)].shift;
  return out;
}

void KvCache::clear_shifts() {
  for (KvCell& c : cells_) c.shift = 0;
  has_shift_ = false;
}

void KvCache::set_cell(int64_t i, const KvCell& c) {
  TESSERA_CHECK(i >= 0 && i < n_ctx());
  cells_[size_t(i)] = c.free() ? KvCell{} : c;
  if (c.shift != 0) has_shift_ = true;
}

void KvCache::clear() {
  std::fill(cells_.begin(), cells_.end(), KvCell{});
  has_shift_ = false;
}

}  // namespace tessera
