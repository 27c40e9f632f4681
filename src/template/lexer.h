// The Jinja lexer: template source to tokens, with jinja2's whitespace rules applied here
// (as jinja2 applies them in its lexer): `-` on a tag strips the whitespace beside it,
// trim_blocks drops the first newline after a block or comment tag, lstrip_blocks drops
// the spaces and tabs before a block or comment tag that starts its line, `+` turns both
// off for its side. Line endings are normalised to "\n" and one trailing newline of the
// source is dropped (jinja2's keep_trailing_newline=False). `{% raw %}` bodies come out
// as one text token.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::jinja {

struct Token {
  enum class Type { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, End };
  Type type;
  std::string text;  // Text: the text; String: the unescaped value; Name/Op/Int/Float: as written
  int line = 1;
  int column = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

/// Throws TemplateError (TemplateSyntaxError) with the position of a bad token, an
/// unterminated tag, string or comment.
std::vector<Token> lex(std::string_view source, const LexOptions& options);

}  // namespace tessera::jinja
