// jinja2's builtin filters, as jinja2 3.1 defines them (with transformers' tojson).
#include <algorithm>
#include <charconv>
#include <clocale>
#include <cmath>
#include <cwctype>
#include <functional>
#include <unordered_map>

#include "template/builtins.h"

namespace tessera::jinja {
namespace {

using FilterFn = Value (*)(Interpreter&, const Value&, Args&);

std::string text_of(const Value& v) { return to_str(v); }

int64_t int_arg(const Value& v, int64_t fallback) {
  if (v.is_undefined() || v.is_none()) return fallback;
  if (v.kind == Value::Kind::Int) return v.i;
  if (v.kind == Value::Kind::Bool) return v.b;
  if (v.kind == Value::Kind::Float) return saturate_to_int(v.f);
  type_error("an integer is required, got " + type_name(v));
}

Value f_slice(Interpreter& in, const Value& obj, Args& a) {
  if (obj.is_undefined()) undefined_error(obj);
  const bool is_str = obj.is_string();
  if (!is_str && !obj.is_list()) type_error("'" + type_name(obj) + "' object is not subscriptable");
  std::vector<std::string> chars;
  if (is_str) {
    in.step(int64_t(obj.str().size() / 64));  // a walk over the whole string
    chars = utf8_chars(obj.str());
  }
  const int64_t n = is_str ? int64_t(chars.size()) : int64_t(obj.list->size());
  const int64_t step = int_arg(a.positional[3], 1);
  if (step == 0) fail("ValueError", "slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t def) {
    if (v.is_none()) return def;
    int64_t i = int_arg(v, def);
    if (i < 0) i += n;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t start = clamp(a.positional[1], step > 0 ? 0 : n - 1);
  const int64_t stop = clamp(a.positional[2], step > 0 ? n : -1);
  Items items;
  std::string text;
  // Counted, so that a huge step cannot overflow the index.
  const int64_t count = step > 0 ? (stop > start ? (stop - start - 1) / step + 1 : 0)
                                 : (start > stop ? (start - stop - 1) / -step + 1 : 0);
  for (int64_t k = 0, i = start; k < count; ++k, i += (k < count ? step : 0)) {
    in.step();
    if (is_str) text += chars[size_t(i)];
    else items.push_back((*obj.list)[size_t(i)]);
  }
  return is_str ? Value::string(std::move(text)) : Value::make_list(std::move(items), obj.is_tuple);
}

Value f_tojson(Interpreter& in, const Value& v, Args& a) {
  JsonStyle style;
  style.ensure_ascii = truthy(arg(a, 0, "ensure_ascii", Value::boolean(false)));
  const Value indent = arg(a, 1, "indent", Value::none());
  if (indent.is_string()) {
    style.indent = 0;
    style.indent_text = indent.str();
  } else if (!indent.is_none() && !indent.is_undefined()) {
    style.indent = int(std::clamp<int64_t>(int_arg(indent, 0), 0, 64));
    style.indent_text = std::string(size_t(style.indent), ' ');
  }
  if (style.indent >= 0) style.item_sep = ",";
  const Value seps = arg(a, 2, "separators", Value::none());
  if (seps.is_list() && seps.list->size() == 2) {
    style.item_sep = to_str((*seps.list)[0]);
    style.key_sep = to_str((*seps.list)[1]);
  }
  style.sort_keys = truthy(arg(a, 3, "sort_keys", Value::boolean(false)));
  return Value::string(to_json(v, style, in));
}

Value f_trim(Interpreter&, const Value& v, Args& a) {
  const Value chars = arg(a, 0, "chars", Value::none());
  return Value::string(strip(text_of(v), chars.is_string() ? chars.str() : "", true, true));
}

Value f_length(Interpreter&, const Value& v, Args&) {
  switch (v.kind) {
    case Value::Kind::String: return Value::integer(int64_t(utf8_length(v.str())));
    case Value::Kind::List: return Value::integer(int64_t(v.list->size()));
    case Value::Kind::Dict:
    case Value::Kind::Namespace: return Value::integer(int64_t(v.dict->entries.size()));
    case Value::Kind::Undefined: return Value::integer(0);
    default: type_error("object of type '" + type_name(v) + "' has no len()");
  }
}

Value f_upper(Interpreter&, const Value& v, Args&) { return Value::string(upper(text_of(v))); }
Value f_lower(Interpreter&, const Value& v, Args&) { return Value::string(lower(text_of(v))); }

Value f_capitalize(Interpreter&, const Value& v, Args&) {
  return Value::string(map_text(text_of(v), [](uint32_t cp, size_t i) {
    return map_case(cp, i == 0 ? CaseMap::Upper : CaseMap::Lower);
  }));
}

// jinja2's title: words begin after runs of "-", whitespace, "(", "{", "[", "<".
Value f_title(Interpreter&, const Value& v, Args&) {
  bool word_start = true;
  return Value::string(map_text(text_of(v), [&](uint32_t c, size_t) {
    const bool sep = c == '-' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
                     c == '(' || c == '{' || c == '[' || c == '<';
    const bool start = word_start;
    word_start = sep;
    return sep ? c : map_case(c, start ? CaseMap::Upper : CaseMap::Lower);
  }));
}

Value f_replace(Interpreter& in, const Value& v, Args& a) {
  const std::string s = text_of(v), from = to_str(arg(a, 0, "old")), to = to_str(arg(a, 1, "new"));
  int64_t count = int_arg(arg(a, 2, "count", Value::none()), -1);
  std::string out;
  size_t pos = 0;
  if (from.empty()) {
    // Python inserts `to` around every character.
    for (const std::string& c : utf8_chars(s)) {
      if (count-- != 0) out += to;
      out += c;
      in.check_size(out.size());
    }
    if (count != 0) out += to;
    return Value::string(out);
  }
  for (size_t hit; count != 0 && (hit = s.find(from, pos)) != std::string::npos; --count) {
    out.append(s, pos, hit - pos);
    out += to;
    pos = hit + from.size();
    in.check_size(out.size());
  }
  out.append(s, pos);
  return Value::string(out);
}

Value f_join(Interpreter& in, const Value& v, Args& a) {
  const std::string sep = to_str(arg(a, 0, "d", Value::string("")));
  const Value attr = arg(a, 1, "attribute", Value::none());
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    in.step();
    if (!first) out += sep;
    first = false;
    out += to_str(attr.is_none() ? item : attribute_path(in, item, to_str(attr)));
    in.check_size(out.size());
  }
  return Value::string(out);
}

Value f_default(Interpreter&, const Value& v, Args& a) {
  const Value fallback = arg(a, 0, "default_value", Value::string(""));
  const bool boolean = truthy(arg(a, 1, "boolean", Value::boolean(false)));
  if (v.is_undefined() || (boolean && !truthy(v))) return fallback;
  return v;
}

Value f_first(Interpreter&, const Value& v, Args&) {
  Items items = iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}
Value f_last(Interpreter&, const Value& v, Args&) {
  Items items = iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}
Value f_list(Interpreter&, const Value& v, Args&) { return Value::make_list(iterate(v)); }
Value f_string(Interpreter&, const Value& v, Args&) { return Value::string(to_str(v)); }

bool parse_int(std::string s, int base, int64_t& out) {
  s = strip(s, "", true, true);
  std::string digits;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != '_' || (i > 0 && i + 1 < s.size())) digits += s[i];
  if (digits.empty()) return false;
  size_t used = 0;
  try {
    out = std::stoll(digits, &used, base);
  } catch (...) {
    return false;
  }
  return used == digits.size();
}

bool parse_float(const std::string& text, double& out) {
  const std::string s = strip(text, "", true, true);
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

Value f_int(Interpreter&, const Value& v, Args& a) {
  const Value fallback = arg(a, 0, "default", Value::integer(0));
  const int base = int(int_arg(arg(a, 1, "base", Value::integer(10)), 10));
  switch (v.kind) {
    case Value::Kind::Int: return v;
    case Value::Kind::Bool: return Value::integer(v.b);
    case Value::Kind::Float:
      if (!std::isfinite(v.f)) return fallback;
      // Past int64 Python gives a big int; here the float stays (tessera/jinja.h).
      return fits_int(v.f) ? Value::integer(int64_t(v.f)) : Value::number(std::trunc(v.f));
    case Value::Kind::String: {
      int64_t i = 0;
      if (parse_int(v.str(), base, i)) return Value::integer(i);
      double d = 0;
      if (parse_float(v.str(), d) && std::isfinite(d))
        return fits_int(d) ? Value::integer(int64_t(d)) : Value::number(std::trunc(d));
      return fallback;
    }
    default: return fallback;
  }
}

Value f_float(Interpreter&, const Value& v, Args& a) {
  const Value fallback = arg(a, 0, "default", Value::number(0.0));
  if (v.is_number()) return Value::number(v.as_double());
  double d = 0;
  if (v.is_string() && parse_float(v.str(), d)) return Value::number(d);
  return fallback;
}

Value f_items(Interpreter&, const Value& v, Args&) {
  if (v.is_undefined()) return Value::make_list({});
  if (!v.is_dict()) type_error("can only get item pairs from a mapping.");
  Items items;
  for (const auto& [k, x] : v.dict->entries) items.push_back(Value::make_list({k, x}, true));
  return Value::make_list(std::move(items));
}

// select/reject/selectattr/rejectattr: `attr` (the attribute to test, or empty), then
// the test name and its arguments from `a` starting at `first`.
Value select_items(Interpreter& in, const Value& v, Args& a, bool keep, bool by_attr) {
  size_t first = 0;
  std::string attr;
  if (by_attr) attr = to_str(arg(a, first++, "attribute"));
  Args test_args;
  std::string test;
  if (first < a.positional.size()) {
    test = to_str(a.positional[first]);
    test_args.positional.assign(a.positional.begin() + long(first) + 1, a.positional.end());
  }
  Items out;
  if (!truthy(v)) return Value::make_list({});  // jinja2 iterates only a true value
  for (const Value& item : iterate(v)) {
    in.step();
    const Value subject = by_attr ? attribute_path(in, item, attr) : item;
    const bool ok = test.empty() ? truthy(subject) : in.apply_test(test, subject, test_args);
    if (ok == keep) out.push_back(item);
  }
  return Value::make_list(std::move(out));
}
Value f_select(Interpreter& in, const Value& v, Args& a) { return select_items(in, v, a, true, false); }
Value f_reject(Interpreter& in, const Value& v, Args& a) { return select_items(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, Args& a) { return select_items(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, Args& a) { return select_items(in, v, a, false, true); }

Value f_map(Interpreter& in, const Value& v, Args& a) {
  Items out;
  if (!truthy(v)) return Value::make_list({});  // jinja2 iterates only a true value
  const Value attr = arg(a, size_t(-1), "attribute");
  if (!attr.is_undefined()) {
    const Value fallback = arg(a, size_t(-1), "default");
    for (const Value& item : iterate(v)) {
      in.step();
      Value x = attribute_path(in, item, to_str(attr));
      out.push_back(x.is_undefined() && !fallback.is_undefined() ? fallback : x);
    }
    return Value::make_list(std::move(out));
  }
  if (a.positional.empty()) type_error("map requires a filter argument");
  const std::string filter = to_str(a.positional[0]);
  Args rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value& item : iterate(v)) {
    in.step();
    Args copy = rest;
    out.push_back(in.apply_filter(filter, item, copy));
  }
  return Value::make_list(std::move(out));
}

Value fold_case(const Value& v, bool case_sensitive) {
  return (!case_sensitive && v.is_string()) ? Value::string(lower(v.str())) : v;
}

Value f_unique(Interpreter& in, const Value& v, Args& a) {
  const bool cs = truthy(arg(a, 0, "case_sensitive", Value::boolean(false)));
  const Value attr = arg(a, 1, "attribute", Value::none());
  Items out, seen;
  for (const Value& item : iterate(v)) {
    in.step(int64_t(seen.size()) + 1);
    const Value key = fold_case(attr.is_none() ? item : attribute_path(in, item, to_str(attr)), cs);
    bool dup = false;
    for (const Value& s : seen) dup = dup || equal(s, key);
    if (!dup) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::make_list(std::move(out));
}

Value f_indent(Interpreter& in, const Value& v, Args& a) {
  const Value width = arg(a, 0, "width", Value::integer(4));
  const std::string pad = width.is_string() ? width.str() : std::string(size_t(std::clamp<int64_t>(int_arg(width, 4), 0, 1 << 16)), ' ');
  const bool first = truthy(arg(a, 1, "first", Value::boolean(false)));
  const bool blank = truthy(arg(a, 2, "blank", Value::boolean(false)));
  std::string s = text_of(v) + "\n";
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find_first_of("\r\n", pos);
    lines.push_back(s.substr(pos, nl - pos));
    pos = (s[nl] == '\r' && nl + 1 < s.size() && s[nl + 1] == '\n') ? nl + 2 : nl + 1;
  }
  in.check_size(s.size() + lines.size() * pad.size());
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += "\n";
      if (blank || !lines[i].empty()) out += pad;
    }
    out += lines[i];
  }
  if (first) out = pad + out;
  return Value::string(out);
}

void sort_values(Interpreter& in, Items& items, const std::function<Value(const Value&)>& key, bool reverse) {
  in.step(int64_t(items.size()) * 8);
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return reverse ? less(key(y), key(x)) : less(key(x), key(y));
  });
}

Value f_dictsort(Interpreter& in, const Value& v, Args& a) {
  if (!v.is_dict()) type_error("dictsort only works on mappings");
  const bool cs = truthy(arg(a, 0, "case_sensitive", Value::boolean(false)));
  const std::string by = to_str(arg(a, 1, "by", Value::string("key")));
  const bool reverse = truthy(arg(a, 2, "reverse", Value::boolean(false)));
  if (by != "key" && by != "value") fail("FilterArgumentError", "You can only sort by either \"key\" or \"value\"");
  Items items;
  for (const auto& [k, x] : v.dict->entries) items.push_back(Value::make_list({k, x}, true));
  const size_t pos = by == "key" ? 0 : 1;
  sort_values(in, items, [&](const Value& p) { return fold_case((*p.list)[pos], cs); }, reverse);
  return Value::make_list(std::move(items));
}

Value f_sort(Interpreter& in, const Value& v, Args& a) {
  const bool reverse = truthy(arg(a, 0, "reverse", Value::boolean(false)));
  const bool cs = truthy(arg(a, 1, "case_sensitive", Value::boolean(false)));
  const Value attr = arg(a, 2, "attribute", Value::none());
  Items items = iterate(v);
  sort_values(in, items, [&](const Value& x) {
    return fold_case(attr.is_none() ? x : attribute_path(in, x, to_str(attr)), cs);
  }, reverse);
  return Value::make_list(std::move(items));
}

Value min_max(Interpreter& in, const Value& v, Args& a, bool want_max) {
  const bool cs = truthy(arg(a, 0, "case_sensitive", Value::boolean(false)));
  const Value attr = arg(a, 1, "attribute", Value::none());
  Items items = iterate(v);
  if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  auto key = [&](const Value& x) { return fold_case(attr.is_none() ? x : attribute_path(in, x, to_str(attr)), cs); };
  Value best = items[0];
  for (const Value& x : items) {
    in.step();
    if (want_max ? less(key(best), key(x)) : less(key(x), key(best))) best = x;
  }
  return best;
}
Value f_min(Interpreter& in, const Value& v, Args& a) { return min_max(in, v, a, false); }
Value f_max(Interpreter& in, const Value& v, Args& a) { return min_max(in, v, a, true); }

Value f_reverse(Interpreter&, const Value& v, Args&) {
  if (v.is_string()) {
    std::vector<std::string> chars = utf8_chars(v.str());
    std::string out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
    return Value::string(out);
  }
  Items items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::make_list(std::move(items));
}

Value f_sum(Interpreter& in, const Value& v, Args& a) {
  const Value attr = arg(a, 0, "attribute", Value::none());
  Value total = arg(a, 1, "start", Value::integer(0));
  for (const Value& x : iterate(v)) {
    in.step();
    const Value item = attr.is_none() ? x : attribute_path(in, x, to_str(attr));
    Args none;
    if (!total.is_number() || !item.is_number()) type_error("unsupported operand type(s) for +");
    if (total.kind == Value::Kind::Float || item.kind == Value::Kind::Float)
      total = Value::number(total.as_double() + item.as_double());
    else if (int64_t r = 0; !__builtin_add_overflow(int_arg(total, 0), int_arg(item, 0), &r))
      total = Value::integer(r);
    else
      total = Value::number(total.as_double() + item.as_double());
  }
  return total;
}

Value f_abs(Interpreter&, const Value& v, Args&) {
  if (v.kind == Value::Kind::Float) return Value::number(std::fabs(v.f));
  if (v.is_number()) {
    const int64_t i = int_arg(v, 0);
    return i == INT64_MIN ? Value::number(-double(i)) : Value::integer(i < 0 ? -i : i);
  }
  type_error("bad operand type for abs(): '" + type_name(v) + "'");
}

Value f_round(Interpreter&, const Value& v, Args& a) {
  const int64_t precision = std::clamp<int64_t>(int_arg(arg(a, 0, "precision", Value::integer(0)), 0), -30, 30);
  const std::string method = to_str(arg(a, 1, "method", Value::string("common")));
  const double scale = std::pow(10.0, double(precision));
  const double x = v.as_double() * scale;
  double r;
  if (method == "common") r = std::nearbyint(x);  // Python's round(): halves to even
  else if (method == "ceil") r = std::ceil(x);
  else if (method == "floor") r = std::floor(x);
  else fail("FilterArgumentError", "method must be common, ceil or floor");
  return Value::number(r / scale);
}

Value f_center(Interpreter& in, const Value& v, Args& a) {
  const std::string s = text_of(v);
  const int64_t width = std::min<int64_t>(int_arg(arg(a, 0, "width", Value::integer(80)), 80), 1 << 20);
  const int64_t len = int64_t(utf8_length(s));
  if (width <= len) return Value::string(s);
  const int64_t total = width - len;
  const int64_t left = total / 2 + (total & width & 1);
  in.check_size(size_t(width) + s.size());
  return Value::string(std::string(size_t(left), ' ') + s + std::string(size_t(total - left), ' '));
}

Value f_escape(Interpreter&, const Value& v, Args&) {
  Value r = Value::string(html_escape(text_of(v), v.is_string() && v.markup));
  r.markup = true;
  return r;
}

Value f_forceescape(Interpreter&, const Value& v, Args&) {
  Value r = Value::string(html_escape(text_of(v)));
  r.markup = true;
  return r;
}

Value f_safe(Interpreter&, const Value& v, Args&) {
  Value r = v.is_string() ? v : Value::string(to_str(v));
  r.markup = true;
  return r;
}

}  // namespace

std::string html_escape(const std::string& s, bool already_markup) {
  if (already_markup) return s;
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

Value f_wordcount(Interpreter&, const Value& v, Args&) {
  int64_t n = 0;
  bool in_word = false;
  for (unsigned char c : text_of(v)) {
    const bool w = std::isalnum(c) || c == '_' || c >= 0x80;
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

Value f_batch(Interpreter& in, const Value& v, Args& a) {
  const int64_t size = int_arg(arg(a, 0, "linecount"), 1);
  if (size <= 0) fail("FilterArgumentError", "batch size must be positive");
  const Value fill = arg(a, 1, "fill_with", Value::none());
  Items out, cur;
  for (const Value& x : iterate(v)) {
    in.step();
    cur.push_back(x);
    if (int64_t(cur.size()) == size) {
      out.push_back(Value::make_list(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (!fill.is_none()) {
      in.step(size - int64_t(cur.size()));  // a huge linecount stops at the step limit
      while (int64_t(cur.size()) < size) cur.push_back(fill);
    }
    out.push_back(Value::make_list(std::move(cur)));
  }
  return Value::make_list(std::move(out));
}

Value f_attr(Interpreter& in, const Value& v, Args& a) { return in.getattr(v, to_str(arg(a, 0, "name"))); }

Value f_format(Interpreter&, const Value& v, Args& a) {
  // printf-style: %s %d %i %r %f %%, one argument each.
  const std::string fmt = text_of(v);
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%' || i + 1 >= fmt.size()) {
      out += fmt[i];
      continue;
    }
    const char c = fmt[++i];
    if (c == '%') {
      out += '%';
      continue;
    }
    if (next >= a.positional.size()) type_error("not enough arguments for format string");
    const Value& x = a.positional[next++];
    if (c == 's') out += to_str(x);
    else if (c == 'r') out += to_repr(x);
    else if (c == 'd' || c == 'i') out += std::to_string(int_arg(x, 0));
    else if (c == 'f') {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%f", x.as_double());
      out += buf;
    } else {
      fail("ValueError", std::string("unsupported format character '") + c + "'");
    }
  }
  return Value::string(out);
}

const std::unordered_map<std::string, FilterFn>& filter_table() {
  static const std::unordered_map<std::string, FilterFn> table = {
      {"__slice__", f_slice}, {"tojson", f_tojson}, {"trim", f_trim}, {"length", f_length}, {"count", f_length},
      {"upper", f_upper}, {"lower", f_lower}, {"capitalize", f_capitalize}, {"title", f_title},
      {"replace", f_replace}, {"join", f_join}, {"default", f_default}, {"d", f_default}, {"first", f_first},
      {"last", f_last}, {"list", f_list}, {"string", f_string}, {"int", f_int}, {"float", f_float},
      {"items", f_items}, {"select", f_select}, {"reject", f_reject}, {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr}, {"map", f_map}, {"unique", f_unique}, {"indent", f_indent},
      {"dictsort", f_dictsort}, {"sort", f_sort}, {"min", f_min}, {"max", f_max}, {"reverse", f_reverse},
      {"sum", f_sum}, {"abs", f_abs}, {"round", f_round}, {"center", f_center}, {"escape", f_escape},
      {"e", f_escape}, {"forceescape", f_forceescape}, {"safe", f_safe}, {"wordcount", f_wordcount},
      {"batch", f_batch}, {"attr", f_attr}, {"format", f_format},
  };
  return table;
}

}  // namespace

Value Interpreter::apply_filter(const std::string& name, const Value& input, Args& args) {
  const auto& table = filter_table();
  auto it = table.find(name);
  if (it == table.end()) fail("TemplateAssertionError", "No filter named '" + name + "'.");
  return it->second(*this, input, args);
}

Value attribute_path(Interpreter& in, const Value& obj, const std::string& path) {
  Value v = obj;
  size_t pos = 0;
  for (;;) {
    const size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot - pos);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    int64_t index = 0;
    const bool is_index =
        digits && std::from_chars(part.data(), part.data() + part.size(), index).ec == std::errc();
    v = is_index ? in.getitem(v, Value::integer(index)) : in.getitem(v, Value::string(part));
    if (dot == std::string::npos) return v;
    pos = dot + 1;
  }
}

namespace {

// Case mapping of one code point by the C library's Unicode tables (the C.UTF-8 locale);
// ASCII only where that locale is missing.
locale_t unicode_locale() {
  static const locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  return loc;
}

}  // namespace

uint32_t map_case(uint32_t cp, CaseMap how) {
  if (locale_t loc = unicode_locale()) {
    switch (how) {
      case CaseMap::Upper: return uint32_t(towupper_l(wint_t(cp), loc));
      case CaseMap::Lower: return uint32_t(towlower_l(wint_t(cp), loc));
    }
  }
  if (cp < 0x80) return uint32_t(how == CaseMap::Upper ? std::toupper(int(cp)) : std::tolower(int(cp)));
  return cp;
}

bool is_cased_letter(uint32_t cp) {
  if (locale_t loc = unicode_locale()) return iswalpha_l(wint_t(cp), loc) != 0;
  return cp < 0x80 && std::isalpha(int(cp));
}

std::string map_text(const std::string& s, const std::function<uint32_t(uint32_t, size_t)>& f) {
  std::string out;
  out.reserve(s.size());
  size_t index = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const uint32_t cp = next_codepoint(s, i);
    if (cp == 0xFFFFFFFF) {
      out.append(s, start, i - start);  // invalid UTF-8 passes through
    } else {
      append_codepoint(out, f(cp, index));
    }
    ++index;
  }
  return out;
}

std::string lower(std::string s) {
  return map_text(s, [](uint32_t cp, size_t) { return map_case(cp, CaseMap::Lower); });
}
std::string upper(std::string s) {
  return map_text(s, [](uint32_t cp, size_t) { return map_case(cp, CaseMap::Upper); });
}

std::string strip(const std::string& s, const std::string& chars, bool left, bool right) {
  const std::string set = chars.empty() ? std::string(" \t\n\r\v\f\x1c\x1d\x1e\x1f", 10) : chars;
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && set.find(s[b]) != std::string::npos) ++b;
  if (right)
    while (e > b && set.find(s[e - 1]) != std::string::npos) --e;
  return s.substr(b, e - b);
}

}  // namespace tessera::jinja
