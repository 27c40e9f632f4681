// allOf, and constraints beside $ref / anyOf / oneOf: the schemas merged into one.
// Each schema gives parts: those of its $ref target and of its allOf entries,
// recursively, then its own constraints (so a base's properties come first in objects). A part with
// anyOf / oneOf is distributed over the others (allOf [A, anyOf [B, C]] = anyOf [allOf [A, B],
// allOf [A, C]]); parts without them are merged keyword by keyword into a schema valid exactly
// where all of them are:
//   type: the types all allow; enum / const: the values all list; lengths, counts and
//   bounds: the tightest; pattern, format: equal ones (two differing ones: an error);
//   properties: each key's schemas as an allOf, a part without the key contributing its
//   additionalProperties (false: the key is forbidden); additionalProperties: all of
//   them; required: the union; prefixItems / items likewise, position by position.
#include <algorithm>

#include "runtime/grammar/json_schema_compiler.h"
#include "runtime/grammar/json_schema_formats.h"
#include "runtime/grammar/json_schema_range.h"

namespace tessera::grammar::schema {

struct MergePart {
  Json schema;  // the constraints of one schema, without $ref and allOf
  std::string ptr;
};

namespace {

/// `schemas` as one: true (none), the one, or their allOf.
/// `schemas` as one: true (none constrains anything), the one that does, or their allOf.
Json all_of(const Json& schemas) {
  Json kept = Json::array();
  for (const Json& s : schemas) {
    const bool constrains_something =
        s.is_boolean()
            ? !s.get<bool>()
            : !s.is_object() || std::any_of(s.items().begin(), s.items().end(),
                                            [](const auto& kv) { return constrains(kv.key()); });
    if (constrains_something) kept.push_back(s);
  }
  if (kept.empty()) return Json(true);
  if (kept.size() == 1) return kept[0];
  Json out = Json::object();
  out["allOf"] = kept;
  return out;
}

std::string decimal_text(const Decimal& d) {
  return (d.negative ? "-" : "") + d.int_part + (d.frac.empty() ? "" : "." + d.frac);
}

/// One part's array keywords: the leading positions' schemas and the rest's.
struct ArrayPart {
  std::vector<Json> prefix;
  Json rest = true;
};

}  // namespace

Status Compiler::collect_parts(const Json& s, const std::string& ptr, int depth,
                               std::vector<std::string>& path, std::vector<MergePart>& out) {
  if (s.is_boolean() && s.get<bool>()) return Status::ok();
  TESSERA_RETURN_IF_ERROR(check_node(s, ptr, depth));
  Json rest = Json::object();
  for (const auto& [key, value] : s.items()) {
    if (key == "allOf" || key == "$ref" || !constrains(key)) continue;
    if (key == "format" && value.is_string() && !find_format(value.get<std::string>())) continue;
    rest[key] = value;
  }
  if (s.contains("$ref")) {
    Result<std::pair<std::string, const Json*>> target = ref_target(s, ptr);
    if (!target) return target.status();
    if (std::find(path.begin(), path.end(), target->first) != path.end()) {
      return schema_error(ptr,
                          "'$ref' leads back to a schema it is merged with (allOf, or "
                          "constraints beside $ref): the merge would not end");
    }
    path.push_back(target->first);
    TESSERA_RETURN_IF_ERROR(collect_parts(*target->second, target->first, depth + 1, path, out));
    path.pop_back();
  }
  if (s.contains("allOf")) {
    const Json& all = s["allOf"];
    if (!all.is_array() || all.empty())
      return schema_error(ptr, "'allOf' must be a non-empty array of schemas");
    for (size_t i = 0; i < all.size(); ++i) {
      TESSERA_RETURN_IF_ERROR(collect_parts(
          all[i], pointer_append(ptr, "allOf") + "/" + std::to_string(i), depth + 1, path, out));
    }
  }
  if (!rest.empty()) out.push_back({std::move(rest), ptr});  // last: a base's members first
  return Status::ok();
}

// A merge is a rule of its own, named before it is compiled and remembered by the
// schema's text: a recursive schema that meets the same merge again (a property whose
// allOf includes a $ref back to the schema) refers to that rule instead of merging again.
Result<std::string> Compiler::compile_all_of(const Json& s, const std::string& ptr,
                                             const std::string& hint, int depth) {
  const std::string key = s.dump();
  if (const auto it = merges_.find(key); it != merges_.end()) return it->second;
  const std::string name = rule_name(hint);
  merges_.emplace(key, name);
  Result<Json> one = merged_schema(s, ptr, depth);
  if (!one) return one.status();
  forced_name_ = name;  // the first rule the merged schema makes takes the name
  Result<std::string> atom = compile(*one, pointer_append(ptr, "allOf"), name, depth + 1);
  if (!atom || forced_name_.empty()) return atom;
  forced_name_.clear();  // it made no rule of its own: name ::= that atom
  return define(name, *atom, ptr);
}

Result<Json> Compiler::merged_schema(const Json& s, const std::string& ptr, int depth) {
  std::vector<MergePart> parts;
  std::vector<std::string> path;
  TESSERA_RETURN_IF_ERROR(collect_parts(s, ptr, depth, path, parts));
  for (size_t i = 0; i < parts.size(); ++i) {
    const Json& part = parts[i].schema;
    const char* keyword = part.contains("anyOf")   ? "anyOf"
                          : part.contains("oneOf") ? "oneOf"
                                                   : nullptr;
    if (!keyword) continue;
    const Json& alts = part[keyword];
    if (!alts.is_array() || alts.empty()) {
      return schema_error(parts[i].ptr,
                          std::string("'") + keyword + "' must be a non-empty array of schemas");
    }
    Json others = Json::array();
    for (size_t j = 0; j < parts.size(); ++j) {
      if (j != i) others.push_back(parts[j].schema);
    }
    Json rest = part;
    rest.erase(keyword);
    if (!rest.empty()) others.push_back(rest);
    Json choice = Json::object();
    choice["anyOf"] = Json::array();
    for (const Json& alt : alts) {
      Json all = others;
      all.push_back(alt);
      choice["anyOf"].push_back(all_of(all));
    }
    return choice;
  }
  return merge_parts(parts);
}

Result<Json> Compiler::merge_parts(const std::vector<MergePart>& parts) {
  Json m = Json::object();
  std::vector<const MergePart*> objects, arrays;
  for (const MergePart& p : parts) {
    TESSERA_RETURN_IF_ERROR(merge_types_and_values(p, m));
    TESSERA_RETURN_IF_ERROR(merge_limits(p, m));
    const Json& s = p.schema;
    if (s.contains("properties") || s.contains("additionalProperties")) objects.push_back(&p);
    if (s.contains("items") || s.contains("prefixItems") || s.contains("additionalItems"))
      arrays.push_back(&p);
  }
  TESSERA_RETURN_IF_ERROR(merge_objects(objects, m));
  TESSERA_RETURN_IF_ERROR(merge_arrays(arrays, m));
  return m;
}

Status Compiler::merge_types_and_values(const MergePart& p, Json& m) {
  const Json& s = p.schema;
  if (s.contains("type")) {
    Result<std::vector<std::string>> t = parse_types(s, p.ptr);
    if (!t) return t.status();
    std::vector<std::string> both;
    if (!m.contains("type")) both = *t;
    for (const Json& a : m.contains("type") ? m["type"] : Json::array()) {
      for (const std::string& b : *t) {
        const std::string common =
            a == b                                                                   ? b
            : (a == "integer" && b == "number") || (a == "number" && b == "integer") ? "integer"
                                                                                     : "";
        if (!common.empty() && std::find(both.begin(), both.end(), common) == both.end())
          both.push_back(common);
      }
    }
    if (both.empty()) return schema_error(p.ptr, "'allOf': no type is allowed by every schema");
    m["type"] = both;
  }
  for (const char* keyword : {"enum", "const"}) {
    if (!s.contains(keyword)) continue;
    const Json list = std::string(keyword) == "const" ? Json::array({s["const"]}) : s["enum"];
    if (!list.is_array() || list.empty())
      return schema_error(p.ptr, "'enum' must be a non-empty array");
    Json both = Json::array();
    for (const Json& v : m.contains("enum") ? m["enum"] : list) {
      if (std::find(list.begin(), list.end(), v) != list.end()) both.push_back(v);
    }
    if (both.empty()) {
      return schema_error(p.ptr,
                          "'allOf': no value of 'enum' / 'const' is allowed by every schema");
    }
    m["enum"] = both;
  }
  return Status::ok();
}

Status Compiler::merge_limits(const MergePart& p, Json& m) {
  const Json& s = p.schema;
  for (const char* keyword : {"minLength", "minItems", "maxLength", "maxItems"}) {
    if (!s.contains(keyword)) continue;
    Result<uint64_t> n = count_keyword(s, keyword, p.ptr, 0);
    if (!n) return n.status();
    const bool is_min = std::string_view(keyword).substr(0, 3) == "min";
    if (!m.contains(keyword) ||
        (is_min ? *n > m[keyword].get<uint64_t>() : *n < m[keyword].get<uint64_t>()))
      m[keyword] = *n;
  }
  Result<NumberBounds> mine = number_bounds(m, p.ptr), theirs = number_bounds(s, p.ptr);
  if (!theirs) return theirs.status();
  if (!mine) return mine.status();
  for (const auto& [bound, other, sign, inclusive, exclusive] :
       {std::make_tuple(&mine->lo, &theirs->lo, 1, "minimum", "exclusiveMinimum"),
        std::make_tuple(&mine->hi, &theirs->hi, -1, "maximum", "exclusiveMaximum")}) {
    if (!other->present) continue;
    const int c = bound->present ? compare(other->value, bound->value) * sign : 1;
    if (c < 0 || (c == 0 && !other->strict)) continue;  // the merged bound is as tight
    m.erase(inclusive);
    m.erase(exclusive);
    m[other->strict ? exclusive : inclusive] = Json::parse(decimal_text(other->value));
  }
  for (const char* keyword : {"pattern", "format"}) {
    if (!s.contains(keyword)) continue;
    if (m.contains(keyword) && m[keyword] != s[keyword]) {
      return schema_error(p.ptr, std::string("'allOf': two different '") + keyword +
                                     "' values cannot be merged into one grammar");
    }
    m[keyword] = s[keyword];
  }
  if (s.contains("required")) {
    const Json& r = s["required"];
    if (!r.is_array() ||
        !std::all_of(r.begin(), r.end(), [](const Json& v) { return v.is_string(); }))
      return schema_error(p.ptr, "'required' must be an array of strings");
    if (!m.contains("required")) m["required"] = Json::array();
    for (const Json& key : r) {
      Json& all = m["required"];
      if (std::find(all.begin(), all.end(), key) == all.end()) all.push_back(key);
    }
  }
  return Status::ok();
}

Status Compiler::merge_objects(const std::vector<const MergePart*>& parts, Json& m) {
  std::vector<std::string> keys;
  for (const MergePart* p : parts) {
    const Json& s = p->schema;
    if (s.contains("properties")) {
      if (!s["properties"].is_object())
        return schema_error(p->ptr, "'properties' must be an object of schemas");
      for (const auto& [key, value] : s["properties"].items()) {
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
      }
    }
    if (s.contains("additionalProperties") && !s["additionalProperties"].is_boolean() &&
        !s["additionalProperties"].is_object())
      return schema_error(p->ptr, "'additionalProperties' must be a boolean or a schema");
  }
  // The schemas one part sets for `key`: its property's, else its additionalProperties'.
  const auto schemas_for = [&](const std::string* key, Json& list) {
    bool forbidden = false;
    for (const MergePart* p : parts) {
      const Json& s = p->schema;
      if (key && s.contains("properties") && s["properties"].contains(*key)) {
        list.push_back(s["properties"][*key]);
      } else if (s.contains("additionalProperties")) {
        const Json& ap = s["additionalProperties"];
        if (ap.is_object())
          list.push_back(ap);
        else if (!ap.get<bool>())
          forbidden = true;
      }
    }
    return !forbidden;
  };
  Json props = Json::object();
  for (const std::string& key : keys) {
    Json list = Json::array();
    if (schemas_for(&key, list)) props[key] = all_of(list);
  }
  if (!props.empty()) m["properties"] = props;
  Json extra = Json::array();
  if (!schemas_for(nullptr, extra)) {
    m["additionalProperties"] = false;
  } else if (!extra.empty()) {
    m["additionalProperties"] = all_of(extra);
  }
  return Status::ok();
}

Status Compiler::merge_arrays(const std::vector<const MergePart*>& parts, Json& m) {
  std::vector<ArrayPart> views;
  size_t longest = 0;
  for (const MergePart* p : parts) {
    const Json& s = p->schema;
    const bool tuple = s.contains("items") && s["items"].is_array();
    if (tuple && s.contains("prefixItems")) {
      return schema_error(p->ptr,
                          "'items' as an array (the tuple form before draft 2020-12) and "
                          "'prefixItems' together: give one of them");
    }
    const char* prefix_kw = tuple ? "items" : "prefixItems";
    const char* rest_kw = tuple ? "additionalItems" : "items";
    ArrayPart view;
    if (s.contains(prefix_kw)) {
      if (!s[prefix_kw].is_array() || s[prefix_kw].empty())
        return schema_error(
            p->ptr, std::string("'") + prefix_kw + "' must be a non-empty array of schemas");
      view.prefix.assign(s[prefix_kw].begin(), s[prefix_kw].end());
    }
    if (s.contains(rest_kw)) view.rest = s[rest_kw];
    longest = std::max(longest, view.prefix.size());
    views.push_back(std::move(view));
  }
  // Position i's schemas (i == longest: the rest's); false when some part forbids it.
  const auto at = [&](size_t i, Json& list) {
    for (const ArrayPart& v : views) {
      const Json& x = i < v.prefix.size() ? v.prefix[i] : v.rest;
      if (x.is_boolean()) {
        if (!x.get<bool>()) return false;
      } else {
        list.push_back(x);
      }
    }
    return true;
  };
  Json prefix = Json::array();
  for (size_t i = 0; i <= longest; ++i) {
    Json list = Json::array();
    if (!at(i, list)) {
      m["items"] = false;  // nothing from position i on
      break;
    }
    if (i == longest) {
      if (!list.empty()) m["items"] = all_of(list);
    } else {
      prefix.push_back(all_of(list));
    }
  }
  if (!prefix.empty()) m["prefixItems"] = prefix;
  return Status::ok();
}

}  // namespace tessera::grammar::schema
