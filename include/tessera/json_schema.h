// JSON Schema -> GBNF: the grammar that constrains generation to JSON documents valid
// under a schema (structured output, `response_format: json_schema`).
#pragma once

#include <string>
#include <string_view>

#include "tessera/status.h"

namespace tessera {

/// Compiles `schema_json` (the schema as JSON text) to GBNF text whose `root` rule matches
/// exactly the JSON texts (compact or with spaces between tokens, as json_schema_to_grammar
/// documents) that validate against the schema. Errors name the problem and where, as a
/// JSON pointer: text that is not JSON, a keyword that is not supported
/// ("json schema: /properties/age: unsupported keyword 'multipleOf'"), a bad value, an
/// unresolvable $ref, nesting deeper than the limit. Nothing unsupported is ignored.
Result<std::string> json_schema_to_grammar(std::string_view schema_json);

}  // namespace tessera
