// The bookkeeping of the prefix cache: which holder sequence keeps which tokens in the KV
// cache, and when each was last used. The Engine moves the cells (Context::seq_cp /
// seq_rm); this class only decides.
//
// A cached prefix is a sequence id of its own ("holder", ids the engine never decodes
// into) whose cells hold positions 0 .. n-1 of `tokens`. Prefixes that share a start share
// its cells, because a request that reused a prefix got those cells by seq_cp and leaves
// them to the next holder: the KV cache's per-cell sequence sets do the sharing.
//
// Lookup compares the prompt with every entry. There are at most 63 entries (one per
// free sequence id of the cache's 64) and the comparison stops at the first difference,
// so a lookup costs at most 63 x the prompt length integer compares (about 0.1 ms for a
// 4096-token prompt): cheaper than any index would be to keep up to date.
//
// Each entry is tagged with the LoRA adapter scales its cells were computed with (empty
// without adapters): the same tokens under other scales have other keys and values, so
// lookups match only entries with equal scales.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tessera/batch.h"

namespace tessera::serving {

class PrefixCache {
 public:
  /// Holders take the sequence ids [first_id, first_id + n_ids).
  PrefixCache(SeqId first_id, int n_ids);

  struct Match {
    SeqId holder = -1;   // -1: nothing in common
    int64_t length = 0;  // tokens in common, counted from the start
    SeqId origin = -1;   // the slot whose home region holds the entry's cells
  };
  /// Lookups consider only the entries computed with adapter scales `scales`.
  /// The entry that shares the longest start with `tokens`, marked as used now. Among
  /// equals: one whose origin `preferred` says yes to (e.g. a free slot, where the prefix
  /// can be shared in place), then the most recently used.
  Match longest_prefix(std::span<const TokenId> tokens,
                       const std::function<bool(SeqId origin)>& preferred = nullptr,
                       std::span<const float> scales = {});
  /// The entry whose tokens start with all of `tokens` (then storing them adds nothing;
  /// the most recently used of several), marked as used now; -1 when none.
  SeqId covering(std::span<const TokenId> tokens, std::span<const float> scales = {});
  /// The entries whose tokens are a start of `tokens` (a new entry for `tokens` makes
  /// them redundant).
  std::vector<SeqId> covered_by(std::span<const TokenId> tokens,
                                std::span<const float> scales = {}) const;

  /// A holder id no entry uses, -1 when all are taken.
  SeqId free_holder() const;
  /// Records that `holder` (free) now keeps `tokens`, in cells of the home region of slot
  /// `origin`, computed with adapter scales `scales`; it is the most recently used.
  void insert(SeqId holder, std::vector<TokenId> tokens, SeqId origin,
              std::span<const float> scales = {});
  /// The least recently used entry's holder (among those of slot `origin` when it is not
  /// -1, and other than `except`), -1 when there is none.
  SeqId least_recently_used(SeqId origin = -1, SeqId except = -1) const;
  /// The most recently used entry's holder among those of slot `origin`, -1 when none.
  SeqId most_recently_used(SeqId origin) const;
  /// The adapter scales `holder`'s entry was computed with (empty: none, or no entry).
  std::vector<float> scales_of(SeqId holder) const;
  /// Forgets `holder`'s entry (its cells are the caller's to remove).
  void erase(SeqId holder);

  int size() const { return int(entries_.size()); }
  /// Tokens of all entries (shared starts counted once per entry).
  int64_t n_tokens() const;
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    SeqId holder;
    std::vector<TokenId> tokens;
    uint64_t last_used;
    SeqId origin;
    std::vector<float> scales;  // the adapter scales its cells were computed with

    bool has_scales(std::span<const float> s) const {
      return std::equal(scales.begin(), scales.end(), s.begin(), s.end());
    }
  };
  Entry* find(SeqId holder);

  SeqId first_id_;
  int n_ids_;
  uint64_t clock_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace tessera::serving
