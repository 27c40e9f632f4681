// The grammar sampler step: forbids the tokens whose text would leave the grammar.
//
// Token texts are decoded to code points once. Candidates are then checked all together,
// one code point at a time: those whose next code point the same stacks accept form a
// group, whose next parse stacks are computed once. Candidates whose code point no stack
// accepts are rejected at once: at the first code point, most of a vocabulary usually.
#include "runtime/grammar/grammar_step.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "runtime/grammar/matcher_state.h"
#include "tessera/grammar.h"
#include "tessera/tokenizer.h"

namespace tessera {
namespace {

using grammar::PartialRange;
using grammar::Rules;
using grammar::Stack;

/// Every token's text, decoded once.
class TokenTable {
 public:
  struct Entry {
    uint32_t piece_begin = 0, piece_end = 0;  // bytes in pieces_
    uint32_t cpt_begin = 0, cpt_end = 0;      // code points in cpts_ (decoded on its own)
    PartialRange partial;                     // a trailing incomplete character, if any
    bool has_partial = false;
    bool valid = false;  // non-empty and UTF-8 on its own (a truncated end allowed)
    bool eog = false;    // ends generation
  };

  TokenTable(const Tokenizer& tok, bool render_special) {
    entries_.resize(static_cast<size_t>(tok.n_vocab()));
    std::vector<uint32_t> cpts;
    std::string partial;
    for (TokenId id = 0; id < tok.n_vocab(); ++id) {
      Entry& e = entries_[static_cast<size_t>(id)];
      e.eog = tok.is_eog(id);
      const std::string piece = tok.token_to_piece(id, render_special);
      e.piece_begin = static_cast<uint32_t>(pieces_.size());
      pieces_ += piece;
      e.piece_end = static_cast<uint32_t>(pieces_.size());
      cpts.clear();
      e.valid = !piece.empty() && grammar::decode_utf8(piece, cpts, partial);
      e.cpt_begin = static_cast<uint32_t>(cpts_.size());
      if (e.valid) cpts_.insert(cpts_.end(), cpts.begin(), cpts.end());
      e.cpt_end = static_cast<uint32_t>(cpts_.size());
      e.has_partial = e.valid && !partial.empty();
      if (e.has_partial) e.partial = grammar::partial_range(partial);
    }
  }

  bool contains(TokenId id) const { return id >= 0 && static_cast<size_t>(id) < entries_.size(); }
  const Entry& entry(TokenId id) const { return entries_[static_cast<size_t>(id)]; }
  std::string_view piece(const Entry& e) const {
    return std::string_view(pieces_).substr(e.piece_begin, e.piece_end - e.piece_begin);
  }
  const uint32_t* cpts(uint32_t offset) const { return cpts_.data() + offset; }

 private:
  std::vector<Entry> entries_;
  std::string pieces_;
  std::vector<uint32_t> cpts_;
};

/// A candidate on its way through the grammar: the code points still to match.
struct Item {
  size_t index;  // in Candidates::items
  const uint32_t* cur;
  const uint32_t* end;
  const PartialRange* partial;  // a trailing incomplete character, or nullptr
};

/// Which of (at most 64) stacks accept a code point, as a bit mask; cached per code point.
class AcceptMasks {
 public:
  AcceptMasks(const Rules& rules, const std::vector<Stack>& stacks)
      : rules_(rules), stacks_(stacks) {}
  uint64_t operator()(uint32_t cpt) {
    if (cpt < ascii_.size()) {
      if (!ascii_known_[cpt]) {
        ascii_[cpt] = compute(cpt);
        ascii_known_[cpt] = true;
      }
      return ascii_[cpt];
    }
    const auto [it, fresh] = other_.try_emplace(cpt, 0);
    if (fresh) it->second = compute(cpt);
    return it->second;
  }

 private:
  uint64_t compute(uint32_t cpt) const {
    uint64_t mask = 0;
    for (size_t i = 0; i < stacks_.size(); ++i) {
      const Stack& s = stacks_[i];
      if (!s.empty() && rules_.charsets[rules_.symbols[s.back()].index].contains(cpt))
        mask |= uint64_t{1} << i;
    }
    return mask;
  }
  const Rules& rules_;
  const std::vector<Stack>& stacks_;
  std::array<uint64_t, 128> ascii_{};
  std::bitset<128> ascii_known_;
  std::unordered_map<uint32_t, uint64_t> other_;
};

/// Adds to `rejected` the candidates of `items` that no stack of `stacks` can take to the
/// end of their text. Items are grouped by the stacks that accept their next code point
/// (with more than 64 stacks: by the code point itself); a group moves on together to
/// the stacks that follow, or is rejected at once when no stack accepts it.
void reject(const Rules& rules, const std::vector<Stack>& stacks, const std::vector<Item>& items,
            std::vector<size_t>& rejected) {
  const bool by_mask = stacks.size() <= 64;
  AcceptMasks masks(rules, stacks);
  struct Group {
    uint32_t cpt;  // a code point of the group: all of them lead to the same stacks
    std::vector<Item> items;
  };
  std::unordered_map<uint64_t, size_t> group_of;
  std::vector<Group> groups;
  for (const Item& it : items) {
    if (it.cur == it.end) {  // every code point matched; a partial one must still be possible
      const bool fits =
          !it.partial || std::any_of(stacks.begin(), stacks.end(), [&](const Stack& s) {
            return grammar::partial_fits(rules, s, *it.partial);
          });
      if (!fits) rejected.push_back(it.index);
      continue;
    }
    const uint64_t key = by_mask ? masks(*it.cur) : *it.cur;
    if (by_mask && key == 0) {
      rejected.push_back(it.index);
      continue;
    }
    const auto [g, fresh] = group_of.try_emplace(key, groups.size());
    if (fresh) groups.push_back(Group{*it.cur, {}});
    groups[g->second].items.push_back(Item{it.index, it.cur + 1, it.end, it.partial});
  }
  for (const Group& group : groups) {
    const std::vector<Stack> next = grammar::advance_stacks(rules, stacks, group.cpt);
    if (next.empty()) {
      for (const Item& it : group.items) rejected.push_back(it.index);
    } else {
      reject(rules, next, group.items, rejected);
    }
  }
}

/// Token texts decoded after a pending incomplete character (the rare slow path: the
/// pending bytes and the token's decode together).
class JoinedTexts {
 public:
  void clear() {
    cpts_.clear();
    texts_.clear();
  }
  /// Decodes pending + piece for candidate `index`; false when that is not UTF-8.
  bool add(size_t index, const std::string& pending, std::string_view piece) {
    std::vector<uint32_t> cpts;
    std::string partial;
    if (!grammar::decode_utf8(pending + std::string(piece), cpts, partial)) return false;
    Text t{index, static_cast<uint32_t>(cpts_.size()), 0, !partial.empty(), {}};
    cpts_.insert(cpts_.end(), cpts.begin(), cpts.end());
    t.end = static_cast<uint32_t>(cpts_.size());
    if (t.has_partial) t.partial = grammar::partial_range(partial);
    texts_.push_back(t);
    return true;
  }
  /// Items for every text added; they point into this object until the next clear().
  void append_items(std::vector<Item>& items) const {
    for (const Text& t : texts_) {
      items.push_back(Item{t.index, cpts_.data() + t.begin, cpts_.data() + t.end,
                           t.has_partial ? &t.partial : nullptr});
    }
  }

 private:
  struct Text {
    size_t index;
    uint32_t begin, end;  // in cpts_
    bool has_partial;
    PartialRange partial;
  };
  std::vector<uint32_t> cpts_;
  std::vector<Text> texts_;
};

class GrammarStep : public grammar::TextGrammarStep {
 public:
  GrammarStep(std::shared_ptr<const Grammar> g, const Tokenizer& tok, bool render_special)
      : matcher_(std::move(g)), table_(tok, render_special) {}

  std::string name() const override { return "grammar"; }
  void apply(Candidates& c) override;
  Status accept(TokenId token, bool from_prompt) override;
  Status accept_text(std::string_view text) override;
  std::string_view token_text(TokenId token) const override {
    return table_.contains(token) ? table_.piece(table_.entry(token)) : std::string_view();
  }
  bool token_ends(TokenId token) const override {
    return table_.contains(token) && table_.entry(token).eog;
  }
  void reset() override {
    matcher_.reset();
    ended_ = false;
  }
  bool done() const override { return ended_ || matcher_.is_complete(); }

 private:
  /// Items for the candidates that need the grammar's verdict; forbids the others.
  std::vector<Item> collect(Candidates& c);

  GrammarMatcher matcher_;
  TokenTable table_;
  bool ended_ = false;
  JoinedTexts joined_;
};

constexpr float kForbidden = -std::numeric_limits<float>::infinity();

/// `text` for an error message: control characters shown as '?'.
std::string printable(std::string_view text) {
  std::string shown;
  for (const char ch : text) shown += (static_cast<uint8_t>(ch) < 0x20) ? '?' : ch;
  return shown;
}

std::vector<Item> GrammarStep::collect(Candidates& c) {
  const std::string& pending = matcher_.state().pending;
  const bool can_end = matcher_.can_end();
  std::vector<Item> items;
  items.reserve(c.items.size());
  joined_.clear();
  for (size_t i = 0; i < c.items.size(); ++i) {
    Candidate& cand = c.items[i];
    if (std::isinf(cand.logit) && cand.logit < 0) continue;
    if (!table_.contains(cand.id)) {
      cand.logit = kForbidden;
      continue;
    }
    const TokenTable::Entry& e = table_.entry(cand.id);
    if (e.eog || e.piece_begin == e.piece_end) {  // no text: allowed only to end
      if (!(e.eog && can_end)) cand.logit = kForbidden;
    } else if (!pending.empty()) {
      if (!joined_.add(i, pending, table_.piece(e))) cand.logit = kForbidden;
    } else if (!e.valid) {
      cand.logit = kForbidden;
    } else {
      items.push_back(Item{i, table_.cpts(e.cpt_begin), table_.cpts(e.cpt_end),
                           e.has_partial ? &e.partial : nullptr});
    }
  }
  joined_.append_items(items);
  return items;
}

void GrammarStep::apply(Candidates& c) {
  std::vector<size_t> rejected;
  reject(matcher_.grammar().rules(), matcher_.state().stacks, collect(c), rejected);
  for (const size_t i : rejected) c.items[i].logit = kForbidden;
  c.sorted = false;  // forbidden tokens may sit anywhere now
}

Status GrammarStep::accept(TokenId token, bool from_prompt) {
  if (from_prompt) return Status::ok();
  const auto refuse = [&](const std::string& why) {
    return Status::error("grammar: token " + std::to_string(token) + " " + why);
  };
  if (!table_.contains(token)) return refuse("is outside the vocabulary");
  const TokenTable::Entry& e = table_.entry(token);
  if (e.eog) {
    if (!matcher_.can_end()) return refuse("ends the text where the grammar cannot end");
    ended_ = true;
    return Status::ok();
  }
  const std::string_view piece = table_.piece(e);
  if (piece.empty()) return refuse("has no text");
  if (ended_ || !matcher_.accept_text(piece)) {
    return refuse("('" + printable(piece) + "') is not allowed by the grammar here");
  }
  return Status::ok();
}

Status GrammarStep::accept_text(std::string_view text) {
  if (ended_ || !matcher_.accept_text(text)) {
    return Status::error("grammar: the text '" + printable(text) +
                         "' is not allowed by the grammar here");
  }
  return Status::ok();
}

}  // namespace

std::unique_ptr<grammar::TextGrammarStep> grammar::make_text_grammar_step(
    std::shared_ptr<const Grammar> grammar, const Tokenizer& tokenizer, bool render_special) {
  return std::make_unique<GrammarStep>(std::move(grammar), tokenizer, render_special);
}

std::unique_ptr<SamplerStep> make_grammar_step(std::shared_ptr<const Grammar> grammar,
                                               const Tokenizer& tokenizer, bool render_special) {
  return grammar::make_text_grammar_step(std::move(grammar), tokenizer, render_special);
}

}  // namespace tessera
