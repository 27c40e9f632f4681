// The JSON-schema compiler's walk over a schema (json_schema.cpp: keywords, $ref,
// combinators, enum/const; json_schema_types.cpp: objects, arrays, strings).
// nlohmann-json stays inside the library: this header is internal.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/grammar/json_schema_gbnf.h"
#include "tessera/limits.h"
#include "tessera/status.h"

namespace tessera::grammar::schema {

using Json = nlohmann::ordered_json;  // keeps `properties` in the schema's order

constexpr int kMaxDepth = limits::kMaxSchemaDepth;
constexpr uint64_t kMaxCount = limits::kMaxSchemaCount;

/// "json schema: POINTER: what" (the root's pointer reads "(root)").
Status schema_error(const std::string& pointer, const std::string& what);
/// `pointer` extended by one reference token (escaped: ~ -> ~0, / -> ~1).
std::string pointer_append(const std::string& pointer, std::string_view token);
/// True for the keywords that constrain values (not annotations, not $defs).
bool constrains(std::string_view keyword);

struct MergePart;      // json_schema_merge.cpp
struct PatternBranch;  // json_schema_regex.h
struct StringFormat;   // json_schema_formats.h

class Compiler {
 public:
  explicit Compiler(const Json& root) : root_(root) {}
  /// The GBNF text of the whole schema.
  Result<std::string> run();

  // Each compile_* returns a GBNF atom (a rule name) matching the schema's values.
  /// What every schema node must be (`true` aside, which callers take first): an object
  /// (false matches nothing), within kMaxDepth, with only known keywords.
  Status check_node(const Json& s, const std::string& ptr, int depth);
  Result<std::string> compile(const Json& s, const std::string& ptr, const std::string& hint,
                              int depth);

 private:
  Status check_keywords(const Json& s, const std::string& ptr) const;
  /// The JSON pointer a $ref names and the schema there.
  Result<std::pair<std::string, const Json*>> ref_target(const Json& s,
                                                         const std::string& ptr) const;
  Result<std::string> compile_ref(const Json& s, const std::string& ptr);
  // allOf, and constraints beside $ref / anyOf / oneOf (json_schema_merge.cpp).
  Result<std::string> compile_all_of(const Json& s, const std::string& ptr,
                                     const std::string& hint, int depth);
  /// `s` as one schema without allOf: its parts merged, or an anyOf of merges when a part
  /// has an anyOf / oneOf.
  Result<Json> merged_schema(const Json& s, const std::string& ptr, int depth);
  /// The schemas to merge: `s`'s constraints, its $ref target's and its allOf entries'.
  Status collect_parts(const Json& s, const std::string& ptr, int depth,
                       std::vector<std::string>& path, std::vector<MergePart>& out);
  Result<Json> merge_parts(const std::vector<MergePart>& parts);
  /// Into `m`: type and enum / const intersected.
  Status merge_types_and_values(const MergePart& p, Json& m);
  /// Into `m`: the tighter lengths, counts and bounds; equal pattern / format; required.
  Status merge_limits(const MergePart& p, Json& m);
  Status merge_objects(const std::vector<const MergePart*>& parts, Json& m);
  Status merge_arrays(const std::vector<const MergePart*>& parts, Json& m);
  Result<std::string> compile_any_of(const Json& s, const std::string& ptr,
                                     const std::string& hint, int depth);
  Result<std::string> compile_enum(const Json& s, const std::string& ptr,
                                   const std::string& hint);
  Result<std::vector<std::string>> parse_types(const Json& s, const std::string& ptr) const;
  Result<std::string> compile_types(const Json& s, const std::string& ptr,
                                    const std::string& hint, int depth);
  Result<std::string> compile_type(const Json& s, const std::string& type,
                                   const std::string& ptr, const std::string& hint, int depth);
  Result<std::string> compile_string(const Json& s, const std::string& ptr,
                                     const std::string& hint);
  /// `minimum` / `maximum` / exclusive ones on an integer or a number; "" when none.
  Result<std::string> compile_bounded_number(const Json& s, const std::string& type,
                                             const std::string& ptr, const std::string& hint);
  // pattern and format (json_schema_pattern.cpp); lo, hi: minLength, maxLength.
  Result<std::string> compile_pattern(const Json& s, uint64_t lo, uint64_t hi,
                                      const std::string& ptr, const std::string& hint);
  Result<std::string> compile_format(const Json& s, const StringFormat& format, uint64_t lo,
                                     uint64_t hi, const std::string& ptr);
  /// Refuses lengths a pattern cannot take in: fine when its strings all meet them, or
  /// when its one part of varying length is a repeated set (clamped here).
  Status fit_lengths(std::vector<PatternBranch>& branches, const Json& s, uint64_t lo,
                     uint64_t hi, const std::string& ptr, const std::string& what) const;
  Result<std::string> compile_array(const Json& s, const std::string& ptr,
                                    const std::string& hint, int depth);
  /// The atoms of an array's leading elements: `prefixItems`, or `items` as an array.
  Result<std::vector<std::string>> array_prefix(const Json& s, const std::string& ptr,
                                                const std::string& hint, int depth);
  /// The atom of the elements after them: `additionalItems` beside `items` as an array,
  /// else `items`; absent or true: any value; "" when false (none).
  Result<std::string> array_rest(const Json& s, const std::string& ptr, const std::string& hint,
                                 int depth);
  Result<std::string> compile_prefix_array(const std::vector<std::string>& prefix,
                                           const std::string& item, uint64_t lo, uint64_t hi,
                                           const std::string& ptr, const std::string& hint);
  Result<std::string> compile_object(const Json& s, const std::string& ptr,
                                     const std::string& hint, int depth);
  Result<std::string> object_body(const std::vector<std::string>& required,
                                  const std::vector<std::string>& optional,
                                  const std::string& extra, const std::string& ptr,
                                  const std::string& hint);
  /// The atom of additional properties' values; "" when additionalProperties is false.
  Result<std::string> additional_value(const Json& s, const std::string& ptr,
                                       const std::string& hint, int depth);
  /// The rule of one additional member (a key none of `declared`, its value `value`).
  Result<std::string> extra_member(const std::string& value,
                                   const std::vector<std::string>& declared,
                                   const std::string& ptr, const std::string& hint);

  /// A non-negative integer keyword (absent: `fallback`), at most kMaxCount.
  Result<uint64_t> count_keyword(const Json& s, const char* name, const std::string& ptr,
                                 uint64_t fallback) const;
  /// Defines `name ::= body`, or the budget error at `ptr`.
  Result<std::string> define(const std::string& name, std::string body, const std::string& ptr);
  Status charge(size_t units, const std::string& ptr);
  /// A rule name for `hint`, or forced_name_ once when set: the first rule a schema
  /// defines is reserved before its children's, so it takes the name of the schema.
  std::string rule_name(const std::string& hint);

  const Json& root_;
  GbnfWriter w_;
  std::map<std::string, std::string> refs_;                    // target pointer -> rule
  std::map<std::string, std::string> merges_;  // text of a schema merged (allOf) -> rule
  std::vector<std::pair<std::string, std::string>> pending_;  // target pointer, rule
  std::string forced_name_;  // the name the next rule_name() returns (root, $ref targets)
};

}  // namespace tessera::grammar::schema
