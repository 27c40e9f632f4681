// The Jinja parser: tokens to a tree, with jinja2's grammar and operator precedence
// (lowest first): `x if c else y`, or, and, not, comparisons (== != < <= > >= in, not
// in), + -, ~, * / // %, **, unary - +, then postfix (.attr, [index], [a:b:c], calls),
// filters `|f(...)` and tests `is [not] t(...)`.
#pragma once

#include <vector>

#include "template/ast.h"
#include "template/lexer.h"

namespace tessera::jinja {

/// Throws TemplateError (TemplateSyntaxError) at the token where the template goes
/// wrong: an unknown tag, a missing `end...`, an unexpected token, nesting past `max_depth`.
Body parse(const std::vector<Token>& tokens, int max_depth);

}  // namespace tessera::jinja
