// build_grammar: the GBNF of each format's calls. Every tool's arguments are its schema
// compiled by json_schema_to_grammar and embedded under the prefix "a<i>-"; the rules
// written here are "root" and "tc-..."; the Generic response string is embedded as "r-".
//
// The JSON around the arguments is written here, in the key order each model was trained
// on, with the whitespace json_schema_to_grammar allows between tokens (tc-ws).
#include <nlohmann/json.hpp>

#include "runtime/tool_calls/gbnf.h"
#include "runtime/tool_calls/json_text.h"
#include "runtime/tool_calls/syntax.h"
#include "tessera/json_schema.h"
#include "tessera/tool_calls.h"

namespace tessera::tool_calls {
namespace {

using gbnf::literal;

/// A JSON key as a GBNF literal: "\"key\"".
std::string key(std::string_view k) { return literal(json::quote(k)); }

/// A JSON object with the members in this order: "{" ws K1 ws ":" ws V1 (ws "," ws ...)
/// ws "}". `head`: GBNF before the first member (an optional member and its comma);
/// `tail`: GBNF after the last one (an optional comma and member).
std::string object(const std::vector<std::pair<std::string_view, std::string>>& members,
                   const std::string& tail = "", const std::string& head = "") {
  std::string out = "\"{\" tc-ws " + head;
  for (size_t i = 0; i < members.size(); ++i) {
    if (i > 0) out += " tc-ws \",\" tc-ws ";
    out += key(members[i].first) + " tc-ws \":\" tc-ws " + members[i].second;
  }
  return out + (tail.empty() ? "" : " " + tail) + " tc-ws \"}\"";
}

/// `item` once, or (parallel) one or more times separated by `sep`.
std::string repeated(const std::string& item, const std::string& sep, bool parallel) {
  return parallel ? item + " ( " + sep + " " + item + " )*" : item;
}

// A tool's parameters with every object schema that lists `properties` and says nothing
// of `additionalProperties` closed (additionalProperties: false), as llama.cpp's converter
// treats them: JSON Schema would allow any other key, and a model (a small one above all)
// could then invent keys and never finish the call.
void close_objects(nlohmann::ordered_json& schema, int depth = 0) {
  if (depth > 64 || !schema.is_object()) return;
  if (schema.contains("properties") && !schema.contains("additionalProperties")) schema["additionalProperties"] = false;
  for (const char* key : {"properties", "$defs", "definitions", "patternProperties"}) {
    auto it = schema.find(key);
    if (it != schema.end() && it->is_object())
      for (auto& [name, sub] : it->items()) close_objects(sub, depth + 1);
  }
  for (const char* key : {"items", "additionalProperties", "not", "additionalItems"}) {
    auto it = schema.find(key);
    if (it != schema.end()) close_objects(*it, depth + 1);
  }
  for (const char* key : {"anyOf", "oneOf", "allOf", "prefixItems", "items"}) {
    auto it = schema.find(key);
    if (it != schema.end() && it->is_array())
      for (auto& sub : *it) close_objects(sub, depth + 1);
  }
}

std::string closed_parameters(const std::string& parameters) {
  nlohmann::ordered_json schema = nlohmann::ordered_json::parse(parameters, nullptr, false);
  if (schema.is_discarded()) return parameters;  // json_schema_to_grammar names the problem
  close_objects(schema);
  return schema.dump();
}

class Writer {
 public:
  Writer(const std::vector<Tool>& tools, const Choice& choice) {
    for (size_t i = 0; i < tools.size(); ++i) {
      if (choice.kind != Choice::Named || tools[i].name == choice.name)
        tools_.push_back(
            {&tools[i], std::string(1, 'a').append(std::to_string(i)).append("-root")});
    }
  }

  /// Compiles and embeds every chosen tool's arguments grammar.
  Status embed_arguments() {
    for (size_t i = 0; i < tools_.size(); ++i) {
      const Tool& t = *tools_[i].tool;
      Result<std::string> g = json_schema_to_grammar(closed_parameters(t.parameters));
      if (!g) return g.status().with_context("tool '" + t.name + "': parameters");
      const std::string& rule = tools_[i].args;
      rules_ += gbnf::embed(*g, rule.substr(0, rule.size() - 4));
    }
    return Status::ok();
  }
  Status embed(std::string_view schema, std::string_view prefix) {
    Result<std::string> g = json_schema_to_grammar(schema);
    if (!g) return g.status();
    rules_ += gbnf::embed(*g, prefix);
    return Status::ok();
  }

  void add(const std::string& name, const std::string& body) {
    rules_ += name + " ::= " + body + "\n";
  }
  /// tc-call ::= the alternatives `call(name, args rule)` for each tool; returns "tc-call".
  template <typename F>
  std::string calls(F&& call) {
    std::string body;
    for (size_t i = 0; i < tools_.size(); ++i) {
      const std::string name = "tc-call-" + std::to_string(i);
      add(name, call(tools_[i].tool->name, tools_[i].args));
      body += (i > 0 ? " | " : "") + name;
    }
    add("tc-call", body);
    return "tc-call";
  }
  /// A tool's builtin-call rule for Llama 3.1 (NAME.call(KEY=VALUE)), or "".
  std::string llama_builtin(size_t i);

  size_t size() const { return tools_.size(); }
  const std::string& rules() const { return rules_; }

 private:
  struct Chosen {
    const Tool* tool;
    std::string args;  // its arguments rule
  };
  std::vector<Chosen> tools_;
  std::string rules_;
};

std::string Writer::llama_builtin(size_t i) {
  // Llama 3.1's builtin tools, when a tool of that name takes the one argument they take.
  const Tool& t = *tools_[i].tool;
  const std::string arg =
      t.name == "wolfram_alpha" || t.name == "web_search" || t.name == "brave_search" ? "query"
      : t.name == "python" || t.name == "code_interpreter"                            ? "code"
                                                                                      : "";
  if (arg.empty()) return "";
  const auto schema = nlohmann::ordered_json::parse(t.parameters, nullptr, false);
  if (!schema.is_object()) return "";
  const auto props = schema.find("properties");
  if (props == schema.end() || !props->is_object() || !props->contains(arg)) return "";
  const std::string prefix = "b" + std::to_string(i) + "-";
  if (!embed((*props)[arg].dump(), prefix)) return "";
  return literal("<|python_tag|>" + t.name + ".call(" + arg + "=") + " " + prefix + "root " +
         literal(")");
}

// ---- each format's calls (the root without the reasoning before it) ------------------

/// What a format's rule is written with, and where it puts its triggers.
struct Build {
  Writer& w;
  bool parallel;
  bool lazy;
  CallGrammar& out;
};

std::string named(const std::string& name) { return literal(json::quote(name)); }

/// "[" one call (or, parallel, several separated by commas) "]".
std::string json_list(const std::string& call, bool parallel) {
  return "\"[\" tc-ws " + repeated(call, "tc-ws \",\" tc-ws", parallel) + " tc-ws \"]\"";
}

/// tc-call: {"name": NAME, ARGS_KEY: arguments} for each tool.
std::string name_args_calls(Writer& w, std::string_view args_key, const std::string& tail = "",
                            const std::string& head = "") {
  return w.calls([&](const std::string& name, const std::string& args) {
    return object({{"name", named(name)}, {args_key, args}}, tail, head);
  });
}

std::string generic(Build& b) {
  const std::string call = name_args_calls(b.w, "arguments");
  const std::string one = object({{"tool_call", call}});
  if (!b.parallel) return one;
  return "( " + object({{"tool_calls", json_list(call, true)}}) + " | " + one + " )";
}

std::string hermes(Build& b) {
  b.out.triggers = {"<tool_call>"};
  const std::string call = b.w.calls([&](const std::string& name, const std::string& args) {
    return "\"<tool_call>\" tc-ws " + object({{"name", named(name)}, {"arguments", args}}) +
           " tc-ws \"</tool_call>\"";
  });
  return repeated(call, "tc-ws", b.parallel);
}

std::string llama3(Build& b) {
  b.out.start_triggers = {"{\"name\"", "{\"type\"", "{ \"name\"", "{ \"type\""};
  std::string builtins;
  for (size_t i = 0; i < b.w.size(); ++i) {
    const std::string rule = b.w.llama_builtin(i);
    if (!rule.empty()) builtins += " | " + rule;
  }
  if (!builtins.empty()) b.out.triggers = {"<|python_tag|>"};
  const std::string type = "( " + key("type") + " tc-ws \":\" tc-ws " + literal("\"function\"") +
                           " tc-ws \",\" tc-ws )? ";
  const std::string call = name_args_calls(b.w, "parameters", "", type);
  return "( " + call + builtins + " )";  // one call: the templates refuse several
}

std::string mistral(Build& b) {
  b.out.triggers = {"[TOOL_CALLS]"};
  const std::string id =
      "( tc-ws \",\" tc-ws " + key("id") + " tc-ws \":\" tc-ws \"\\\"\" [a-zA-Z0-9]{9} \"\\\"\" )?";
  return "\"[TOOL_CALLS]\" " + json_list(name_args_calls(b.w, "arguments", id), b.parallel);
}

std::string firefunction(Build& b) {
  b.out.triggers = {"functools["};
  // The template writes " functools[": a forced grammar lets the model start with the space.
  return std::string(b.lazy ? "" : "\" \"? ") + "\"functools\" " +
         json_list(name_args_calls(b.w, "arguments"), b.parallel);
}

std::string command_r7b(Build& b) {
  b.out.triggers = {"<|START_ACTION|>"};
  const std::string call = b.w.calls([&](const std::string& name, const std::string& args) {
    return object({{"tool_call_id", "\"\\\"\" [0-9]{1,10} \"\\\"\""},
                   {"tool_name", named(name)},
                   {"parameters", args}});
  });
  return "\"<|START_ACTION|>\" tc-ws " + json_list(call, b.parallel) + " tc-ws \"<|END_ACTION|>\"";
}

std::string deepseek(Build& b) {
  std::string open;
  for (const std::string_view o : kDeepSeekOpeners) {
    b.out.triggers.emplace_back(o);
    open += (open.empty() ? "( " : " | ") + literal(o);
  }
  const std::string call = b.w.calls([&](const std::string& name, const std::string& args) {
    return literal("<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + name + "\n```json\n") + " " +
           args + " " + literal("\n```<｜tool▁call▁end｜>");
  });
  return open + " ) " + repeated(call, "tc-ws", b.parallel) + " " + literal("<｜tool▁calls▁end｜>");
}

std::string functionary_v31(Build& b) {
  b.out.triggers = {"<function="};
  bool python = false;
  const std::string call = b.w.calls([&](const std::string& name, const std::string& args) {
    std::string alt = literal("<function=" + name + ">") + " " + args + " \"</function>\"";
    if (name == "python") {  // may also be called with raw code after <|python_tag|>
      alt += " | \"<|python_tag|>\" .*";
      python = true;
    }
    return alt;
  });
  if (python) b.out.triggers.push_back("<|python_tag|>");
  return repeated(call, "tc-ws", b.parallel);
}

std::string functionary_v32(Build& b) {
  // The prompt ends with ">>>": the first call opens the reply without it.
  const std::string call = b.w.calls([&](const std::string& name, const std::string& args) {
    b.out.start_triggers.push_back(name + "\n");
    b.out.triggers.push_back(">>>" + name + "\n");
    return literal(name + "\n") + " " + args;
  });
  return "\">>>\"? " + call + (b.parallel ? " ( tc-ws \">>>\" " + call + " )*" : "");
}

std::string calls_rule(Format format, Build& b) {
  switch (format) {
    case Format::Generic:
      return generic(b);
    case Format::Hermes:
      return hermes(b);
    case Format::Llama3Json:
      return llama3(b);
    case Format::Mistral:
      return mistral(b);
    case Format::Firefunction:
      return firefunction(b);
    case Format::CommandR7B:
      return command_r7b(b);
    case Format::DeepSeekR1:
    case Format::DeepSeekV3:
      return deepseek(b);
    case Format::FunctionaryV31:
      return functionary_v31(b);
    case Format::FunctionaryV32:
      return functionary_v32(b);
    case Format::ContentOnly:
      break;
  }
  return "";
}

/// `calls` after what a forced grammar lets come first: a thinking block (or the rest of
/// the one the prompt opened).
std::string after_reasoning(Format format, Writer& w, const std::string& calls,
                            const ParseOptions& options) {
  if (!options.extract_reasoning) return calls;
  const Syntax& s = syntax_of(format);
  w.add("tc-think", ".*");
  const std::string close = literal(s.think_close) + " [ \\t\\r\\n]{0,8} ";
  if (options.reasoning_open) return "tc-think " + close + calls;
  return "( " + literal(s.think_open) + " tc-think " + close + ")? " + calls;
}

}  // namespace

Result<CallGrammar> build_grammar(Format format, const std::vector<Tool>& tools,
                                  const Choice& choice, bool parallel,
                                  const ParseOptions& options) {
  CallGrammar out;
  if (choice.kind == Choice::None) return out;
  const bool forced = choice.kind != Choice::Auto;
  if (forced && (format == Format::ContentOnly || tools.empty())) {
    return Status::error(
        std::string("tool calls: tool_choice ") +
        (choice.kind == Choice::Named ? "names a tool" : "\"required\"") +
        (tools.empty() ? " without tools" : " with a template that has no call syntax"));
  }
  if (format == Format::ContentOnly || tools.empty()) return out;
  Writer w(tools, choice);
  if (w.size() == 0)
    return Status::error("tool calls: there is no tool named '" + choice.name + "'");
  TESSERA_RETURN_IF_ERROR(w.embed_arguments());
  out.lazy = !forced && format != Format::Generic;
  Build b{w, parallel, out.lazy, out};
  std::string calls = calls_rule(format, b);
  if (format == Format::Generic && !forced) {  // a call, or an answer
    TESSERA_RETURN_IF_ERROR(w.embed("{\"type\":\"string\"}", "r-"));
    calls = "( " + calls + " | " + object({{"response", "r-root"}}) + " )";
  }
  const std::string root = out.lazy ? calls : after_reasoning(format, w, calls, options);
  w.add("tc-ws", "( \" \" | \"\\n\" [ \\t]{0,20} )?");
  out.gbnf = "root ::= " + root + "\n" + w.rules();
  if (!out.lazy) {
    out.triggers.clear();
    out.start_triggers.clear();
  }
  return out;
}

}  // namespace tessera::tool_calls
