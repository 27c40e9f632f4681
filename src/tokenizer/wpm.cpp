#include "tokenizer/wpm.h"

#include <algorithm>

#include "core/check.h"
#include "tokenizer/spm.h"
#include "tokenizer/unicode_props.h"

namespace tessera::tok {
namespace {

constexpr uint32_t kReplacement = 0xFFFD;
constexpr std::string_view kPhantomSpace = "\xE2\x96\x81";  // U+2581

/// The code point at text[*pos], decoded as the reference decodes (the lead byte says the
/// length, continuation bytes must be 10xxxxxx; overlong forms and surrogates pass), and
/// moves *pos past it; an invalid sequence gives U+FFFD and moves one byte.
uint32_t next_code_point(std::string_view text, size_t* pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const size_t at = *pos;
  const uint8_t lead = byte(at);
  size_t len = 0;
  uint32_t cpt = 0;
  if (lead < 0x80) {
    len = 1;
    cpt = lead;
  } else if ((lead & 0xE0) == 0xC0) {
    len = 2;
    cpt = lead & 0x1Fu;
  } else if ((lead & 0xF0) == 0xE0) {
    len = 3;
    cpt = lead & 0x0Fu;
  } else if ((lead & 0xF8) == 0xF0) {
    len = 4;
    cpt = lead & 0x07u;
  }
  bool ok = len > 0 && at + len <= text.size();
  for (size_t i = 1; ok && i < len; ++i) {
    ok = (byte(at + i) & 0xC0) == 0x80;
    cpt = (cpt << 6) | (byte(at + i) & 0x3Fu);
  }
  if (!ok) {
    *pos = at + 1;
    return kReplacement;
  }
  *pos = at + len;
  return cpt;
}

/// Appends the UTF-8 form of cpt (surrogates too, as the reference writes them).
void append_code_point(uint32_t cpt, std::string& out) {
  const auto put = [&](uint32_t v) { out.push_back(static_cast<char>(v)); };
  if (cpt < 0x80) {
    put(cpt);
  } else if (cpt < 0x800) {
    put(0xC0 | (cpt >> 6));
    put(0x80 | (cpt & 0x3F));
  } else if (cpt < 0x10000) {
    put(0xE0 | (cpt >> 12));
    put(0x80 | ((cpt >> 6) & 0x3F));
    put(0x80 | (cpt & 0x3F));
  } else {
    put(0xF0 | (cpt >> 18));
    put(0x80 | ((cpt >> 12) & 0x3F));
    put(0x80 | ((cpt >> 6) & 0x3F));
    put(0x80 | (cpt & 0x3F));
  }
}

}  // namespace

std::vector<std::string> WpmAlgorithm::words(std::string_view text) {
  std::vector<std::string> words(1);
  const auto finish_word = [&] {
    if (!words.back().empty()) words.emplace_back();
  };
  for (size_t pos = 0; pos < text.size();) {
    const uint32_t cpt = nfd_first(next_code_point(text, &pos));
    // Code points past U+10FFFF (from 4-byte leads F5..F7) have no UTF-8 form; the
    // reference throws on them, tessera drops them.
    if (cpt > 0x10FFFF) continue;
    if (is_whitespace(cpt)) {
      finish_word();
      continue;
    }
    const CharClass cls = char_class(cpt);
    if (cpt == 0 || cpt == kReplacement || cls == CharClass::Control) continue;
    std::string lower;
    append_code_point(to_lower(cpt), lower);
    if (cls == CharClass::Punctuation || (cpt < 0x7F && cls == CharClass::Symbol) || is_cjk_ideograph(cpt)) {
      finish_word();
      words.back() = std::move(lower);
      words.emplace_back();
    } else {
      words.back() += lower;
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

WpmAlgorithm::WpmAlgorithm(const Vocab& vocab) : vocab_(vocab) {
  TESSERA_CHECK_MSG(vocab.contains(vocab.special().unk), "a WordPiece vocabulary needs an unknown token");
  for (TokenId id = 0; id < vocab.size(); ++id) max_token_len_ = std::max(max_token_len_, vocab.token(id).text.size());
}

void WpmAlgorithm::encode_text(std::string_view text, bool, std::vector<TokenId>& out) const {
  std::string word1;
  for (const std::string& word : words(text)) {
    word1.assign(kPhantomSpace);
    word1 += word;
    const size_t n = word1.size();
    const size_t start = out.size();
    for (size_t i = 0; i < n; ++i) {  // the longest match at i, then on after it
      bool match = false;
      for (size_t j = std::min(n, i + max_token_len_ + 1); j > i; --j) {
        const TokenId id = vocab_.find(std::string_view(word1).substr(i, j - i));
        if (id != kNoToken) {
          out.push_back(id);
          match = true;
          i = j - 1;
          break;
        }
      }
      if (!match) {  // the whole word is unknown
        out.resize(start);
        break;
      }
    }
    if (out.size() == start) out.push_back(vocab_.special().unk);
  }
}

std::string WpmAlgorithm::piece(TokenId id, bool render_special) const {
  const TokenData& token = vocab_.token(id);
  switch (token.type) {
    case TokenType::Normal:
      return unescape_spaces(token.text);
    case TokenType::UserDefined:
      return token.text;
    case TokenType::Control:
    case TokenType::Unknown:
      return render_special ? token.text : std::string();
    case TokenType::Byte:
    case TokenType::Undefined:
    case TokenType::Unused:
      break;
  }
  return std::string();
}

}  // namespace tessera::tok
