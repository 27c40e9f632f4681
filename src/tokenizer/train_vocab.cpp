#include "tokenizer/train_vocab.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <utility>

#include "tessera/gguf.h"
#include "tessera/tokenizer.h"
#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace tessera {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581, the encoder's space
constexpr int64_t kFixedTokens = 3 + 256;
const char* const kSpecialTexts[] = {"<unk>", "<s>", "</s>"};
constexpr int32_t kSpecialTypes[] = {static_cast<int32_t>(TokenType::Unknown),
                                     static_cast<int32_t>(TokenType::Control),
                                     static_cast<int32_t>(TokenType::Control)};

/// One symbol of the encoder's split (SpmAlgorithm: as many bytes as the lead byte says,
/// cut at the end) and whether it may be part of a piece.
struct Char {
  size_t len;
  bool learnable;
};

Char char_at(std::string_view text, size_t pos) {
  const auto lead = static_cast<uint8_t>(text[pos]);
  if (lead < 0x80) return {1, lead >= 0x20 && lead != 0x7F};  // controls fall back to bytes
  const size_t len = std::min(tok::utf8_sequence_length(lead), text.size() - pos);
  const tok::Utf8Scan scan = tok::scan_utf8(text, pos);
  return {len, scan.kind == tok::Utf8Kind::Valid && scan.len == len};
}

/// Word bodies (views into the text) and their counts: [1] words after a space (whose
/// pieces start with "▁"), [0] words after a control character or invalid byte.
struct WordTable {
  std::unordered_map<std::string_view, int64_t> counts[2];
};

WordTable count_words(std::string_view text) {
  WordTable table;
  bool spaced = true;  // add_space_prefix: the text starts after a space
  size_t start = 0;
  const auto flush = [&](size_t end) {
    if (spaced || end > start) ++table.counts[spaced ? 1 : 0][text.substr(start, end - start)];
  };
  for (size_t pos = 0; pos < text.size();) {
    const bool space = text[pos] == ' ' || text.substr(pos, kSpaceSymbol.size()) == kSpaceSymbol;
    const Char c =
        space ? Char{text[pos] == ' ' ? 1 : kSpaceSymbol.size(), true} : char_at(text, pos);
    if (space || !c.learnable) {
      flush(pos);
      spaced = space;
      start = pos + c.len;
    }
    pos += c.len;
  }
  flush(text.size());
  return table;
}

/// Every character of the words with its count; most frequent first, ties by text.
std::vector<std::pair<std::string_view, int64_t>> count_chars(const WordTable& table) {
  std::unordered_map<std::string_view, int64_t> counts;
  for (int spaced = 0; spaced < 2; ++spaced) {
    for (const auto& [body, n] : table.counts[spaced]) {
      if (spaced) counts[kSpaceSymbol] += n;
      for (size_t pos = 0; pos < body.size();) {
        const size_t len = char_at(body, pos).len;
        counts[body.substr(pos, len)] += n;
        pos += len;
      }
    }
  }
  std::vector<std::pair<std::string_view, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second > b.second || (a.second == b.second && a.first < b.first);
  });
  return sorted;
}

/// How many of the sorted characters it takes to cover `coverage` of all, at most `cap`.
/// "▁" is always one of them, moved up if it must be: the encoder puts one before every
/// text, and the decoder drops that space only from a normal token.
size_t select_alphabet(std::vector<std::pair<std::string_view, int64_t>>& chars, double coverage,
                       size_t cap) {
  int64_t total = 0;
  for (const auto& c : chars) total += c.second;
  int64_t covered = 0;
  size_t n = 0;
  while (n < chars.size() && n < cap &&
         static_cast<double>(covered) < coverage * static_cast<double>(total)) {
    covered += chars[n++].second;
  }
  const auto space = std::find_if(chars.begin(), chars.end(),
                                  [](const auto& c) { return c.first == kSpaceSymbol; });
  if (space == chars.end()) {
    chars.insert(chars.begin() + static_cast<ptrdiff_t>(n), {kSpaceSymbol, 0});
  } else if (space >= chars.begin() + static_cast<ptrdiff_t>(n)) {
    std::rotate(chars.begin() + static_cast<ptrdiff_t>(n), space, space + 1);
  } else {
    return n;
  }
  return n + 1;
}

/// The texts of the fixed tokens, by id: <unk>, <s>, </s>, <0x00> .. <0xFF>.
std::vector<std::string> fixed_texts() {
  std::vector<std::string> texts(std::begin(kSpecialTexts), std::end(kSpecialTexts));
  for (int byte = 0; byte < 256; ++byte) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", byte);
    texts.emplace_back(hex);
  }
  return texts;
}

/// True when a loader would not read `piece` as a normal token of its own: the text of a
/// fixed token (the later id would win the lookup, and llama.cpp refuses repeated texts),
/// or a text the loaders take for a role and turn into a control or user-defined token.
/// The role lists live in Vocab; asking it keeps the two from drifting apart. Every such
/// text holds '<'.
bool is_reserved(const std::string& piece, const std::vector<std::string>& fixed) {
  if (piece.find('<') == std::string::npos) return false;
  if (std::find(fixed.begin(), fixed.end(), piece) != fixed.end()) return true;
  const std::vector<int32_t> types = {kSpecialTypes[0], kSpecialTypes[1], kSpecialTypes[2],
                                      static_cast<int32_t>(TokenType::Normal)};
  Result<tok::Vocab> probe = tok::Vocab::from_lists(
      "llama", {kSpecialTexts[0], kSpecialTexts[1], kSpecialTexts[2], piece}, {}, types,
      tok::default_special_ids("llama"), tok::default_flags("llama"));
  return !probe || probe->token(3).type != TokenType::Normal;
}

/// BPE over a word-frequency table with incremental pair counts.
class Trainer {
 public:
  Trainer(const VocabTrainParams& p, const VocabTrainProgress& progress)
      : p_(p), progress_(progress), fixed_texts_(fixed_texts()) {}

  Result<TrainedVocab> run(std::string_view text);

 private:
  struct Word {
    std::vector<int32_t> syms;
    int64_t count;
  };
  struct PairStats {
    int64_t count = 0;
    bool banned = false;
    // Words that may hold the pair: stale entries (no longer holding it) are skipped, and
    // repeats removed, when the pair is merged.
    std::vector<int32_t> words;
  };
  struct Entry {  // heap entry: the pair's count when pushed
    int64_t count;
    uint64_t pair;
  };

  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static int32_t left(uint64_t pair) { return static_cast<int32_t>(pair >> 32); }
  static int32_t right(uint64_t pair) { return static_cast<int32_t>(pair & 0xFFFFFFFFu); }

  /// Heap order (x below y): a lower count, or at equal counts larger texts, so that ties go
  /// to the pair whose left text, then right text, sorts first.
  bool lower(const Entry& x, const Entry& y) const {
    if (x.count != y.count) return x.count < y.count;
    const std::string& xl = text_[static_cast<size_t>(left(x.pair))];
    const std::string& yl = text_[static_cast<size_t>(left(y.pair))];
    if (xl != yl) return xl > yl;
    return text_[static_cast<size_t>(right(x.pair))] > text_[static_cast<size_t>(right(y.pair))];
  }
  void push(Entry e) {
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(),
                   [this](const Entry& x, const Entry& y) { return lower(x, y); });
  }
  Entry pop() {
    std::pop_heap(heap_.begin(), heap_.end(),
                  [this](const Entry& x, const Entry& y) { return lower(x, y); });
    const Entry e = heap_.back();
    heap_.pop_back();
    return e;
  }

  int32_t symbol(std::string text, int32_t n_chars);
  void build_words(const WordTable& table);
  void count_pairs();
  bool next_pair(uint64_t* pair);
  bool refused(uint64_t pair) const;
  bool joins_fixed_text(const std::string& piece) const;
  void merge(uint64_t pair);
  void merge_in_word(int32_t w, int32_t a, int32_t b, int32_t m);
  TrainedVocab assemble(size_t n_alphabet) const;

  const VocabTrainParams& p_;
  const VocabTrainProgress& progress_;
  std::vector<std::string> fixed_texts_;          // of the 259 fixed tokens
  int64_t target_ = 0;                            // learned pieces wanted
  std::vector<std::string> text_;                 // symbol -> text
  std::vector<int32_t> chars_;                    // symbol -> characters in it
  std::unordered_map<std::string, int32_t> ids_;  // text -> symbol
  std::vector<int32_t> pieces_;                   // learned symbols, in order
  std::vector<Word> words_;
  std::unordered_map<uint64_t, PairStats> pairs_;
  std::vector<Entry> heap_;
  std::unordered_map<uint64_t, int64_t> delta_;  // count changes of one merge
};

/// The symbol of `text`, created if new; a new multi-character symbol is a learned piece.
int32_t Trainer::symbol(std::string text, int32_t n_chars) {
  const auto [it, inserted] = ids_.try_emplace(std::move(text), static_cast<int32_t>(text_.size()));
  if (!inserted) return it->second;
  text_.push_back(it->first);
  chars_.push_back(n_chars);
  if (n_chars > 1) {
    pieces_.push_back(it->second);
    if (progress_) progress_(static_cast<int64_t>(pieces_.size()), target_);
  }
  return it->second;
}

/// One Word per run of alphabet characters of each distinct word (a character outside the
/// alphabet cuts the word, as it joins no piece); runs of one symbol hold no pair.
void Trainer::build_words(const WordTable& table) {
  std::vector<int32_t> syms;
  const auto finish = [&](int64_t count) {
    if (syms.size() >= 2) words_.push_back({syms, count});
    syms.clear();
  };
  // Only the alphabet's characters are symbols yet: any other character cuts the word.
  const auto add = [&](std::string_view c, int64_t count) {
    const auto it = ids_.find(std::string(c));
    if (it != ids_.end()) {
      syms.push_back(it->second);
    } else {
      finish(count);
    }
  };
  for (int spaced = 0; spaced < 2; ++spaced) {
    for (const auto& [body, count] : table.counts[spaced]) {
      if (spaced) add(kSpaceSymbol, count);
      for (size_t pos = 0; pos < body.size();) {
        const size_t len = char_at(body, pos).len;
        add(body.substr(pos, len), count);
        pos += len;
      }
      finish(count);
    }
  }
}

void Trainer::count_pairs() {
  for (size_t w = 0; w < words_.size(); ++w) {
    const Word& word = words_[w];
    for (size_t i = 0; i + 1 < word.syms.size(); ++i) {
      PairStats& s = pairs_[key(word.syms[i], word.syms[i + 1])];
      s.count += word.count;
      if (s.words.empty() || s.words.back() != static_cast<int32_t>(w)) {
        s.words.push_back(static_cast<int32_t>(w));
      }
    }
  }
  for (const auto& [pair, s] : pairs_) push({s.count, pair});
}

/// The most frequent allowed pair. Every pair with a positive count has a heap entry of
/// at least that count (entries are pushed when counts grow); an entry above the count is
/// pushed again at the count, one below it is a leftover of an older push.
bool Trainer::next_pair(uint64_t* pair) {
  while (!heap_.empty()) {
    const Entry e = pop();
    PairStats& s = pairs_[e.pair];
    if (s.banned || s.count <= 0 || e.count < s.count) continue;
    if (e.count > s.count) {
      push({s.count, e.pair});
      continue;
    }
    if (refused(e.pair)) {
      s.banned = true;
      continue;
    }
    *pair = e.pair;
    return true;
  }
  return false;
}

/// Pieces not to learn: too long, or a text of its own a loader would not read as a normal
/// token, or one half of a fixed token's text. A text already learned (by another split)
/// passed these checks then.
bool Trainer::refused(uint64_t pair) const {
  const auto a = static_cast<size_t>(left(pair)), b = static_cast<size_t>(right(pair));
  if (chars_[a] + chars_[b] > p_.max_piece_chars) return true;
  const std::string merged = text_[a] + text_[b];
  return !ids_.contains(merged) && (is_reserved(merged, fixed_texts_) || joins_fixed_text(merged));
}

/// True when `piece` and a symbol the encoder may hold (any single character, or a learned
/// piece) make up the text of a fixed token ("<s" + ">", "<0x4" + "1>"): the encoder would
/// join them into that token (it merges any pair whose text is a token), and "<s>" in a
/// text would become BOS. Of the two halves, the one learned second is refused, so no
/// fixed token can ever be built by merges.
bool Trainer::joins_fixed_text(const std::string& piece) const {
  if (piece.front() != '<' && piece.back() != '>') return false;  // as every fixed text
  const auto is_symbol = [&](std::string_view s) {
    return char_at(s, 0).len == s.size() || ids_.contains(std::string(s));
  };
  for (const std::string& fixed : fixed_texts_) {
    if (fixed.size() <= piece.size()) continue;
    const std::string_view f = fixed;
    if (f.starts_with(piece) && is_symbol(f.substr(piece.size()))) return true;
    if (f.ends_with(piece) && is_symbol(f.substr(0, f.size() - piece.size()))) return true;
  }
  return false;
}

void Trainer::merge(uint64_t pair) {
  const int32_t a = left(pair), b = right(pair);
  const int32_t m = symbol(text_[static_cast<size_t>(a)] + text_[static_cast<size_t>(b)],
                           chars_[static_cast<size_t>(a)] + chars_[static_cast<size_t>(b)]);
  std::vector<int32_t> words = std::move(pairs_[pair].words);
  pairs_[pair].words.clear();
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  delta_.clear();
  for (int32_t w : words) merge_in_word(w, a, b, m);
  for (const auto& [changed, d] : delta_) {
    PairStats& s = pairs_[changed];
    s.count += d;
    if (d > 0) push({s.count, changed});
    if (s.count == 0) std::vector<int32_t>().swap(s.words);  // never needed again
  }
}

/// Replaces each (a, b) of word `w`, left to right, by `m`, recording the count changes of
/// the word's pairs; the new pairs (those with m) list the word.
void Trainer::merge_in_word(int32_t w, int32_t a, int32_t b, int32_t m) {
  Word& word = words_[static_cast<size_t>(w)];
  std::vector<int32_t>& s = word.syms;
  bool found = false;
  for (size_t i = 0; i + 1 < s.size() && !found; ++i) found = s[i] == a && s[i + 1] == b;
  if (!found) return;  // a stale entry of the pair's word list
  for (size_t i = 0; i + 1 < s.size(); ++i) delta_[key(s[i], s[i + 1])] -= word.count;
  size_t j = 0;
  for (size_t i = 0; i < s.size(); ++j) {
    if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
      s[j] = m;
      i += 2;
    } else {
      s[j] = s[i++];
    }
  }
  s.resize(j);
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    const uint64_t k = key(s[i], s[i + 1]);
    delta_[k] += word.count;
    if (s[i] != m && s[i + 1] != m) continue;
    std::vector<int32_t>& list = pairs_[k].words;
    if (list.empty() || list.back() != w) list.push_back(w);
  }
}

TrainedVocab Trainer::assemble(size_t n_alphabet) const {
  TrainedVocab v;
  v.tokens = fixed_texts_;
  v.scores.assign(v.tokens.size(), 0.0f);
  v.types.assign(v.tokens.size(), static_cast<int32_t>(TokenType::Byte));
  std::copy(std::begin(kSpecialTypes), std::end(kSpecialTypes), v.types.begin());
  // Scores -0, -1, ... in learned order; the characters continue below them.
  int64_t rank = 0;
  const auto add = [&](int32_t sym) {
    v.tokens.push_back(text_[static_cast<size_t>(sym)]);
    v.scores.push_back(static_cast<float>(-rank++));
    v.types.push_back(static_cast<int32_t>(TokenType::Normal));
  };
  for (int32_t sym : pieces_) add(sym);
  for (size_t c = 0; c < n_alphabet; ++c) add(static_cast<int32_t>(c));
  v.n_merged = static_cast<int64_t>(pieces_.size());
  v.n_chars = static_cast<int64_t>(n_alphabet);
  return v;
}

Result<TrainedVocab> Trainer::run(std::string_view text) {
  const WordTable table = count_words(text);
  auto chars = count_chars(table);
  const auto slots = static_cast<size_t>(p_.vocab_size - kFixedTokens);
  const size_t n_alphabet = select_alphabet(chars, p_.character_coverage, slots / 2);
  for (size_t c = 0; c < n_alphabet; ++c) symbol(std::string(chars[c].first), 1);
  target_ = static_cast<int64_t>(slots - n_alphabet);
  build_words(table);
  count_pairs();
  uint64_t pair = 0;
  while (static_cast<int64_t>(pieces_.size()) < target_) {
    if (!next_pair(&pair)) {
      const int64_t most = kFixedTokens + static_cast<int64_t>(n_alphabet + pieces_.size());
      return Status::error("train_vocab: the text allows at most " + std::to_string(most) +
                           " tokens (" + std::to_string(pieces_.size()) + " learned pieces, " +
                           std::to_string(n_alphabet) + " characters), fewer than vocab_size " +
                           std::to_string(p_.vocab_size) +
                           ": give a larger text or a smaller vocab_size");
    }
    merge(pair);
  }
  return assemble(n_alphabet);
}

}  // namespace

Result<TrainedVocab> train_vocab(std::string_view text, const VocabTrainParams& p,
                                 const VocabTrainProgress& progress) {
  if (p.vocab_size < kMinTrainedVocab || p.vocab_size > kMaxTrainedVocab) {
    return Status::error("train_vocab: vocab_size " + std::to_string(p.vocab_size) +
                         " is out of range: a trained vocabulary holds 3 special and 256 byte "
                         "tokens plus at least 16 learned pieces, so vocab_size must be " +
                         std::to_string(kMinTrainedVocab) + " to " +
                         std::to_string(kMaxTrainedVocab));
  }
  if (!(p.character_coverage > 0.0 && p.character_coverage <= 1.0)) {
    return Status::error("train_vocab: character_coverage " + std::to_string(p.character_coverage) +
                         " is not in (0, 1]");
  }
  if (p.max_piece_chars < 2) {
    return Status::error("train_vocab: max_piece_chars " + std::to_string(p.max_piece_chars) +
                         " is below 2: no piece could be learned");
  }
  if (text.empty()) return Status::error("train_vocab: the text is empty");
  return Trainer(p, progress).run(text);
}

Status write_vocab(gguf::Writer& w, const TrainedVocab& v) {
  const size_t n = v.tokens.size();
  if (n == 0 || v.scores.size() != n || v.types.size() != n) {
    return Status::error("write_vocab: " + std::to_string(n) + " tokens, " +
                         std::to_string(v.scores.size()) + " scores and " +
                         std::to_string(v.types.size()) + " token types: they must match");
  }
  for (int32_t id : {v.unk, v.bos, v.eos}) {
    if (id < 0 || static_cast<size_t>(id) >= n) {
      return Status::error("write_vocab: special token id " + std::to_string(id) +
                           " is out of range (n_vocab " + std::to_string(n) + ")");
    }
  }
  w.set("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens", gguf::Value::array(v.tokens));
  w.set("tokenizer.ggml.scores", gguf::Value::array(v.scores));
  w.set("tokenizer.ggml.token_type", gguf::Value::array(v.types));
  w.set("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos));
  w.set("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos));
  w.set("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(v.unk));
  w.set("tokenizer.ggml.add_bos_token", v.add_bos);
  w.set("tokenizer.ggml.add_eos_token", v.add_eos);
  w.set("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
  return Status::ok();
}

}  // namespace tessera
