// JSON Schema -> GBNF: the grammar that constrains generation to JSON documents valid
// under a schema (structured output, `response_format: json_schema`).
#pragma once

#include <string>
#include <string_view>

#include "tessera/status.h"

namespace tessera {

/// Compiles `schema_json` (the schema as JSON text) to GBNF text for Grammar::parse. Every
/// document its `root` rule matches validates against the schema; the documents it
/// matches are those valid ones written in the forms below.
///
/// Supported keywords:
/// - `type` (a name or a list; `integer` is a JSON integer literal, no fraction or
///   exponent); no `type` and no constraint, or the schema `true`: any JSON value. With
///   constraints but no `type`, every type is allowed, each constrained by its keywords.
/// - objects: `properties`, `required`, `additionalProperties` (absent or true: any
///   value; false: none; a schema). Members come in a fixed order: the required ones (in
///   the order of `properties`, then required names that `properties` lacks), then each
///   optional one present or not (in the order of `properties`), then additional ones.
///   Keys are written exactly as the schema spells them; additional keys differ from
///   every declared key and are written without \u escapes, \/ or other control
///   characters (their duplicates are not prevented).
/// - arrays: `items` (a schema or false), `prefixItems`, `minItems`, `maxItems`; the
///   tuple form before draft 2020-12, `items` as an array (= `prefixItems`) with
///   `additionalItems` (absent or true: any value may follow; false: none; a schema), which
///   is ignored beside `items` that is not an array. As JSON Schema says (and unlike
///   llama.cpp's converter, which demands exactly the tuple), a tuple alone allows fewer
///   and more elements: `minItems` and `additionalItems: false` pin its length.
/// - strings: `minLength`, `maxLength` (code points; an escape or a surrogate pair is
///   one). Any JSON string character, escapes included; no raw control characters; a
///   \u escape must be a valid code point (no lone surrogates).
/// - `enum` and `const` (any JSON values, written as their compact JSON text with the
///   whitespace below between tokens; beside them only `type` and the length/count
///   keywords, which filter the values); `anyOf` and `oneOf` (alternatives: oneOf's
///   exclusivity is not enforced); `allOf` with one schema; `$ref` to "#" or a "#/..."
///   JSON pointer in the schema (`#/$defs/NAME`, `#/definitions/NAME`), recursion
///   included; `$defs` / `definitions`.
/// - annotations, accepted and ignored: `title`, `description`, `$schema`, `$id`,
///   `default`, `examples`, `$comment`, `readOnly`, `writeOnly`, `deprecated`.
/// Everything else (`pattern`, `format`, `minimum`, `multipleOf`, `patternProperties`,
/// `if`, ...) is an error; so are constraints beside `$ref` / `anyOf` / `oneOf` / `allOf`.
///
/// Whitespace: none before or after the document; between tokens nothing, one space, or
/// one newline followed by at most 20 spaces or tabs, so that a model cannot pad forever.
/// Numbers have at most 16 integer digits, 16 fraction digits and 2 exponent digits (so
/// every number fits a double).
///
/// Limits: schemas nested at most 64 deep, JSON text nested at most 512 deep, counts at
/// most 10000, at most 20000 grammar rules (each bounded repetition unit counted).
///
/// Errors name the problem and where, as a JSON pointer ("(root)" for the top): text that
/// is not JSON, a keyword that is not supported
/// ("json schema: /properties/age: unsupported keyword 'multipleOf'"), a bad value, an
/// unresolvable $ref, a schema that matches nothing (false, minLength above maxLength),
/// a limit passed, $refs that recurse without matching text.
Result<std::string> json_schema_to_grammar(std::string_view schema_json);

}  // namespace tessera
