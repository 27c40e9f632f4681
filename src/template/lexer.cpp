#include "template/lexer.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "template/error.h"
#include "template/value.h"

namespace tessera::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Python's str.splitlines() boundaries become "\n"; one trailing newline goes.
std::string normalise_newlines(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(in[i]);
    if (c == '\r') {
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
      out += '\n';
    } else if (c == '\v' || c == '\f' || c == 0x1c || c == 0x1d || c == 0x1e) {
      out += '\n';
    } else if (c == 0xC2 && i + 1 < in.size() && static_cast<unsigned char>(in[i + 1]) == 0x85) {
      out += '\n';
      ++i;
    } else if (c == 0xE2 && i + 2 < in.size() && static_cast<unsigned char>(in[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(in[i + 2]) == 0xA8 || static_cast<unsigned char>(in[i + 2]) == 0xA9)) {
      out += '\n';
      i += 2;
    } else {
      out += char(c);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view source, const LexOptions& options) : src_(normalise_newlines(source)), opt_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const size_t open = find_tag(pos_);
      std::string text = src_.substr(pos_, open - pos_);
      if (open == src_.size()) {
        emit_text(std::move(text), pos_);
        break;
      }
      const char kind = src_[open + 1];  // '{', '%' or '#'
      const char sign = open + 2 < src_.size() ? src_[open + 2] : '\0';
      if (sign == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (sign != '+' && opt_.lstrip_blocks && kind != '{') {
        const size_t l_pos = text.rfind('\n') + 1;  // npos + 1 == 0
        if (l_pos > 0 || line_starting) {
          bool blank = l_pos < text.size();
          for (size_t i = l_pos; i < text.size(); ++i) blank = blank && is_space(text[i]);
          if (blank) text.resize(l_pos);
        }
      }
      emit_text(std::move(text), pos_);
      pos_ = open + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '#') {
        comment(open);
      } else if (kind == '%' && raw_block(open)) {
        // emitted
      } else {
        tag(open, kind);
      }
      line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    tokens_.push_back(Token{Token::Type::End, "", line_of(src_.size()), column_of(src_.size())});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i)
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return src_.size();
  }

  int line_of(size_t offset) const {
    return int(std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - line_starts_.begin());
  }
  int column_of(size_t offset) const { return int(offset - line_starts_[size_t(line_of(offset) - 1)]) + 1; }
  [[noreturn]] void syntax_error(const std::string& what, size_t offset) const {
    throw TemplateError("TemplateSyntaxError", what, line_of(offset), column_of(offset));
  }

  void push(Token::Type type, std::string text, size_t offset) {
    tokens_.push_back(Token{type, std::move(text), line_of(offset), column_of(offset)});
  }
  void emit_text(std::string text, size_t offset) {
    if (!text.empty()) push(Token::Type::Text, std::move(text), offset);
  }

  // After a tag's closing characters: `-` strips following whitespace; a plain close
  // (block or comment) drops one newline under trim_blocks.
  void after_close(char sign, bool block_like) {
    if (sign == '-') {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
    } else if (sign != '+' && block_like && opt_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
  }

  void comment(size_t open) {
    const size_t close = src_.find("#}", pos_);
    if (close == std::string::npos) syntax_error("missing end of comment tag", open);
    char sign = '\0';
    if (close > pos_ && (src_[close - 1] == '-' || src_[close - 1] == '+')) sign = src_[close - 1];
    pos_ = close + 2;
    after_close(sign, true);
  }

  // `{% raw %}...{% endraw %}`: true when the tag at `open` is a raw block (then emitted).
  bool raw_block(size_t open) {
    size_t p = pos_;
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) ++p;
    char sign = '\0';
    if (p < src_.size() && src_[p] == '-') sign = src_[p++];
    if (src_.compare(p, 2, "%}") != 0) return false;
    pos_ = p + 2;
    if (sign == '-')
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
    // Find `{%[-+]? endraw [-+]?%}`.
    for (size_t q = src_.find("{%", pos_); q != std::string::npos; q = src_.find("{%", q + 2)) {
      size_t r = q + 2;
      char open_sign = '\0';
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) open_sign = src_[r++];
      while (r < src_.size() && is_space(src_[r])) ++r;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < src_.size() && is_space(src_[r])) ++r;
      char close_sign = '\0';
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) close_sign = src_[r++];
      if (src_.compare(r, 2, "%}") != 0) continue;
      std::string body = src_.substr(pos_, q - pos_);
      if (open_sign == '-')
        while (!body.empty() && is_space(body.back())) body.pop_back();
      emit_text(std::move(body), pos_);
      pos_ = r + 2;
      after_close(close_sign, true);
      return true;
    }
    syntax_error("missing {% endraw %} for this raw block", open);
  }

  void tag(size_t open, char kind) {
    push(kind == '{' ? Token::Type::VarBegin : Token::Type::BlockBegin, "", open);
    const char close_char = kind == '{' ? '}' : '%';
    std::vector<char> balance;
    for (;;) {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
      if (pos_ >= src_.size()) syntax_error(kind == '{' ? "missing '}}' after this tag" : "missing '%}' after this tag", open);
      const char c = src_[pos_];
      if (balance.empty()) {
        char sign = '\0';
        size_t p = pos_;
        if (c == '-' || c == '+') sign = c, ++p;
        if (src_.compare(p, 2, std::string(1, close_char) + "}") == 0) {
          push(kind == '{' ? Token::Type::VarEnd : Token::Type::BlockEnd, "", pos_);
          pos_ = p + 2;
          after_close(sign, kind == '%');
          return;
        }
      }
      const size_t start = pos_;
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
        push(Token::Type::Name, src_.substr(start, pos_ - start), start);
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        number(start);
      } else if (c == '\'' || c == '"') {
        string_literal(start);
      } else {
        static const char* const ops[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                          "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", ";"};
        const char* found = nullptr;
        for (const char* op : ops)
          if (src_.compare(pos_, std::strlen(op), op) == 0) {
            found = op;
            break;
          }
        if (!found) syntax_error(std::string("unexpected character '") + c + "'", start);
        pos_ += std::strlen(found);
        const std::string op = found;
        if (op == "(" || op == "[" || op == "{") {
          balance.push_back(op[0]);
        } else if (op == ")" || op == "]" || op == "}") {
          const char want = op == ")" ? '(' : op == "]" ? '[' : '{';
          if (balance.empty() || balance.back() != want) syntax_error("unexpected '" + op + "'", start);
          balance.pop_back();
        }
        push(Token::Type::Op, op, start);
      }
    }
  }

  void digits() {
    while (pos_ < src_.size() &&
           (std::isdigit(static_cast<unsigned char>(src_[pos_])) ||
            (src_[pos_] == '_' && pos_ + 1 < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1])))))
      ++pos_;
  }

  void number(size_t start) {
    digits();
    bool is_float = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
      ++pos_;
      digits();
      is_float = true;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p]))) {
        pos_ = p;
        digits();
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = start; i < pos_; ++i)
      if (src_[i] != '_') text += src_[i];
    push(is_float ? Token::Type::Float : Token::Type::Int, text, start);
  }

  // Python's unicode-escape decoding of a string literal's body.
  void string_literal(size_t start) {
    const char quote = src_[pos_++];
    std::string value;
    for (;;) {
      if (pos_ >= src_.size()) syntax_error("unterminated string", start);
      const char c = src_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (pos_ >= src_.size()) syntax_error("unterminated string", start);
      const char e = src_[pos_++];
      auto hex = [&](int n) {
        uint32_t cp = 0;
        for (int k = 0; k < n; ++k) {
          if (pos_ >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos_])))
            syntax_error("truncated \\x/\\u escape in a string", start);
          const char h = src_[pos_++];
          cp = cp * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        if (cp > 0x10FFFF) syntax_error("illegal Unicode character in a string", start);
        append_codepoint(value, cp);
      };
      switch (e) {
        case '\n': break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'n': value += '\n'; break;
        case 'r': value += '\r'; break;
        case 't': value += '\t'; break;
        case 'v': value += '\v'; break;
        case 'x': hex(2); break;
        case 'u': hex(4); break;
        case 'U': hex(8); break;
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = uint32_t(e - '0');
            for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++k)
              cp = cp * 8 + uint32_t(src_[pos_++] - '0');
            append_codepoint(value, cp);
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    push(Token::Type::String, std::move(value), start);
  }

  std::string src_;
  std::vector<size_t> line_starts_;  // offset of each line's first character
  LexOptions opt_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& options) { return Lexer(source, options).run(); }

}  // namespace tessera::jinja
