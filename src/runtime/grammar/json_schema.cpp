// JSON Schema -> GBNF: the entry point, the keyword table, $ref, anyOf / oneOf, enum /
// const and bounded numbers. Objects, arrays and strings are in json_schema_types.cpp,
// pattern and format in json_schema_pattern.cpp, allOf in json_schema_merge.cpp.
#include "tessera/json_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <utility>

#include "runtime/grammar/json_schema_compiler.h"
#include "runtime/grammar/json_schema_range.h"
#include "runtime/grammar/parser.h"
#include "tessera/grammar.h"

namespace tessera {
namespace grammar::schema {
namespace {

constexpr int kMaxTextDepth = limits::kMaxSchemaTextDepth;

enum class Kind {
  Annotation,  // accepted, constrains nothing
  Defs,        // $defs / definitions: schemas reachable by $ref only
  Constraint,
};

struct Keyword {
  std::string_view name;
  Kind kind;
};

constexpr Keyword kKeywords[] = {
    {"title", Kind::Annotation},        {"description", Kind::Annotation},
    {"$schema", Kind::Annotation},      {"$id", Kind::Annotation},
    {"default", Kind::Annotation},      {"examples", Kind::Annotation},
    {"$comment", Kind::Annotation},     {"readOnly", Kind::Annotation},
    {"writeOnly", Kind::Annotation},    {"deprecated", Kind::Annotation},
    {"contentEncoding", Kind::Annotation}, {"contentMediaType", Kind::Annotation},
    {"contentSchema", Kind::Annotation},
    {"$defs", Kind::Defs},              {"definitions", Kind::Defs},
    {"type", Kind::Constraint},         {"enum", Kind::Constraint},
    {"const", Kind::Constraint},        {"properties", Kind::Constraint},
    {"required", Kind::Constraint},     {"additionalProperties", Kind::Constraint},
    {"items", Kind::Constraint},        {"prefixItems", Kind::Constraint},
    {"minItems", Kind::Constraint},     {"maxItems", Kind::Constraint},
    {"minLength", Kind::Constraint},    {"maxLength", Kind::Constraint},
    {"anyOf", Kind::Constraint},        {"oneOf", Kind::Constraint},
    {"allOf", Kind::Constraint},        {"$ref", Kind::Constraint},
    {"additionalItems", Kind::Constraint}, {"pattern", Kind::Constraint},
    {"format", Kind::Constraint},       {"minimum", Kind::Constraint},
    {"maximum", Kind::Constraint},      {"exclusiveMinimum", Kind::Constraint},
    {"exclusiveMaximum", Kind::Constraint},
};

const Keyword* find_keyword(std::string_view name) {
  for (const Keyword& k : kKeywords) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

/// The keywords that may stand beside `enum` / `const`: those the values are checked
/// against here.
bool allowed_beside_enum(std::string_view name) {
  static const std::set<std::string_view> ok = {
      "type",     "enum",    "const",   "minLength", "maxLength",        "minItems",
      "maxItems", "pattern", "format",  "minimum",   "exclusiveMinimum", "maximum",
      "exclusiveMaximum"};
  return ok.count(name) > 0;
}

/// Compiles the string keywords beside enum / const into a grammar of their own that
/// their string values are checked against; null when there are none to check.
Result<std::shared_ptr<const Grammar>> string_checker(const Json& s, const std::string& ptr) {
  Json strings = Json::object();
  strings["type"] = "string";
  for (const char* keyword : {"pattern", "format"}) {
    if (s.contains(keyword)) strings[keyword] = s[keyword];
  }
  if (strings.size() == 1) return std::shared_ptr<const Grammar>();
  Compiler compiler(strings);
  Result<std::string> text = compiler.run();
  if (!text) {  // its errors point at this schema
    const std::string root = "json schema: (root): ", msg = text.status().message();
    if (msg.rfind(root, 0) != 0) return text.status();
    return schema_error(ptr, msg.substr(root.size()));
  }
  return Grammar::parse(*text, "json schema grammar");
}

int text_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// The value at JSON pointer `pointer` ("" or "/a/b") in `root`, or null.
const Json* resolve_pointer(const Json& root, const std::string& pointer) {
  const Json* at = &root;
  size_t pos = 0;
  while (pos < pointer.size()) {
    const size_t next = std::min(pointer.find('/', pos + 1), pointer.size());
    std::string token;
    for (size_t i = pos + 1; i < next; ++i) {
      if (pointer[i] == '~' && i + 1 < next && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
        token += pointer[++i] == '0' ? '~' : '/';
      } else {
        token += pointer[i];
      }
    }
    if (at->is_object()) {
      const auto it = at->find(token);
      if (it == at->end()) return nullptr;
      at = &*it;
    } else if (at->is_array() && !token.empty() &&
               token.find_first_not_of("0123456789") == std::string::npos &&
               token.size() < 10 && std::stoul(token) < at->size()) {
      at = &(*at)[std::stoul(token)];
    } else {
      return nullptr;
    }
    pos = next;
  }
  return at;
}

/// The JSON type names of a value ("integer" values are also "number").
bool value_has_type(const Json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") {
    if (v.is_number_integer()) return true;
    return v.is_number_float() && std::isfinite(v.get<double>()) &&
           std::floor(v.get<double>()) == v.get<double>();
  }
  return false;
}

size_t utf8_length(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

/// A JSON value as GBNF: its compact text, with the whitespace rule between the tokens
/// of arrays and objects.
std::string value_literal(const Json& v) {
  if (v.is_array()) {
    if (v.empty()) return "\"[\" ws \"]\"";
    std::string out = "\"[\" ws";
    for (size_t i = 0; i < v.size(); ++i)
      out += (i ? " \",\" ws " : " ") + value_literal(v[i]) + " ws";
    return out + " \"]\"";
  }
  if (v.is_object()) {
    if (v.empty()) return "\"{\" ws \"}\"";
    std::string out = "\"{\" ws";
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      out += (first ? " " : " \",\" ws ") + gbnf_literal(Json(key).dump()) + " ws \":\" ws " +
             value_literal(value) + " ws";
      first = false;
    }
    return out + " \"}\"";
  }
  return gbnf_literal(v.dump());
}

}  // namespace

Status schema_error(const std::string& pointer, const std::string& what) {
  return Status::error("json schema: " + (pointer.empty() ? std::string("(root)") : pointer) +
                       ": " + what);
}

std::string pointer_append(const std::string& pointer, std::string_view token) {
  std::string out = pointer + "/";
  for (const char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string Compiler::rule_name(const std::string& hint) {
  if (!forced_name_.empty()) return std::exchange(forced_name_, std::string());
  return w_.reserve(hint);
}

Result<std::string> Compiler::define(const std::string& name, std::string body,
                                     const std::string& ptr) {
  if (!w_.define(name, std::move(body))) {
    return schema_error(ptr, "the grammar would need more than " + std::to_string(kMaxRules) +
                                 " rules (tessera's limit kMaxSchemaRules)");
  }
  return name;
}

Status Compiler::charge(size_t units, const std::string& ptr) {
  if (w_.charge(units)) return Status::ok();
  return schema_error(ptr,
                      "the grammar would need more than " + std::to_string(kMaxRules) +
                          " rules (tessera's limit kMaxSchemaRules)");
}

Status Compiler::check_keywords(const Json& s, const std::string& ptr) const {
  for (const auto& [key, value] : s.items()) {
    const Keyword* k = find_keyword(key);
    if (!k) return schema_error(ptr, "unsupported keyword '" + key + "'");
    if (k->kind == Kind::Defs && !value.is_object())
      return schema_error(ptr, "'" + key + "' must be an object of schemas");
  }
  return Status::ok();
}

bool constrains(std::string_view keyword) {
  const Keyword* k = find_keyword(keyword);
  return k && k->kind == Kind::Constraint;
}

Status Compiler::check_node(const Json& s, const std::string& ptr, int depth) {
  if (s.is_boolean()) return schema_error(ptr, "the schema 'false' matches no value");
  if (!s.is_object()) return schema_error(ptr, "a schema must be an object or a boolean");
  if (depth > kMaxDepth) {
    return schema_error(ptr, "schemas nested deeper than " + std::to_string(kMaxDepth) +
                                 " levels (tessera's limit kMaxSchemaDepth)");
  }
  TESSERA_RETURN_IF_ERROR(check_keywords(s, ptr));
  return Status::ok();
}

Result<std::string> Compiler::compile(const Json& s, const std::string& ptr,
                                      const std::string& hint, int depth) {
  if (s.is_boolean() && s.get<bool>()) return w_.use("value");
  TESSERA_RETURN_IF_ERROR(check_node(s, ptr, depth));
  // A combinator with other constraints beside it is an allOf of them all.
  const size_t combinators = s.count("$ref") + s.count("anyOf") + s.count("oneOf");
  const auto n_constraints = std::count_if(s.items().begin(), s.items().end(),
                                           [](const auto& kv) { return constrains(kv.key()); });
  if (s.contains("allOf") || (combinators > 0 && static_cast<size_t>(n_constraints) > 1))
    return compile_all_of(s, ptr, hint, depth);
  if (s.contains("$ref")) return compile_ref(s, ptr);
  if (s.contains("anyOf") || s.contains("oneOf")) return compile_any_of(s, ptr, hint, depth);
  if (s.contains("enum") || s.contains("const")) return compile_enum(s, ptr, hint);
  return compile_types(s, ptr, hint, depth);
}

Result<std::pair<std::string, const Json*>> Compiler::ref_target(const Json& s,
                                                                 const std::string& ptr) const {
  const Json& ref = s["$ref"];
  if (!ref.is_string()) return schema_error(ptr, "'$ref' must be a string");
  const std::string text = ref.get<std::string>();
  if (text.empty() || text[0] != '#' || (text.size() > 1 && text[1] != '/')) {
    return schema_error(ptr, "unsupported $ref '" + text +
                                 "' (only '#' and '#/...' pointers into this schema)");
  }
  const std::string target = percent_decode(text.substr(1));
  const Json* at = resolve_pointer(root_, target);
  if (!at) return schema_error(ptr, "unresolvable $ref '" + text + "'");
  return std::make_pair(target, at);
}

Result<std::string> Compiler::compile_ref(const Json& s, const std::string& ptr) {
  Result<std::pair<std::string, const Json*>> resolved = ref_target(s, ptr);
  if (!resolved) return resolved.status();
  const std::string& target = resolved->first;
  if (const auto it = refs_.find(target); it != refs_.end()) return it->second;
  const std::string name = w_.reserve(target.substr(target.rfind('/') + 1));
  refs_.emplace(target, name);
  pending_.emplace_back(target, name);
  return name;
}

Result<std::string> Compiler::compile_any_of(const Json& s, const std::string& ptr,
                                             const std::string& hint, int depth) {
  const char* keyword = s.contains("anyOf") ? "anyOf" : "oneOf";
  const Json& alts = s[keyword];
  if (!alts.is_array() || alts.empty())
    return schema_error(ptr, std::string("'") + keyword + "' must be a non-empty array of schemas");
  const std::string name = rule_name(hint);
  std::string body;
  for (size_t i = 0; i < alts.size(); ++i) {
    Result<std::string> alt = compile(alts[i], pointer_append(ptr, keyword) + "/" +
                                      std::to_string(i), name + "-" + std::to_string(i), depth + 1);
    if (!alt) return alt.status();
    body += (i ? " | " : "") + *alt;
  }
  return define(name, body, ptr);
}

Result<std::string> Compiler::compile_enum(const Json& s, const std::string& ptr,
                                           const std::string& hint) {
  const char* keyword = s.contains("enum") ? "enum" : "const";
  for (const auto& [key, value] : s.items()) {
    if (find_keyword(key)->kind == Kind::Constraint && !allowed_beside_enum(key))
      return schema_error(ptr, "'" + key + "' beside '" + keyword + "' is not supported");
  }
  std::vector<Json> values;
  if (s.contains("enum")) {
    if (!s["enum"].is_array() || s["enum"].empty())
      return schema_error(ptr, "'enum' must be a non-empty array");
    for (const Json& v : s["enum"]) {
      if (!s.contains("const") || v == s["const"]) values.push_back(v);
    }
  } else {
    values.push_back(s["const"]);
  }
  std::vector<std::string> types;
  if (s.contains("type")) {
    Result<std::vector<std::string>> t = parse_types(s, ptr);
    if (!t) return t.status();
    types = *t;
  }
  const auto bounds = [&](const char* lo, const char* hi) -> Result<std::pair<uint64_t, uint64_t>> {
    Result<uint64_t> l = count_keyword(s, lo, ptr, 0);
    if (!l) return l.status();
    Result<uint64_t> h = count_keyword(s, hi, ptr, UINT64_MAX);
    if (!h) return h.status();
    return std::make_pair(*l, *h);
  };
  Result<std::pair<uint64_t, uint64_t>> length = bounds("minLength", "maxLength");
  if (!length) return length.status();
  Result<std::pair<uint64_t, uint64_t>> items = bounds("minItems", "maxItems");
  if (!items) return items.status();
  Result<NumberBounds> numbers = number_bounds(s, ptr);
  if (!numbers) return numbers.status();
  Result<std::shared_ptr<const Grammar>> strings = string_checker(s, ptr);
  if (!strings) return strings.status();
  std::vector<std::string> literals;
  for (const Json& v : values) {
    if (!types.empty() && std::none_of(types.begin(), types.end(), [&](const std::string& t) {
          return value_has_type(v, t);
        }))
      continue;
    const uint64_t n = v.is_string() ? utf8_length(v.get<std::string>()) : v.size();
    const auto [lo, hi] = v.is_string() ? *length : *items;
    if ((v.is_string() || v.is_array()) && (n < lo || n > hi)) continue;
    if (v.is_number() && !in_bounds(to_decimal(v), *numbers)) continue;
    if (v.is_string() && *strings) {
      GrammarMatcher m(*strings);
      if (!m.accept_text(v.dump()) || !m.can_end()) continue;
    }
    std::string lit = value_literal(v);
    if (std::find(literals.begin(), literals.end(), lit) == literals.end()) literals.push_back(lit);
  }
  if (literals.empty())
    return schema_error(ptr, std::string("no value of '") + keyword +
                                 "' satisfies the schema's other keywords");
  std::string body;
  for (const std::string& lit : literals) body += (body.empty() ? "" : " | ") + lit;
  if (body.find(" ws") != std::string::npos) w_.use("ws");
  return define(rule_name(hint), body, ptr);
}

Result<std::vector<std::string>> Compiler::parse_types(const Json& s,
                                                       const std::string& ptr) const {
  static const std::set<std::string> known = {"null",   "boolean", "object", "array",
                                              "number", "string",  "integer"};
  const Json& t = s["type"];
  std::vector<std::string> types;
  if (t.is_string()) {
    types.push_back(t.get<std::string>());
  } else if (t.is_array() && !t.empty()) {
    for (const Json& one : t) {
      if (!one.is_string()) break;
      if (std::find(types.begin(), types.end(), one.get<std::string>()) == types.end())
        types.push_back(one.get<std::string>());
    }
    if (types.size() != t.size() && !std::all_of(t.begin(), t.end(), [](const Json& one) {
          return one.is_string();
        }))
      types.clear();
  }
  if (types.empty())
    return schema_error(ptr, "'type' must be a type name or a non-empty array of type names");
  for (const std::string& one : types) {
    if (!known.count(one)) return schema_error(ptr, "unknown type '" + one + "'");
  }
  return types;
}

Result<std::string> Compiler::compile_types(const Json& s, const std::string& ptr,
                                            const std::string& hint, int depth) {
  std::vector<std::string> types;
  if (s.contains("type")) {
    Result<std::vector<std::string>> t = parse_types(s, ptr);
    if (!t) return t.status();
    types = *t;
  } else {
    const bool constrained = std::any_of(s.items().begin(), s.items().end(), [](const auto& kv) {
      return find_keyword(kv.key())->kind == Kind::Constraint;
    });
    if (!constrained) return w_.use("value");
    types = {"object", "array", "string", "number", "boolean", "null"};
  }
  if (std::find(types.begin(), types.end(), "number") != types.end())
    std::erase(types, std::string("integer"));  // number covers integer
  if (types.size() == 1) return compile_type(s, types[0], ptr, hint, depth);
  const std::string name = rule_name(hint);
  std::string body;
  for (const std::string& t : types) {
    Result<std::string> alt = compile_type(s, t, ptr, name + "-" + t, depth);
    if (!alt) return alt.status();
    body += (body.empty() ? "" : " | ") + *alt;
  }
  return define(name, body, ptr);
}

Result<std::string> Compiler::compile_type(const Json& s, const std::string& type,
                                           const std::string& ptr, const std::string& hint,
                                           int depth) {
  if (type == "object") return compile_object(s, ptr, hint, depth);
  if (type == "array") return compile_array(s, ptr, hint, depth);
  if (type == "string") return compile_string(s, ptr, hint);
  if (type == "integer" || type == "number") {
    Result<std::string> bounded = compile_bounded_number(s, type, ptr, hint);
    if (!bounded || !bounded->empty()) return bounded;
  }
  return w_.use(type);  // null, boolean, integer, number: fixed rules
}

Result<std::string> Compiler::compile_bounded_number(const Json& s, const std::string& type,
                                                     const std::string& ptr,
                                                     const std::string& hint) {
  Result<NumberBounds> bounds = number_bounds(s, ptr);
  if (!bounds) return bounds.status();
  if (!bounds->any()) return std::string();
  const std::string body = range_gbnf(*bounds, type == "integer");
  if (body.empty()) {
    return schema_error(ptr, "no " + type +
                                 " (of at most 16 integer and 16 fraction digits) meets "
                                 "'minimum' / 'maximum' / 'exclusiveMinimum' / 'exclusiveMaximum'");
  }
  // What the GBNF parser makes of it: a rule per group, one per optional digit.
  size_t cost = static_cast<size_t>(std::count(body.begin(), body.end(), '('));
  for (size_t at = body.find('{'); at != std::string::npos; at = body.find('{', at + 1)) cost += 16;
  TESSERA_RETURN_IF_ERROR(charge(cost, ptr));
  return define(rule_name(hint), body, ptr);
}

Result<std::string> Compiler::run() {
  refs_.emplace("", "root");
  forced_name_ = "root";
  Result<std::string> top = compile(root_, "", "root", 0);
  if (!top) return top.status();
  if (!forced_name_.empty()) {  // the schema made no rule of its own: root ::= that atom
    forced_name_.clear();
    TESSERA_RETURN_IF_ERROR(define("root", *top, "").status());
  }
  for (size_t i = 0; i < pending_.size(); ++i) {
    const auto [target, name] = pending_[i];
    forced_name_ = name;
    Result<std::string> atom = compile(*resolve_pointer(root_, target), target, name, 0);
    if (!atom) return atom.status();
    if (!forced_name_.empty()) {
      forced_name_.clear();
      TESSERA_RETURN_IF_ERROR(define(name, *atom, target).status());
    }
  }
  return w_.text();
}

}  // namespace grammar::schema

Result<std::string> json_schema_to_grammar(std::string_view schema_json) {
  using grammar::schema::Json;
  if (grammar::schema::text_depth(schema_json) > grammar::schema::kMaxTextDepth) {
    return Status::error("json schema: JSON nested deeper than " +
                         std::to_string(grammar::schema::kMaxTextDepth) +
                         " levels (tessera's limit kMaxSchemaTextDepth)");
  }
  Json schema;
  try {
    schema = Json::parse(schema_json);
  } catch (const Json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    return Status::error(std::string("json schema: not valid JSON: ") + e.what());
  }
  grammar::schema::Compiler compiler(schema);
  Result<std::string> text = compiler.run();
  if (!text) return text.status();
  // A $ref cycle that consumes nothing (a ::= b, b ::= a) is left recursion: say so here.
  Result<grammar::Rules> parsed = grammar::parse_gbnf(*text, "json schema grammar");
  if (!parsed) {
    return Status::error("json schema: the schema has no grammar (" + parsed.status().message() +
                         "); $refs that recurse before matching any text cannot be compiled");
  }
  return text;
}

}  // namespace tessera
