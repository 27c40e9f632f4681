// Writing the GBNF of tool calls: literals, and grammars compiled from JSON schemas
// embedded under a prefix so that several live in one grammar.
#pragma once

#include <string>
#include <string_view>

namespace tessera::tool_calls::gbnf {

/// `text` (UTF-8) as a GBNF string literal, quotes included.
std::string literal(std::string_view text);

/// `grammar` (GBNF text) with every rule name prefixed by `prefix`, so that its root is
/// `prefix` + "root". Strings, character classes, repetition counts and comments are
/// left as they are.
std::string embed(std::string_view grammar, std::string_view prefix);

}  // namespace tessera::tool_calls::gbnf
