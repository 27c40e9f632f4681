// GBNF literals, and the renaming that embeds one grammar in another.
#include "runtime/tool_calls/gbnf.h"

#include "runtime/tool_calls/json_text.h"

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
  // A GBNF literal escapes as a JSON string does (\" \\ \n \r \t, \u00XX for the other
  // control characters): the same text.
  return json::quote(text);
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
