// The syntax tree of a Jinja template: expressions and statements, each with the line
// and column where it starts (for errors).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/value.h"

namespace tessera::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Expr {
  enum class Kind {
    Literal,   // literal
    Name,      // name
    List,      // items
    Tuple,     // items
    Dict,      // items: key, value, key, value...
    Attr,      // items[0].name
    Item,      // items[0][items[1]]
    Slice,     // items[0][items[1]:items[2]:items[3]] (null parts absent)
    Call,      // items[0](items[1..], kwargs); star / dstar: *args / **kwargs
    Filter,    // items[0] | name(items[1..], kwargs); items[0] null in a filter block
    Test,      // items[0] is [not] name(items[1..], kwargs)
    Unary,     // name ("-", "+", "not") items[0]
    Binary,    // items[0] name items[1]: + - * / // % ** ~ and or
    Compare,   // items[0] ops[0] items[1] ops[1] items[2]...
    Cond,      // items[0] if items[1] else items[2] (items[2] may be null)
  };
  Kind kind;
  int line = 0;
  int column = 0;
  std::string name;
  Value literal;
  std::vector<ExprPtr> items;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  ExprPtr star;   // Call: *args
  ExprPtr dstar;  // Call: **kwargs
  bool negated = false;
};

/// An assignment target: a name, `ns.attr`, or a tuple of names.
struct Target {
  std::vector<std::string> names;  // one, or several for unpacking
  std::string attr;                // `names[0].attr` when not empty
};

struct Stmt {
  enum class Kind {
    Text,         // text
    Output,       // {{ expr }}
    If,           // branches (cond, body); else_body
    For,          // target in expr [if cond] [recursive]: body; else_body
    Set,          // target = expr
    SetBlock,     // {% set target | filters %}body{% endset %}
    Macro,        // name(params): body
    CallBlock,    // {% call(params) expr %}body{% endcall %}
    FilterBlock,  // {% filter filters %}body{% endfilter %}
    With,         // {% with assignments %}body{% endwith %}
    Break,
    Continue,
    Generation,   // {% generation %}body{% endgeneration %} (transformers' marker)
  };
  Kind kind;
  int line = 0;
  int column = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;
  Target target;
  bool recursive = false;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<ExprPtr> filters;                        // Filter exprs with a null subject
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro / CallBlock: name, default
  std::vector<std::pair<Target, ExprPtr>> assignments;  // With
};

}  // namespace tessera::jinja
