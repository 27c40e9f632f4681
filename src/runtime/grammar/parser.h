// GBNF text -> Rules (llama.cpp's grammar syntax), with checks: every referenced rule
// defined once, a `root` rule, no left recursion.
#pragma once

#include <string_view>

#include "runtime/grammar/rules.h"
#include "tessera/status.h"

namespace tessera::grammar {

/// Parses GBNF. Errors read "<source>:LINE:COLUMN: what" (1-based; columns count
/// characters).
Result<Rules> parse_gbnf(std::string_view text, std::string_view source);

/// The check after parsing: reports the first rule (in definition order) that can derive
/// itself as its first symbol, directly or through rules that can be empty.
Status check_left_recursion(const Rules& rules, std::string_view source);

}  // namespace tessera::grammar
