#include "tokenizer/bpe.h"

#include <algorithm>
#include <charconv>
#include <climits>

#include "core/check.h"
#include "tessera/log.h"
#include "tokenizer/unicode.h"

namespace tessera::tok {

/// The work of one encode_text call: symbols and candidate merges of the current
/// pre-token, reused from one pre-token to the next.
class BpeSession {
 public:
  explicit BpeSession(const BpeAlgorithm& algo) : algo_(algo) {}

  void encode_word(std::string_view word, std::vector<TokenId>& out) {
    if (word.empty()) return;
    TESSERA_CHECK_MSG(word.size() < static_cast<size_t>(INT32_MAX), "pre-token of 2 GiB or more");
    const Vocab& vocab = algo_.vocab_;
    if (algo_.ignore_merges_ || word.size() == 1) {
      // llama3 (and tokenizer.json's ignore_merges): a pre-token that is a token is taken
      // whole, merges or not.
      scratch_.clear();
      for (char c : word) scratch_ += byte_to_utf8(static_cast<uint8_t>(c));
      if (const TokenId id = vocab.find(scratch_); id != kNoToken) {
        out.push_back(id);
        return;
      }
    }
    symbols_.clear();
    heap_.clear();
    const auto n = static_cast<int32_t>(word.size());
    for (int32_t i = 0; i < n; ++i) {
      const int32_t sym = algo_.byte_symbol_[static_cast<uint8_t>(word[static_cast<size_t>(i)])];
      symbols_.push_back({sym, i, 1, i - 1, i + 1 < n ? i + 1 : -1});
    }
    for (int32_t i = 1; i < n; ++i) try_add(i - 1, i);
    merge_all();
    for (int32_t i = 0; i != -1; i = symbols_[static_cast<size_t>(i)].next) {
      emit(symbols_[static_cast<size_t>(i)], word, out);
    }
  }

 private:
  /// A run of the pre-token's bytes; merged-away symbols have len 0. The live ones form a
  /// doubly linked list through prev/next (-1 ends it).
  struct Symbol {
    int32_t sym;    // symbol id (a token id when below n_vocab)
    int32_t start;  // first byte in the pre-token
    int32_t len;
    int32_t prev;
    int32_t next;
  };
  /// A possible merge of two adjacent symbols.
  struct Candidate {
    int32_t rank;
    int32_t left;
    int32_t right;
    int32_t len;     // of the joined symbols; a mismatch later means the pair went stale
    int32_t result;  // the joined symbol
  };
  /// Heap order: lowest rank on top; among equal ranks the leftmost pair.
  struct Later {
    bool operator()(const Candidate& a, const Candidate& b) const {
      return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
  };

  Symbol& at(int32_t i) { return symbols_[static_cast<size_t>(i)]; }

  void try_add(int32_t left, int32_t right) {
    if (left == -1 || right == -1) return;
    const Symbol& l = at(left);
    const Symbol& r = at(right);
    const BpeAlgorithm::Merge* merge = algo_.find_merge(l.sym, r.sym);
    if (merge == nullptr) return;
    heap_.push_back({merge->rank, left, right, l.len + r.len, merge->result});
    std::push_heap(heap_.begin(), heap_.end(), Later());
  }

  void merge_all() {
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), Later());
      const Candidate c = heap_.back();
      heap_.pop_back();
      Symbol& left = at(c.left);
      Symbol& right = at(c.right);
      // Either side merged away, or grew, since the pair was queued.
      if (left.len == 0 || right.len == 0 || left.len + right.len != c.len) continue;
      left.sym = c.result;
      left.len += right.len;
      right.len = 0;
      left.next = right.next;
      if (right.next != -1) at(right.next).prev = c.left;
      try_add(left.prev, c.left);
      try_add(c.left, left.next);
    }
  }

  /// A final symbol's token; a symbol that is no token gives its bytes' tokens.
  void emit(const Symbol& s, std::string_view word, std::vector<TokenId>& out) const {
    const int32_t n_vocab = algo_.vocab_.size();
    if (s.sym < n_vocab) {
      out.push_back(s.sym);
      return;
    }
    for (int32_t i = s.start; i < s.start + s.len; ++i) {
      const int32_t sym = algo_.byte_symbol_[static_cast<uint8_t>(word[static_cast<size_t>(i)])];
      if (sym < n_vocab) out.push_back(sym);
    }
  }

  const BpeAlgorithm& algo_;
  std::vector<Symbol> symbols_;
  std::vector<Candidate> heap_;
  std::string scratch_;
};

BpeAlgorithm::BpeAlgorithm(const Vocab& vocab, const PreTokenizerSpec& spec, PreTokenizer pre)
    : vocab_(vocab), spec_(&spec), ignore_merges_(vocab.ignore_merges().value_or(spec.ignore_merges)),
      pre_(std::move(pre)) {}

Result<std::unique_ptr<BpeAlgorithm>> BpeAlgorithm::create(const Vocab& vocab) {
  const std::vector<std::string>* merges = vocab.merges();
  if (merges == nullptr) {
    return Status::error(
        "tokenizer.ggml.model \"gpt2\" (byte-level BPE) needs tokenizer.ggml.merges, which is "
        "absent");
  }
  if (merges->size() >= static_cast<size_t>(INT32_MAX)) return Status::error("too many merges");
  const PreTokenizerSpec* spec = find_pre_tokenizer(vocab.pre());
  if (spec == nullptr) {
    if (vocab.pre().empty()) {
      log(LogLevel::Warn,
          "tokenizer: tokenizer.ggml.pre is missing; using the \"default\" pre-tokenizer");
    } else {
      log(LogLevel::Warn,
          "tokenizer: unknown tokenizer.ggml.pre '%s'; using the \"default\" pre-tokenizer",
          vocab.pre().c_str());
    }
    spec = &default_pre_tokenizer();
  }
  // The file's own regexes (tokenizer.tessera.pre_regexes) run instead of the spec's.
  std::vector<std::string_view> regexes = spec->regexes;
  const std::vector<std::string>* own = vocab.pre_regexes();
  if (own != nullptr) regexes.assign(own->begin(), own->end());
  Result<PreTokenizer> pre = PreTokenizer::compile(regexes);
  if (!pre) return own ? pre.status().with_context("tokenizer.tessera.pre_regexes") : pre.status();
  std::unique_ptr<BpeAlgorithm> algo(new BpeAlgorithm(vocab, *spec, std::move(pre).value()));
  algo->byte_symbol_.resize(256);
  for (int b = 0; b < 256; ++b) {
    algo->byte_symbol_[static_cast<size_t>(b)] =
        algo->intern(byte_to_utf8(static_cast<uint8_t>(b)));
  }
  algo->build_merges(*merges);
  return algo;
}

int32_t BpeAlgorithm::intern(std::string_view text) {
  if (const TokenId id = vocab_.find(text); id != kNoToken) return id;
  const size_t next = static_cast<size_t>(vocab_.size()) + extra_ids_.size();
  TESSERA_CHECK_MSG(next < static_cast<size_t>(INT32_MAX), "too many BPE symbols");
  return extra_ids_.try_emplace(std::string(text), static_cast<int32_t>(next)).first->second;
}

void BpeAlgorithm::add_merge(int32_t left, int32_t right, int32_t rank, int32_t result) {
  const uint64_t key = (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  size_t i = hash_key(key) & mask_;
  while (table_[i].key != kEmptyKey) {
    if (table_[i].key == key) return;  // a repeated pair keeps its first (lowest) rank
    i = (i + 1) & mask_;
  }
  table_[i] = {key, rank, result};
}

void BpeAlgorithm::build_merges(const std::vector<std::string>& merges) {
  size_t n_slots = 16;
  while (n_slots < 2 * merges.size()) n_slots *= 2;
  table_.assign(n_slots, Merge{kEmptyKey, 0, 0});
  mask_ = n_slots - 1;
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string_view merge = merges[rank];
    // "left right": the separator is the first space after the first byte (as llama.cpp).
    const size_t space = merge.find(' ', 1);
    if (space == std::string_view::npos || space + 1 == merge.size()) continue;
    const std::string_view left = merge.substr(0, space);
    const std::string_view right = merge.substr(space + 1);
    joined.assign(left).append(right);
    const int32_t l = intern(left);
    const int32_t r = intern(right);
    add_merge(l, r, static_cast<int32_t>(rank), intern(joined));
  }
}

void BpeAlgorithm::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  BpeSession(*this).encode_word(word, out);
}

namespace {

/// `text` as well-formed UTF-8 for the regexes: each byte that starts no well-formed
/// sequence becomes U+FFFD (as llama.cpp reads text). origin[k] is the offset in `text` of
/// clean byte k; origin[clean.size()] == text.size().
std::string sanitize(std::string_view text, std::vector<size_t>& origin) {
  std::string clean;
  clean.reserve(text.size() + 16);
  origin.clear();
  origin.reserve(text.size() + 16);
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Scan scan = scan_utf8(text, pos);
    if (scan.kind == Utf8Kind::Valid) {
      clean.append(text.substr(pos, scan.len));
      for (size_t i = 0; i < scan.len; ++i) origin.push_back(pos + i);
      pos += scan.len;
    } else {
      clean.append(kReplacementChar);
      origin.insert(origin.end(), kReplacementChar.size(), pos);
      pos += 1;
    }
  }
  origin.push_back(text.size());
  return clean;
}

}  // namespace

std::vector<std::string> BpeAlgorithm::pre_tokenize(std::string_view text) const {
  std::vector<std::string> words;
  std::vector<Span> spans;
  if (is_valid_utf8(text)) {
    pre_.split(text, spans);
    for (const Span& s : spans) words.emplace_back(text.substr(s.begin, s.end - s.begin));
    return words;
  }
  std::vector<size_t> origin;
  pre_.split(sanitize(text, origin), spans);
  for (const Span& s : spans) {
    words.emplace_back(text.substr(origin[s.begin], origin[s.end] - origin[s.begin]));
  }
  return words;
}

void BpeAlgorithm::encode_text(std::string_view text, bool /*after_special*/,
                               std::vector<TokenId>& out) const {
  // Byte-level BPE adds no space prefix: runs after special tokens are encoded as they are.
  BpeSession session(*this);
  std::vector<Span> spans;
  if (is_valid_utf8(text)) {
    pre_.split(text, spans);
    for (const Span& s : spans) session.encode_word(text.substr(s.begin, s.end - s.begin), out);
    return;
  }
  // Invalid bytes split as U+FFFD would, but keep their own value in the tokens (so
  // decoding gives the input back; llama.cpp would encode U+FFFD instead). A byte with
  // no token (byte-level vocabularies such as Falcon's and StarCoder's leave out bytes
  // that never occur in UTF-8, 0xF5-0xFF among them) becomes U+FFFD, as in llama.cpp,
  // rather than being dropped (found by the tokenize fuzzer: "\xfe\xff" gave no tokens).
  const std::string kept = replace_untokenizable_bytes(text);
  std::vector<size_t> origin;
  pre_.split(sanitize(kept, origin), spans);
  for (const Span& s : spans) {
    session.encode_word(std::string_view(kept).substr(origin[s.begin], origin[s.end] - origin[s.begin]), out);
  }
}

std::string BpeAlgorithm::replace_untokenizable_bytes(std::string_view text) const {
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Scan scan = scan_utf8(text, pos);
    if (scan.kind == Utf8Kind::Valid) {
      out.append(text.substr(pos, scan.len));
      pos += scan.len;
      continue;
    }
    const auto byte = static_cast<uint8_t>(text[pos]);
    if (byte_symbol_[byte] < vocab_.size()) {
      out += static_cast<char>(byte);
    } else {
      out.append(kReplacementChar);
    }
    pos += 1;
  }
  return out;
}

std::string BpeAlgorithm::decode_byte_level(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Scan scan = scan_utf8(text, pos);
    const int byte = scan.kind == Utf8Kind::Valid ? codepoint_to_byte(scan.cpt) : -1;
    if (byte >= 0) {
      out += static_cast<char>(byte);
    } else {
      out.append(text.substr(pos, scan.len));
    }
    pos += scan.len;
  }
  return out;
}

std::string BpeAlgorithm::piece(TokenId id, bool render_special) const {
  const TokenData& token = vocab_.token(id);
  switch (token.type) {
    case TokenType::Normal:
      return decode_byte_level(token.text);
    case TokenType::Byte: {  // unusual in BPE vocabularies: "<0xNN>", else byte-level text
      unsigned value = 0;
      const std::string& t = token.text;
      if (t.size() == 6 && t.starts_with("<0x") && t.back() == '>') {
        const auto [end, ec] = std::from_chars(t.data() + 3, t.data() + 5, value, 16);
        if (ec == std::errc() && end == t.data() + 5)
          return std::string(1, static_cast<char>(value));
      }
      return decode_byte_level(t);
    }
    case TokenType::UserDefined:
      return token.text;
    case TokenType::Control:
    case TokenType::Unknown:
      return render_special ? token.text : std::string();
    case TokenType::Undefined:
    case TokenType::Unused:
      break;
  }
  return std::string();
}

}  // namespace tessera::tok
