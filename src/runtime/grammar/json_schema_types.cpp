// JSON Schema -> GBNF for the structured types: strings (length; pattern and format are
// in json_schema_pattern.cpp), arrays (items, prefixItems, counts) and objects
// (properties in order, required, additionalProperties).
#include <algorithm>

#include "runtime/grammar/json_schema_compiler.h"
#include "runtime/grammar/json_schema_formats.h"

namespace tessera::grammar::schema {
namespace {

constexpr uint64_t kUnbounded = UINT64_MAX;

/// A GBNF repetition suffix for lo..hi copies (hi may be kUnbounded; hi >= 1).
std::string repeat(uint64_t lo, uint64_t hi) {
  if (hi == kUnbounded && lo <= 1) return lo == 0 ? "*" : "+";
  if (lo == 0 && hi == 1) return "?";
  std::string out = "{";  // appended piece by piece: GCC 12 warns (-Wrestrict) on "{" + ...
  out += std::to_string(lo);
  if (hi != lo) {
    out += ',';
    if (hi != kUnbounded) out += std::to_string(hi);
  }
  out += '}';
  return out;
}

/// What a bounded repetition costs in parsed rules.
size_t repeat_cost(uint64_t lo, uint64_t hi) { return hi == kUnbounded ? 1 : hi - lo + 1; }

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    out += (out.empty() ? "" : sep) + p;
  }
  return out;
}

/// The JSON text of a key without its quotes, as nlohmann escapes it.
std::string key_contents(const std::string& key) {
  const std::string text = Json(key).dump();
  return text.substr(1, text.size() - 2);
}

}  // namespace

Result<uint64_t> Compiler::count_keyword(const Json& s, const char* name, const std::string& ptr,
                                         uint64_t fallback) const {
  if (!s.contains(name)) return fallback;
  const Json& v = s[name];
  uint64_t n = 0;
  if (v.is_number_unsigned()) {
    n = v.get<uint64_t>();
  } else if (v.is_number_float() && v.get<double>() >= 0 && v.get<double>() < 1e18 &&
             static_cast<double>(static_cast<uint64_t>(v.get<double>())) == v.get<double>()) {
    n = static_cast<uint64_t>(v.get<double>());
  } else {
    return schema_error(ptr, std::string("'") + name + "' must be a non-negative integer");
  }
  if (n > kMaxCount) {
    return schema_error(ptr, std::string("'") + name + "' " + std::to_string(n) +
                                 " is above tessera's limit kMaxSchemaCount = " + std::to_string(kMaxCount));
  }
  return n;
}

Result<std::string> Compiler::compile_string(const Json& s, const std::string& ptr,
                                             const std::string& hint) {
  Result<uint64_t> lo = count_keyword(s, "minLength", ptr, 0);
  if (!lo) return lo.status();
  Result<uint64_t> hi = count_keyword(s, "maxLength", ptr, kUnbounded);
  if (!hi) return hi.status();
  if (*lo > *hi) return schema_error(ptr, "'minLength' is above 'maxLength': no string matches");
  const StringFormat* format = nullptr;  // formats tessera has no rule for are annotations
  if (s.contains("format")) {
    if (!s["format"].is_string()) return schema_error(ptr, "'format' must be a string");
    format = find_format(s["format"].get<std::string>());
  }
  if (s.contains("pattern")) {
    if (format) {
      return schema_error(ptr, "'pattern' beside 'format' \"" + format->name +
                                   "\" cannot be combined in one grammar");
    }
    return compile_pattern(s, *lo, *hi, ptr, hint);
  }
  if (format) return compile_format(s, *format, *lo, *hi, ptr);
  if (*lo == 0 && *hi == kUnbounded) return w_.use("string");
  const std::string name = rule_name(hint);
  if (*hi == 0) return define(name, R"("\"" "\"")", ptr);
  TESSERA_RETURN_IF_ERROR(charge(repeat_cost(*lo, *hi), ptr));
  return define(name, R"("\"" )" + w_.use("char") + repeat(*lo, *hi) + R"( "\"")", ptr);
}

Result<std::vector<std::string>> Compiler::array_prefix(const Json& s, const std::string& ptr,
                                                       const std::string& hint, int depth) {
  const bool tuple = s.contains("items") && s["items"].is_array();
  if (tuple && s.contains("prefixItems")) {
    return schema_error(ptr, "'items' as an array (the tuple form before draft 2020-12) and 'prefixItems' "
                             "together: give one of them");
  }
  const char* keyword = tuple ? "items" : "prefixItems";
  std::vector<std::string> prefix;
  if (!s.contains(keyword)) return prefix;
  const Json& p = s[keyword];
  if (!p.is_array() || p.empty())
    return schema_error(ptr, std::string("'") + keyword + "' must be a non-empty array of schemas");
  for (size_t i = 0; i < p.size(); ++i) {
    Result<std::string> a = compile(p[i], pointer_append(ptr, keyword) + "/" + std::to_string(i),
                                    hint + "-" + std::to_string(i), depth + 1);
    if (!a) return a.status();
    prefix.push_back(*a);
  }
  return prefix;
}

Result<std::string> Compiler::array_rest(const Json& s, const std::string& ptr, const std::string& hint,
                                         int depth) {
  const bool tuple = s.contains("items") && s["items"].is_array();
  const char* keyword = tuple ? "additionalItems" : "items";  // additionalItems is ignored otherwise
  if (!s.contains(keyword)) return w_.use("value");
  const Json& rest = s[keyword];
  if (rest.is_boolean()) return rest.get<bool>() ? w_.use("value") : std::string();
  return compile(rest, pointer_append(ptr, keyword), hint + "-item", depth + 1);
}

Result<std::string> Compiler::compile_array(const Json& s, const std::string& ptr,
                                            const std::string& hint, int depth) {
  const std::string name = rule_name(hint);
  Result<std::string> item = array_rest(s, ptr, name, depth);
  if (!item) return item.status();
  const bool more_items = !item->empty();  // items beyond the prefix allowed
  Result<std::vector<std::string>> prefix = array_prefix(s, ptr, name, depth);
  if (!prefix) return prefix.status();
  Result<uint64_t> lo = count_keyword(s, "minItems", ptr, 0);
  if (!lo) return lo.status();
  Result<uint64_t> hi = count_keyword(s, "maxItems", ptr, kUnbounded);
  if (!hi) return hi.status();
  if (!more_items) *hi = std::min<uint64_t>(*hi, prefix->size());
  if (*lo > *hi) {
    return schema_error(ptr, more_items ? "'minItems' is above 'maxItems': no array matches"
                                        : "'minItems' is above the items allowed: no array matches");
  }
  return compile_prefix_array(*prefix, *item, *lo, *hi, ptr, name);
}

// Elements e_1..e_n (n in [lo, hi]): e_j is prefix[j-1] for j <= k = prefix.size(), else
// `item`. After element j comes tail(j): for j >= k a plain repetition of ", item", for
// j < k a rule: ", e_{j+1} tail(j+1)", or nothing once j >= lo.
Result<std::string> Compiler::compile_prefix_array(const std::vector<std::string>& prefix,
                                                   const std::string& item, uint64_t lo,
                                                   uint64_t hi, const std::string& ptr,
                                                   const std::string& hint) {
  const std::string ws = w_.use("ws");
  if (hi == 0) return define(hint, R"("[" ws "]")", ptr);
  const uint64_t k = prefix.size();
  const auto element = [&](uint64_t j) { return j <= k ? prefix[j - 1] : item; };
  const uint64_t last = std::min<uint64_t>(std::max<uint64_t>(k, 1), hi);
  std::string tail;  // tail(last)
  if (last >= k && hi > last) {
    const uint64_t more_lo = lo > last ? lo - last : 0;
    const uint64_t more_hi = hi == kUnbounded ? hi : hi - last;
    TESSERA_RETURN_IF_ERROR(charge(repeat_cost(more_lo, more_hi), ptr));
    tail = R"(( "," ws )" + item + " ws )" + repeat(more_lo, more_hi);
  }
  for (uint64_t j = last; j-- > 1;) {  // tail(j) from tail(j + 1)
    const std::string seq = join({R"("," ws)", element(j + 1), "ws", tail}, " ");
    Result<std::string> rule = define(w_.reserve(hint + "-after-" + std::to_string(j)),
                                      j >= lo ? seq + R"( | "")" : seq, ptr);
    if (!rule) return rule.status();
    tail = *rule;
  }
  const std::string first = join({element(1), "ws", tail}, " ");
  return define(hint, R"("[" ws )" + (lo == 0 ? "( " + first + " )?" : first) + R"( "]")", ptr);
}

Result<std::string> Compiler::additional_value(const Json& s, const std::string& ptr,
                                               const std::string& hint, int depth) {
  if (!s.contains("additionalProperties")) return w_.use("value");
  const Json& ap = s["additionalProperties"];
  if (ap.is_boolean()) return ap.get<bool>() ? w_.use("value") : std::string();
  if (!ap.is_object())
    return schema_error(ptr, "'additionalProperties' must be a boolean or a schema");
  return compile(ap, pointer_append(ptr, "additionalProperties"), hint + "-additional", depth + 1);
}

Result<std::string> Compiler::extra_member(const std::string& value,
                                           const std::vector<std::string>& declared,
                                           const std::string& ptr, const std::string& hint) {
  std::string key = w_.use("string");
  if (!declared.empty()) {
    std::vector<std::string> contents;
    for (const std::string& d : declared) contents.push_back(key_contents(d));
    key = w_.key_excluding(contents, hint + "-extra-key");
    if (key.empty()) TESSERA_RETURN_IF_ERROR(charge(kMaxRules, ptr));  // the budget error
  }
  return define(w_.reserve(hint + "-extra-kv"), key + R"( ws ":" ws )" + value, ptr);
}

Result<std::string> Compiler::compile_object(const Json& s, const std::string& ptr,
                                             const std::string& hint, int depth) {
  const std::string name = rule_name(hint);
  const std::string ws = w_.use("ws");
  static const Json kEmpty = Json::object();
  const Json& props = s.contains("properties") ? s["properties"] : kEmpty;
  if (!props.is_object()) return schema_error(ptr, "'properties' must be an object of schemas");
  std::vector<std::string> required;
  if (s.contains("required")) {
    const Json& r = s["required"];
    if (!r.is_array() || !std::all_of(r.begin(), r.end(), [](const Json& v) { return v.is_string(); }))
      return schema_error(ptr, "'required' must be an array of strings");
    for (const Json& v : r) {
      if (std::find(required.begin(), required.end(), v.get<std::string>()) == required.end())
        required.push_back(v.get<std::string>());
    }
  }
  Result<std::string> extra_value = additional_value(s, ptr, name, depth);
  if (!extra_value) return extra_value.status();
  std::vector<std::string> declared, req_rules, opt_rules;
  const auto member = [&](const std::string& key, const std::string& value) {
    return define(w_.reserve(name + "-" + key + "-kv"),
                  gbnf_literal(Json(key).dump()) + R"( ws ":" ws )" + value, ptr);
  };
  for (const auto& [key, sub] : props.items()) {
    Result<std::string> value =
        compile(sub, pointer_append(pointer_append(ptr, "properties"), key), name + "-" + key,
                depth + 1);
    if (!value) return value.status();
    Result<std::string> kv = member(key, *value);
    if (!kv) return kv.status();
    declared.push_back(key);
    const bool is_required = std::find(required.begin(), required.end(), key) != required.end();
    (is_required ? req_rules : opt_rules).push_back(*kv);
  }
  for (const std::string& key : required) {  // required keys that `properties` lacks
    if (props.contains(key)) continue;
    if (extra_value->empty()) {
      return schema_error(ptr, "required property '" + key + "' is not in 'properties' and "
                               "additionalProperties is false: no object matches");
    }
    Result<std::string> kv = member(key, *extra_value);
    if (!kv) return kv.status();
    declared.push_back(key);
    req_rules.push_back(*kv);
  }
  std::string extra;
  if (!extra_value->empty()) {
    Result<std::string> e = extra_member(*extra_value, declared, ptr, name);
    if (!e) return e.status();
    extra = *e;
  }
  Result<std::string> body = object_body(req_rules, opt_rules, extra, ptr, name);
  if (!body) return body.status();
  return define(name, *body, ptr);
}

// Members in a fixed order: the required ones, then each optional one or not, then any
// number of additional ones. Every member is followed by `ws`; "," ws separates them.
// Without required members the first member present starts the list: first(i) is
// "optional i, then rest(i+1)" or first(i+1).
Result<std::string> Compiler::object_body(const std::vector<std::string>& required,
                                          const std::vector<std::string>& optional,
                                          const std::string& extra, const std::string& ptr,
                                          const std::string& hint) {
  const std::string extras = extra.empty() ? "" : R"(( "," ws )" + extra + " ws )*";
  if (!required.empty()) {
    std::vector<std::string> parts = {R"("{" ws)"};
    for (size_t i = 0; i < required.size(); ++i)
      parts.push_back((i ? R"("," ws )" : "") + required[i] + " ws");
    for (const std::string& o : optional) parts.push_back(R"(( "," ws )" + o + " ws )?");
    parts.push_back(extras);
    parts.push_back(R"("}")");
    return join(parts, " ");
  }
  if (optional.empty() && extra.empty()) return std::string(R"("{" ws "}")");
  std::string first = extra.empty() ? "" : join({extra, "ws", extras}, " ");  // first(k)
  std::string rest = extras;                                                   // rest(k)
  for (size_t i = optional.size(); i-- > 0;) {
    const std::string here = join({optional[i], "ws", rest}, " ");
    Result<std::string> f = define(w_.reserve(hint + "-first-" + std::to_string(i)),
                                   first.empty() ? here : here + " | " + first, ptr);
    if (!f) return f.status();
    first = *f;
    if (i == 0) break;
    Result<std::string> r = define(w_.reserve(hint + "-rest-" + std::to_string(i)),
                                   join({R"(( "," ws )" + optional[i] + " ws )?", rest}, " "), ptr);
    if (!r) return r.status();
    rest = *r;
  }
  return R"("{" ws ( )" + first + R"( )? "}")";
}

}  // namespace tessera::grammar::schema
