#include "serving/prefix_cache.h"

#include <algorithm>

#include "core/check.h"

namespace tessera::serving {
namespace {

int64_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
  const size_t n = std::min(a.size(), b.size());
  return int64_t(std::mismatch(a.begin(), a.begin() + ptrdiff_t(n), b.begin()).first - a.begin());
}

}  // namespace

PrefixCache::PrefixCache(SeqId first_id, int n_ids) : first_id_(first_id), n_ids_(n_ids) {
  TESSERA_CHECK(first_id >= 0 && n_ids >= 0);
}

PrefixCache::Match PrefixCache::longest_prefix(std::span<const TokenId> tokens,
                                               const std::function<bool(SeqId)>& preferred,
                                               std::span<const float> scales) {
  Entry* best = nullptr;
  int64_t best_len = 0;
  bool best_preferred = false;
  for (Entry& e : entries_) {
    if (!e.has_scales(scales)) continue;
    const int64_t n = common_prefix(e.tokens, tokens);
    if (n == 0 || n < best_len) continue;
    const bool pref = preferred && preferred(e.origin);
    if (n > best_len || (pref && !best_preferred) || (pref == best_preferred && e.last_used > best->last_used)) {
      best = &e;
      best_len = n;
      best_preferred = pref;
    }
  }
  if (best == nullptr) return {};
  best->last_used = ++clock_;
  return {best->holder, best_len, best->origin};
}

SeqId PrefixCache::covering(std::span<const TokenId> tokens, std::span<const float> scales) {
  Entry* best = nullptr;
  for (Entry& e : entries_) {
    if (e.has_scales(scales) && e.tokens.size() >= tokens.size() &&
        common_prefix(e.tokens, tokens) == int64_t(tokens.size()) &&
        (best == nullptr || e.last_used > best->last_used)) {
      best = &e;
    }
  }
  if (best == nullptr) return -1;
  best->last_used = ++clock_;
  return best->holder;
}

std::vector<SeqId> PrefixCache::covered_by(std::span<const TokenId> tokens,
                                           std::span<const float> scales) const {
  std::vector<SeqId> out;
  for (const Entry& e : entries_) {
    if (e.has_scales(scales) && e.tokens.size() <= tokens.size() &&
        common_prefix(e.tokens, tokens) == int64_t(e.tokens.size())) {
      out.push_back(e.holder);
    }
  }
  return out;
}

SeqId PrefixCache::free_holder() const {
  for (SeqId id = first_id_; id < first_id_ + n_ids_; ++id) {
    const bool used = std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.holder == id; });
    if (!used) return id;
  }
  return -1;
}

void PrefixCache::insert(SeqId holder, std::vector<TokenId> tokens, SeqId origin,
                         std::span<const float> scales) {
  TESSERA_CHECK(holder >= first_id_ && holder < first_id_ + n_ids_ && find(holder) == nullptr);
  entries_.push_back({holder, std::move(tokens), ++clock_, origin, {scales.begin(), scales.end()}});
}

SeqId PrefixCache::least_recently_used(SeqId origin, SeqId except) const {
  const Entry* best = nullptr;
  for (const Entry& e : entries_) {
    if ((origin < 0 || e.origin == origin) && e.holder != except &&
        (best == nullptr || e.last_used < best->last_used)) {
      best = &e;
    }
  }
  return best == nullptr ? -1 : best->holder;
}

SeqId PrefixCache::most_recently_used(SeqId origin) const {
  const Entry* best = nullptr;
  for (const Entry& e : entries_) {
    if (e.origin == origin && (best == nullptr || e.last_used > best->last_used)) best = &e;
  }
  return best == nullptr ? -1 : best->holder;
}

std::vector<float> PrefixCache::scales_of(SeqId holder) const {
  for (const Entry& e : entries_) {
    if (e.holder == holder) return e.scales;
  }
  return {};
}

void PrefixCache::erase(SeqId holder) {
  std::erase_if(entries_, [&](const Entry& e) { return e.holder == holder; });
}

int64_t PrefixCache::n_tokens() const {
  int64_t n = 0;
  for (const Entry& e : entries_) n += int64_t(e.tokens.size());
  return n;
}

PrefixCache::Entry* PrefixCache::find(SeqId holder) {
  for (Entry& e : entries_) {
    if (e.holder == holder) return &e;
  }
  return nullptr;
}

}  // namespace tessera::serving
