#include "tokenizer/spm.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <queue>

#include "core/check.h"

namespace tessera::tok {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581

/// A run of the input: a UTF-8 character at first, then the union of merged neighbours.
/// The live symbols form a doubly linked list through prev/next (-1 ends it); a symbol
/// merged into its left neighbour has len 0.
struct Symbol {
  size_t offset;
  size_t len;
  int32_t prev;
  int32_t next;
};

/// A candidate merge of two adjacent symbols whose joined text is a vocabulary token.
struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  size_t len;  // of the joined text; a mismatch later means the pair went stale
};

/// Orders the queue: highest score on top; among equal scores, the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

/// One encode_text call: the symbols of the text and the queue of candidate merges.
///
/// llama.cpp merges the whole text in one queue. We cut the text between adjacent
/// characters that no token text holds side by side (SpmAlgorithm::may_join) and merge
/// each piece alone, which gives the same tokens: no merge can cross such a cut, and the
/// queue's order restricted to one piece is the order the piece's merges had globally.
/// Small queues keep long inputs fast.
class Session {
 public:
  Session(const SpmAlgorithm& algo, const Vocab& vocab, std::string_view text)
      : algo_(algo), vocab_(vocab), text_(text) {}

  void run(std::vector<TokenId>& out) {
    split();
    size_t begin = 0;
    for (size_t p = 1; p < symbols_.size(); ++p) {
      const size_t from = symbols_[p - 1].offset;
      if (!algo_.may_join(text_.substr(from, symbols_[p].offset + symbols_[p].len - from))) {
        merge_range(begin, p, out);
        begin = p;
      }
    }
    if (begin < symbols_.size()) merge_range(begin, symbols_.size(), out);
  }

 private:
  Symbol& at(int32_t i) { return symbols_[static_cast<size_t>(i)]; }

  /// One symbol per UTF-8 character (a truncated sequence at the end is cut short).
  void split() {
    TESSERA_CHECK_MSG(text_.size() < static_cast<size_t>(INT32_MAX), "text of 2 GiB or more");
    symbols_.reserve(text_.size());
    for (size_t offset = 0; offset < text_.size();) {
      const size_t want = utf8_sequence_length(static_cast<uint8_t>(text_[offset]));
      const size_t len = std::min(want, text_.size() - offset);
      const auto index = static_cast<int32_t>(symbols_.size());
      symbols_.push_back({offset, len, index - 1, index + 1});
      offset += len;
    }
  }

  /// Merges symbols [begin, end) as a list of their own and appends their tokens.
  void merge_range(size_t begin, size_t end, std::vector<TokenId>& out) {
    const auto first = static_cast<int32_t>(begin);
    const auto last = static_cast<int32_t>(end) - 1;
    at(first).prev = -1;
    at(last).next = -1;
    for (int32_t i = first + 1; i <= last; ++i) try_add(i - 1, i);
    merge_all();
    for (int32_t i = first; i != -1; i = at(i).next) emit(at(i), out);
  }

  /// Queues the merge of `left` and `right` when their joined text is a token.
  void try_add(int32_t left, int32_t right) {
    if (left == -1 || right == -1) return;
    const Symbol& l = at(left);
    const size_t len = l.len + at(right).len;
    const TokenId id = vocab_.find(text_.substr(l.offset, len));
    if (id == kNoToken) return;
    queue_.push({vocab_.token(id).score, left, right, len});
  }

  void merge_all() {
    while (!queue_.empty()) {
      const Bigram bigram = queue_.top();
      queue_.pop();
      Symbol& left = at(bigram.left);
      Symbol& right = at(bigram.right);
      // Skip pairs where either side was merged away or grew since the pair was queued.
      if (left.len == 0 || right.len == 0 || left.len + right.len != bigram.len) continue;
      left.len += right.len;
      right.len = 0;
      left.next = right.next;
      if (right.next != -1) at(right.next).prev = bigram.left;
      try_add(left.prev, bigram.left);
      try_add(bigram.left, left.next);
    }
  }

  /// A final symbol's token. Every merge produced a vocabulary token, so a symbol outside
  /// the vocabulary is a single unmerged character: it falls back to one token per byte.
  void emit(const Symbol& symbol, std::vector<TokenId>& out) const {
    const std::string_view text = text_.substr(symbol.offset, symbol.len);
    if (const TokenId id = vocab_.find(text); id != kNoToken) {
      out.push_back(id);
      return;
    }
    for (char c : text) {
      const TokenId id = vocab_.byte_token(static_cast<uint8_t>(c));
      if (id != kNoToken) out.push_back(id);
    }
  }

  const SpmAlgorithm& algo_;
  const Vocab& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

/// The byte a "<0xNN>" token stands for; its text unchanged when it is not of that form.
std::string byte_piece(const std::string& text) {
  unsigned value = 0;
  if (text.size() == 6 && text.starts_with("<0x") && text.back() == '>') {
    const char* first = text.data() + 3;
    const auto [end, ec] = std::from_chars(first, first + 2, value, 16);
    if (ec == std::errc() && end == first + 2) return std::string(1, static_cast<char>(value));
  }
  return text;
}

}  // namespace

size_t utf8_sequence_length(uint8_t lead) {
  static constexpr uint8_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ') {
      out += kSpaceSymbol;
    } else {
      out += c;
    }
  }
  return out;
}

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, kSpaceSymbol.size()) == kSpaceSymbol) {
      out += ' ';
      i += kSpaceSymbol.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

SpmAlgorithm::SpmAlgorithm(const Vocab& vocab, bool cut_text) : vocab_(vocab), cut_text_(cut_text) {
  if (!cut_text) return;
  pair_bits_.assign(kPairBits / 64, 0);
  for (TokenId id = 0; id < vocab.size(); ++id) {
    const std::string_view text = vocab.token(id).text;
    size_t prev = 0;  // start of the previous character
    for (size_t i = 0; i < text.size();) {
      const size_t len =
          std::min(utf8_sequence_length(static_cast<uint8_t>(text[i])), text.size() - i);
      if (i > 0) {
        const uint64_t h = Vocab::hash_text(text.substr(prev, i + len - prev)) & (kPairBits - 1);
        pair_bits_[h >> 6] |= uint64_t{1} << (h & 63);
      }
      prev = i;
      i += len;
    }
  }
}

void SpmAlgorithm::encode_text(std::string_view text, bool after_special,
                               std::vector<TokenId>& out) const {
  std::string escaped;
  if (after_special && vocab_.flags().add_space_prefix) escaped = kSpaceSymbol;
  escaped += escape_spaces(text);
  Session(*this, vocab_, escaped).run(out);
}

std::string SpmAlgorithm::piece(TokenId id, bool render_special) const {
  const TokenData& token = vocab_.token(id);
  switch (token.type) {
    case TokenType::Normal:
      return unescape_spaces(token.text);
    case TokenType::Byte:
      return byte_piece(token.text);
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
