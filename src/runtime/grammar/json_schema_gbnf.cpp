// GBNF text for the JSON-schema compiler: literals, names, the fixed JSON rules and the
// trie of keys that an additional property may not use.
#include "runtime/grammar/json_schema_gbnf.h"

#include <cstdio>

#include "tokenizer/unicode.h"

namespace tessera::grammar::schema {
namespace {

// Whitespace between tokens: nothing, one space, or one newline followed by at most 20
// spaces or tabs (indentation). Bounded, so that a model cannot pad forever.
// Numbers: at most 16 integer digits, 16 fraction digits and 2 exponent digits, so that
// digits cannot run forever either and every number fits a double (|x| < 1e115; with 3
// exponent digits "1E999" would overflow, and JSON parsers refuse it).
const std::vector<FixedRule>& fixed_rules() {
  static const std::vector<FixedRule> rules = {
      {"ws", R"(( " " | "\n" [ \t]{0,20} )?)", {}},
      {"value", "object | array | string | number | boolean | null",
       {"object", "array", "string", "number", "boolean", "null"}},
      {"object", R"("{" ws ( member ( "," ws member )* )? "}")", {"ws", "member"}},
      {"member", R"(string ws ":" ws value ws)", {"string", "ws", "value"}},
      {"array", R"("[" ws ( value ws ( "," ws value ws )* )? "]")", {"ws", "value"}},
      {"string", R"("\"" char* "\"")", {"char"}},
      {"char", R"([^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" utf16 ))", {"utf16"}},
      {"utf16",  // a \u escape of a valid code point: no lone surrogates
       R"([0-9a-cA-Ce-fE-F] hex hex hex | [dD] [0-7] hex hex | [dD] [89abAB] hex hex "\\u" [dD] [c-fC-F] hex hex)",
       {"hex"}},
      {"hex", "[0-9a-fA-F]", {}},
      {"integer", R"("-"? ( "0" | [1-9] [0-9]{0,15} ))", {}},
      {"number", R"(integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?)", {"integer"}},
      {"boolean", R"("true" | "false")", {}},
      {"null", R"("null")", {}},
      {"keychar", R"([^"\\\x00-\x1F] | "\\" ["\\bfnrt])", {}},
      // Any character of a string as JSON.stringify writes it (the `pattern` strings):
      // raw, or \" \\ \b \f \n \r \t, or \u00xx (lower case) for other controls.
      {"pattern-char", R"([^"\\\x00-\x1F] | "\\" ["\\bfnrt] | "\\u00" ( "0" [0-7bef] | "1" [0-9a-f] ))", {}},
  };
  return rules;
}

}  // namespace

std::string gbnf_class_char(uint32_t cpt) {
  if ((cpt >= '0' && cpt <= '9') || (cpt >= 'a' && cpt <= 'z') || (cpt >= 'A' && cpt <= 'Z'))
    return std::string(1, static_cast<char>(cpt));
  char buf[16];
  if (cpt < 0x80) {
    std::snprintf(buf, sizeof(buf), "\\x%02X", cpt);
  } else if (cpt < 0x10000) {
    std::snprintf(buf, sizeof(buf), "\\u%04X", cpt);
  } else {
    std::snprintf(buf, sizeof(buf), "\\U%08X", cpt);
  }
  return buf;
}

namespace {

/// Splits JSON-escaped string contents into characters as written: one code point, or
/// one escape ("\n", "\u0001").
std::vector<std::string> split_units(std::string_view contents) {
  std::vector<std::string> units;
  for (size_t pos = 0; pos < contents.size();) {
    size_t len = 1;
    if (contents[pos] == '\\') {
      len = pos + 1 < contents.size() && contents[pos + 1] == 'u' ? 6 : 2;
    } else {
      const tok::Utf8Scan scan = tok::scan_utf8(contents, pos);
      len = scan.len;
    }
    len = std::min(len, contents.size() - pos);
    units.emplace_back(contents.substr(pos, len));
    pos += len;
  }
  return units;
}

constexpr std::string_view kKeyEscapes = "\"\\bfnrt";  // the escapes keychar allows

}  // namespace

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    } else {
      out += ch;  // UTF-8 bytes pass as they are
    }
  }
  out += '"';
  return out;
}

std::string sanitize_name(std::string_view hint) {
  std::string out;
  for (const char c : hint) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.size() > 48) out.resize(48);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "x" : out;
}

GbnfWriter::GbnfWriter() {
  taken_.insert("root");
  for (const FixedRule& r : fixed_rules()) taken_.insert(r.name);
  for (const FixedRule& r : format_rules()) taken_.insert(r.name);
}

std::string GbnfWriter::reserve(std::string_view hint) {
  const std::string base = sanitize_name(hint);
  std::string name = base;
  for (int i = 2; taken_.count(name); ++i) name = base + "-" + std::to_string(i);
  taken_.insert(name);
  return name;
}

bool GbnfWriter::define(const std::string& name, std::string body) {
  rules_.emplace_back(name, std::move(body));
  return charge(1);
}

bool GbnfWriter::charge(size_t units) {
  cost_ += units;
  return cost_ <= kMaxRules;
}

std::string GbnfWriter::use(const std::string& name) {
  if (fixed_defined_.count(name)) return name;
  for (const std::vector<FixedRule>* table : {&fixed_rules(), &format_rules()}) {
    for (const FixedRule& r : *table) {
      if (name != r.name) continue;
      fixed_defined_.insert(name);
      rules_.emplace_back(name, r.body);
      for (const std::string& dep : r.uses) use(dep);
      return name;
    }
  }
  return name;  // not a fixed rule: the caller's own
}

std::string GbnfWriter::trie_rule_body(const std::vector<TrieNode>& trie, size_t node,
                                       const std::vector<std::string>& names) {
  std::string raw_class = "[^\"\\\\\\x00-\\x1F";
  std::string esc_class(kKeyEscapes);
  std::vector<std::string> alts;
  if (!trie[node].terminal) alts.emplace_back("\"\"");
  for (const auto& [unit, child] : trie[node].children) {
    if (unit.size() == 2 && unit[0] == '\\' && esc_class.find(unit[1]) != std::string::npos) {
      esc_class.erase(esc_class.find(unit[1]), 1);
    } else if (unit[0] == '\\') {
      continue;  // an escape that keychar never writes (\u...): no key takes this path
    } else {
      raw_class += gbnf_class_char(tok::scan_utf8(unit, 0).cpt);
    }
    alts.push_back(gbnf_literal(unit) + " " + names[child]);
  }
  alts.push_back(raw_class + "] keychar*");
  if (!esc_class.empty()) {
    std::string cls = "[";
    for (const char c : esc_class) cls += gbnf_class_char(static_cast<unsigned char>(c));
    alts.push_back("\"\\\\\" " + cls + "] keychar*");
  }
  std::string body;
  for (const std::string& a : alts) body += (body.empty() ? "" : " | ") + a;
  return body;
}

std::string GbnfWriter::key_excluding(const std::vector<std::string>& keys,
                                      std::string_view hint) {
  use("keychar");
  std::vector<TrieNode> trie(1);
  for (const std::string& key : keys) {
    size_t node = 0;
    for (const std::string& unit : split_units(key)) {
      const auto it = trie[node].children.find(unit);
      if (it != trie[node].children.end()) {
        node = it->second;
        continue;
      }
      trie[node].children.emplace(unit, trie.size());
      node = trie.size();
      trie.emplace_back();
    }
    trie[node].terminal = true;
  }
  const std::string name = reserve(hint);
  std::vector<std::string> names;
  for (size_t i = 0; i < trie.size(); ++i) names.push_back(reserve(name + "-" + std::to_string(i)));
  if (!define(name, "\"\\\"\" " + names[0] + " \"\\\"\"")) return {};
  for (size_t i = 0; i < trie.size(); ++i) {
    if (!define(names[i], trie_rule_body(trie, i, names))) return {};
  }
  return name;
}

std::string GbnfWriter::text() const {
  std::string out;
  for (const auto& [name, body] : rules_) {
    if (name == "root") out += name + " ::= " + body + "\n";
  }
  for (const auto& [name, body] : rules_) {
    if (name != "root") out += name + " ::= " + body + "\n";
  }
  return out;
}

}  // namespace tessera::grammar::schema
