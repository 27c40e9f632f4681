// Lookup drafting: n-grams of the sequence's own tokens (prompt and output so far) and
// how often each token followed them, as llama.cpp's context n-gram cache. Repetitive
// text (code, quoted documents, a list that recurs) drafts well; fresh prose rarely.
#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

#include "tessera/speculative.h"

namespace tessera {
namespace {

/// An n-gram of up to kLookupNgramMax tokens; the unused tail is -1.
struct Ngram {
  std::array<TokenId, kLookupNgramMax> t{};
  bool operator==(const Ngram&) const = default;
};

struct NgramHash {
  size_t operator()(const Ngram& g) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the ids
    for (TokenId id : g.t) h = (h ^ uint32_t(id)) * 1099511628211ull;
    return size_t(h);
  }
};

/// The n tokens of `seq` ending at (excluding) index `end`.
Ngram ngram_at(std::span<const TokenId> seq, size_t end, int n) {
  Ngram g;
  g.t.fill(-1);
  for (int k = 0; k < n; ++k) g.t[size_t(k)] = seq[end - size_t(n) + size_t(k)];
  return g;
}

// llama.cpp's thresholds for its context cache (index n - 1).
constexpr int kMinSamples[kLookupNgramMax] = {2, 2, 1, 1};
constexpr int kMinPercent[kLookupNgramMax] = {66, 50, 50, 50};

class LookupDrafter : public Drafter {
 public:
  Status draft(std::span<const TokenId> history, int n_max, Draft& out) override {
    out = Draft{};
    index(history);
    std::vector<TokenId> seq(history.begin(), history.end());
    while (int(out.tokens.size()) < n_max) {
      const TokenId next = continuation(seq);
      if (next < 0) break;
      out.tokens.push_back(next);
      seq.push_back(next);
    }
    return Status::ok();
  }

 private:
  /// Brings the counts up to `history`: the new tokens are added; a history that does not
  /// extend the indexed one (a context shift, another conversation) is indexed afresh.
  void index(std::span<const TokenId> history) {
    const bool extends = history.size() >= seen_.size() &&
                         std::equal(seen_.begin(), seen_.end(), history.begin());
    if (!extends) {
      counts_.clear();
      seen_.clear();
    }
    for (size_t i = seen_.size(); i < history.size(); ++i) {
      for (int n = kLookupNgramMin; n <= kLookupNgramMax && size_t(n) <= i; ++n) {
        ++counts_[ngram_at(history, i, n)][history[i]];
      }
      seen_.push_back(history[i]);
    }
  }

  /// The continuation of the longest qualifying n-gram ending `seq`, or -1.
  TokenId continuation(std::span<const TokenId> seq) const {
    for (int n = kLookupNgramMax; n >= kLookupNgramMin; --n) {
      if (seq.size() < size_t(n)) continue;
      const auto it = counts_.find(ngram_at(seq, seq.size(), n));
      if (it == counts_.end()) continue;
      int sum = 0, best = 0;
      TokenId best_id = -1;
      for (const auto& [id, count] : it->second) {  // ordered by id: ties go to the lowest
        sum += count;
        if (count > best) {
          best = count;
          best_id = id;
        }
      }
      if (sum < kMinSamples[n - 1] || 100 * best < kMinPercent[n - 1] * sum) continue;
      return best_id;
    }
    return -1;
  }

  std::vector<TokenId> seen_;  // the tokens indexed so far
  std::unordered_map<Ngram, std::map<TokenId, int>, NgramHash> counts_;
};

}  // namespace

std::unique_ptr<Drafter> make_lookup_drafter() { return std::make_unique<LookupDrafter>(); }

}  // namespace tessera
