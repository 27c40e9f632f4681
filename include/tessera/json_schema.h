// JSON Schema -> GBNF: the grammar that constrains generation to JSON documents valid
// under a schema (structured output, `response_format: json_schema`).
#pragma once

#include <string>
#include <string_view>

#include "tessera/status.h"

namespace tessera {

/// Compiles `schema_json` (the schema as JSON text) to GBNF text for Grammar::parse. Every
/// document its `root` rule matches validates against the schema; the documents it
/// matches are those valid ones written in the forms below. docs/server.md has a table of
/// every keyword.
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
/// - `pattern`: an ECMA-262 regular expression matched against code points (the `u`
///   flag): literals and escapes, \d \w \s \D \W \S, `.` (not a line terminator),
///   classes with ranges and negation, groups (...) (?:...) (?<name>...), `|`, quantifiers
///   * + ? {m} {m,} {m,n} (lazy ones match the same strings), `^` at the start and `$` at
///   the end of the pattern or of a top-level alternative. As JSON Schema says, a pattern
///   is a search, not anchored: a side without `^` / `$` takes any characters there
///   ("ab" matches "xaby"; write "^ab$" for exactly "ab"). llama.cpp's converter refuses
///   a pattern without both anchors and reads the rest as anchored; here the meaning is
///   JSON Schema's and only the anchors bound what the model may add. The string's
///   characters are written one way, as JSON.stringify writes them: raw, or \" \\ \b \f
///   \n \r \t, or \u00xx (lower case) for other control characters. Refused, by name:
///   lookarounds and backreferences (no grammar can express a backreference), \b \B,
///   \p{...}, anchors elsewhere. Beside `minLength` / `maxLength` only when every string
///   the pattern matches meets them, or when its one part of varying length is a
///   repeated class (`^[a-z]+$`: its count is clamped).
/// - `format` (strings): date, time, date-time (RFC 3339: days per month and leap years;
///   time with its offset, seconds 00-59, at most 9 fraction digits), duration (RFC 3339
///   appendix A, at most 9 digits per number), email (dot-atom local part of at most 32
///   characters plus dots, @, a host name of at most 6 labels), hostname (RFC 1123: at
///   most 8 labels of at most 30 characters), ipv4 (no leading zeros), ipv6 (RFC 4291
///   text forms, no zone), uuid, and llama.cpp's uuid1 ... uuid5 (that version and the
///   RFC 4122 variant). Other formats are annotations, accepted and ignored (JSON Schema's
///   default). Not beside `pattern`; beside `minLength` / `maxLength` only when every
///   string of the format meets them.
/// - numbers: `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numbers, or
///   draft 4's booleans beside minimum / maximum), on `integer` and on `number`, exactly:
///   the digits are compared with the bounds' decimal digits (a float bound as its
///   shortest text, 0.1 as 0.1). A bounded number is written without an exponent and
///   never as "-0".
/// - `enum` and `const` (any JSON values, written as their compact JSON text with the
///   whitespace below between tokens; beside them only `type`, the length/count keywords,
///   `pattern`, `format` and the bounds, which filter the values); `anyOf` and `oneOf`
///   (alternatives: oneOf's exclusivity is not enforced); `$ref` to "#" or a "#/..." JSON
///   pointer in the schema (`#/$defs/NAME`, `#/definitions/NAME`), recursion included;
///   `$defs` / `definitions`.
/// - `allOf`, and constraints beside `$ref` / `anyOf` / `oneOf`: the schemas are merged
///   into one (their $refs followed): types, enum values intersected; the tightest
///   lengths, counts and bounds; properties and prefixItems position by position, each a
///   merge of its schemas, a schema without the key contributing its
///   additionalProperties (false forbids the key); required united; an anyOf / oneOf
///   inside is distributed (allOf [A, anyOf [B, C]] = anyOf [allOf [A, B], allOf [A, C]]).
///   Refused: two different `pattern`s or `format`s, $refs that lead back into the merge.
/// - annotations, accepted and ignored: `title`, `description`, `$schema`, `$id`,
///   `default`, `examples`, `$comment`, `readOnly`, `writeOnly`, `deprecated`,
///   `contentEncoding`, `contentMediaType`, `contentSchema`.
/// Everything else is an error: `not`, `if` / `then` / `else`, `uniqueItems` (no grammar
/// can express them in general), `multipleOf`, `patternProperties`, `propertyNames`,
/// `minProperties`, `maxProperties`, `contains`, `dependentRequired`, ... (not done).
///
/// Whitespace: none before or after the document; between tokens nothing, one space, or
/// one newline followed by at most 20 spaces or tabs, so that a model cannot pad forever.
/// Numbers have at most 16 integer digits, 16 fraction digits and 2 exponent digits (so
/// every number fits a double).
///
/// Limits: schemas nested at most 64 deep, JSON text nested at most 512 deep, counts (and
/// a pattern's repetition counts) at most 10000, pattern groups nested at most 64 deep, at
/// most 20000 grammar rules (each bounded repetition unit counted).
///
/// Errors name the problem and where, as a JSON pointer ("(root)" for the top), and the
/// keyword: text that is not JSON, a keyword that is not supported
/// ("json schema: /properties/age: unsupported keyword 'multipleOf'"), a bad value, a
/// pattern construct ("json schema: /properties/id: 'pattern' \"(a)\\1\": backreference
/// '\1' is not supported: no grammar can express it (character 4)"), an unresolvable $ref,
/// a schema that matches nothing (false, minLength above maxLength, bounds with no
/// number between), a limit passed, $refs that recurse without matching text.
Result<std::string> json_schema_to_grammar(std::string_view schema_json);

}  // namespace tessera
