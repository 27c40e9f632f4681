// A JSON scanner that knows where a value ends and whether unfinished text could still
// become one (RFC 8259; strings' raw bytes are not checked for UTF-8), and readers of the
// values it accepted.
#include "runtime/tool_calls/json_text.h"

#include <cctype>
#include <cstdint>

#include "tokenizer/unicode.h"

namespace tessera::tool_calls::json {
namespace {

class Scanner {
 public:
  Scanner(std::string_view text, size_t pos, bool final) : s_(text), i_(pos), final_(final) {}

  Scan value(int depth) {
    if (depth > kMaxDepth) return Scan::Invalid;
    if (i_ == s_.size()) return Scan::Partial;
    switch (s_[i_]) {
      case '{':
        return container('}', depth);
      case '[':
        return container(']', depth);
      case '"':
        return string();
      case 't':
        return word("true");
      case 'f':
        return word("false");
      case 'n':
        return word("null");
      default:
        return number();
    }
  }
  size_t pos() const { return i_; }

 private:
  void space() { i_ = skip_space(s_, i_); }

  /// An object ('}') or an array (']') from its opening bracket.
  Scan container(char close, int depth) {
    ++i_;
    space();
    if (i_ == s_.size()) return Scan::Partial;
    if (s_[i_] == close) return ++i_, Scan::Complete;
    while (true) {
      if (close == '}') {
        if (s_[i_] != '"') return Scan::Invalid;
        if (const Scan k = string(); k != Scan::Complete) return k;
        space();
        if (i_ == s_.size()) return Scan::Partial;
        if (s_[i_++] != ':') return Scan::Invalid;
        space();
      }
      if (const Scan v = value(depth + 1); v != Scan::Complete) return v;
      space();
      if (i_ == s_.size()) return Scan::Partial;
      const char c = s_[i_++];
      if (c == close) return Scan::Complete;
      if (c != ',') return Scan::Invalid;
      space();
      if (i_ == s_.size()) return Scan::Partial;
    }
  }

  Scan string() {
    ++i_;  // the opening quote
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return Scan::Complete;
      if (c < 0x20) return Scan::Invalid;
      if (c != '\\') continue;
      if (i_ == s_.size()) return Scan::Partial;
      const char e = s_[i_++];
      if (e == 'u') {
        for (int k = 0; k < 4; ++k, ++i_) {
          if (i_ == s_.size()) return Scan::Partial;
          if (!std::isxdigit(static_cast<unsigned char>(s_[i_]))) return Scan::Invalid;
        }
      } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
        return Scan::Invalid;
      }
    }
    return Scan::Partial;
  }

  Scan word(std::string_view w) {
    for (const char c : w) {
      if (i_ == s_.size()) return Scan::Partial;
      if (s_[i_++] != c) return Scan::Invalid;
    }
    return Scan::Complete;
  }

  /// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; a number may go on while digits come,
  /// so one running to the end of the text is complete only when the text is final.
  Scan number() {
    const auto digit = [&] { return i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; };
    const auto digits = [&] {  // one or more
      if (i_ == s_.size()) return Scan::Partial;
      if (!digit()) return Scan::Invalid;
      while (digit()) ++i_;
      return Scan::Complete;
    };
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ == s_.size()) return Scan::Partial;
    if (s_[i_] == '0') {
      ++i_;
    } else if (const Scan d = digits(); d != Scan::Complete) {
      return d;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (const Scan d = digits(); d != Scan::Complete) return d;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (const Scan d = digits(); d != Scan::Complete) return d;
    }
    return i_ == s_.size() && !final_ ? Scan::Partial : Scan::Complete;
  }

  std::string_view s_;
  size_t i_;
  bool final_;
};

uint32_t hex4(std::string_view s) {
  return static_cast<uint32_t>(std::stoul(std::string(s), nullptr, 16));
}

/// The end of the complete value at text[pos].
size_t value_end(std::string_view text, size_t pos) { return scan(text, pos, true).end; }

}  // namespace

ScanResult scan(std::string_view text, size_t pos, bool final) {
  Scanner s(text, pos, final);
  Scan kind = s.value(0);
  if (kind == Scan::Partial && final) kind = Scan::Invalid;
  return ScanResult{kind, kind == Scan::Complete ? s.pos() : 0};
}

size_t skip_space(std::string_view text, size_t pos) {
  while (pos < text.size() && is_space(text[pos])) ++pos;
  return pos;
}

std::string compact(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  bool in_string = false;
  for (size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < value.size()) {
        out += value[++i];
      } else if (c == '"') {
        in_string = false;
      }
    } else if (!is_space(c)) {
      out += c;
      in_string = c == '"';
    }
  }
  return out;
}

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static const char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[(c >> 4) & 0xF];
          out += kHex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::optional<std::vector<Member>> members(std::string_view value) {
  if (value.empty() || value[0] != '{') return std::nullopt;
  std::vector<Member> out;
  size_t i = skip_space(value, 1);
  while (value[i] != '}') {
    const size_t key_end = value_end(value, i);
    Member m{*string_value(value.substr(i, key_end - i)), {}};
    i = skip_space(value, skip_space(value, key_end) + 1);  // past ':'
    const size_t end = value_end(value, i);
    m.value = value.substr(i, end - i);
    out.push_back(std::move(m));
    i = skip_space(value, end);
    if (value[i] == ',') i = skip_space(value, i + 1);
  }
  return out;
}

std::optional<std::string_view> find(const std::vector<Member>& m, std::string_view key) {
  for (const Member& member : m) {
    if (member.key == key) return member.value;
  }
  return std::nullopt;
}

std::optional<std::vector<std::string_view>> elements(std::string_view value) {
  if (value.empty() || value[0] != '[') return std::nullopt;
  std::vector<std::string_view> out;
  size_t i = skip_space(value, 1);
  while (value[i] != ']') {
    const size_t end = value_end(value, i);
    out.push_back(value.substr(i, end - i));
    i = skip_space(value, end);
    if (value[i] == ',') i = skip_space(value, i + 1);
  }
  return out;
}

std::optional<std::string> string_value(std::string_view value) {
  if (value.size() < 2 || value[0] != '"') return std::nullopt;
  std::string out;
  for (size_t i = 1; i + 1 < value.size(); ++i) {
    if (value[i] != '\\') {
      out += value[i];
      continue;
    }
    const char e = value[++i];
    switch (e) {
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cpt = hex4(value.substr(i + 1, 4));
        i += 4;
        const bool high = cpt >= 0xD800 && cpt < 0xDC00;
        if (high && value.substr(i + 1, 2) == "\\u") {
          const uint32_t low = hex4(value.substr(i + 3, 4));
          if (low >= 0xDC00 && low < 0xE000) {
            cpt = 0x10000 + ((cpt - 0xD800) << 10) + (low - 0xDC00);
            i += 6;
          }
        }
        if (cpt >= 0xD800 && cpt < 0xE000) cpt = 0xFFFD;  // a lone surrogate
        tok::append_utf8(cpt, out);
        break;
      }
      default:
        out += e;  // " \ /
    }
  }
  return out;
}

}  // namespace tessera::tool_calls::json
