// GBNF literals, and the renaming that embeds one grammar in another.
#include "runtime/tool_calls/gbnf.h"

namespace tessera::tool_calls::gbnf {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

/// The end of the construct that opens at text[i] and closes with `close` (a backslash
/// escapes the next character), or the end of the text.
size_t closing(std::string_view text, size_t i, char close) {
  for (++i; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == close) {
      return i + 1;
    }
  }
  return text.size();
}

}  // namespace

std::string literal(std::string_view text) {
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
          static const char kHex[] = "0123456789ABCDEF";
          out += "\\x";
          out += kHex[(c >> 4) & 0xF];
          out += kHex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string embed(std::string_view grammar, std::string_view prefix) {
  std::string out;
  out.reserve(grammar.size() * 5 / 4);
  for (size_t i = 0; i < grammar.size();) {
    const char c = grammar[i];
    size_t end = i + 1;
    if (c == '"') {
      end = closing(grammar, i, '"');
    } else if (c == '[') {
      end = closing(grammar, i, ']');
    } else if (c == '{') {
      end = closing(grammar, i, '}');
    } else if (c == '#') {
      end = std::min(grammar.size(), grammar.find('\n', i));
    } else if (is_name_char(c)) {
      while (end < grammar.size() && is_name_char(grammar[end])) ++end;
      out += prefix;
    }
    out += grammar.substr(i, end - i);
    i = end;
  }
  return out;
}

}  // namespace tessera::tool_calls::gbnf
