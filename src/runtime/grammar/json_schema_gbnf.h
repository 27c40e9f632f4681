// The GBNF side of the JSON-schema compiler: rule names, rule text, the fixed JSON rules
// (whitespace, strings, numbers, any value) and object keys that differ from a set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/limits.h"

namespace tessera::grammar::schema {

constexpr size_t kMaxRules = limits::kMaxSchemaRules;

/// `text` (UTF-8) as a GBNF string literal, quotes included.
std::string gbnf_literal(std::string_view text);
/// A code point inside a GBNF character class (letters and digits as they are, others as
/// \xHH, \uHHHH or \UHHHHHHHH).
std::string gbnf_class_char(uint32_t cpt);

/// A rule the writer defines when first used, with the rules it uses.
struct FixedRule {
  std::string name;
  std::string body;
  std::vector<std::string> uses;
};
/// The rules of the string formats (json_schema_formats.cpp).
const std::vector<FixedRule>& format_rules();
/// A rule name from `hint`: runs of characters outside [a-zA-Z0-9] become '-', at most
/// 48 characters, "x" when nothing is left.
std::string sanitize_name(std::string_view hint);

/// The rules being written. Names are reserved first (so that rules can reference each
/// other, recursion included) and defined later; the fixed rules of JSON are defined
/// when first used.
class GbnfWriter {
 public:
  GbnfWriter();

  /// A fresh rule name derived from `hint` ("-2", "-3", ... added when taken).
  std::string reserve(std::string_view hint);
  /// Defines the reserved rule `name` ("name ::= body"). False when the rule budget is
  /// spent.
  bool define(const std::string& name, std::string body);
  /// Counts `units` more rules against the budget (repetitions the parser expands).
  bool charge(size_t units);
  /// The fixed rule `name` (ws, value, object, array, string, char, integer, number,
  /// boolean, null, keychar, pattern-char, or a rule of format_rules()), defined with what
  /// it uses; returns `name`.
  std::string use(const std::string& name);
  /// A rule matching a JSON string (quotes included) that is none of `keys`, given as
  /// their JSON-escaped contents as nlohmann writes them. Its characters are written
  /// one way only: raw, or \" \\ \b \f \n \r \t (no \u escapes, no \/, no other control
  /// characters), so that differing text means a differing key. Empty when the budget
  /// is spent.
  std::string key_excluding(const std::vector<std::string>& keys, std::string_view hint);

  /// The grammar: `root` first, then the rules in the order they were defined.
  std::string text() const;

 private:
  struct TrieNode {
    std::map<std::string, size_t> children;  // unit text -> node
    bool terminal = false;
  };
  std::string trie_rule_body(const std::vector<TrieNode>& trie, size_t node,
                             const std::vector<std::string>& names);

  std::set<std::string> taken_;
  std::vector<std::pair<std::string, std::string>> rules_;  // name, body
  std::set<std::string> fixed_defined_;
  size_t cost_ = 0;
};

}  // namespace tessera::grammar::schema
