// The grammars of the tool-call formats: each parses; it accepts a well-formed call (which
// parse_reply reads back as that call) and refuses arguments that break the tool's schema,
// a tool other than the named one, a second call where one is allowed; lazy grammars
// start at one of their triggers; forced ones let reasoning come first when asked; a lazy
// grammar step over a vocabulary follows a reply from the trigger to the end of the call.
#include <gtest/gtest.h>

#include <cmath>

#include "tessera/grammar.h"
#include "tessera/tokenizer.h"
#include "tessera/tool_calls.h"
#include "tokenizer/vocab.h"

namespace tessera::tool_calls {
namespace {

constexpr std::string_view kToolsJson = R"([
  {"type": "function", "function": {"name": "get_weather",
   "parameters": {"type": "object", "properties": {"location": {"type": "string"},
   "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["location"]}}},
  {"type": "function", "function": {"name": "get_time",
   "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}}
])";

const std::string kArgs = R"({"location": "Paris", "unit": "celsius"})";
const std::string kBadArgs = R"({"location": "Paris", "unit": "kelvin"})";
const std::string kTimeArgs = R"({"tz": "Europe/Paris"})";

/// A format's call text for (name, arguments), and how two calls are joined.
struct FormatText {
  Format format;
  std::string (*one)(const std::string& name, const std::string& args);
  std::string (*two)(const std::string& a_name, const std::string& a, const std::string& b_name,
                     const std::string& b);
};

std::string q(const std::string& s) { return "\"" + s + "\""; }

const std::vector<FormatText> kFormats = {
    {Format::Generic,
     [](const std::string& n, const std::string& a) {
       return "{\"tool_call\": {\"name\": " + q(n) + ", \"arguments\": " + a + "}}";
     },
     [](const std::string& n1, const std::string& a1, const std::string& n2,
        const std::string& a2) {
       return "{\"tool_calls\": [{\"name\": " + q(n1) + ", \"arguments\": " + a1 +
              "}, {\"name\": " + q(n2) + ", \"arguments\": " + a2 + "}]}";
     }},
    {Format::Hermes,
     [](const std::string& n, const std::string& a) {
       return "<tool_call>\n{\"name\": " + q(n) + ", \"arguments\": " + a + "}\n</tool_call>";
     },
     [](const std::string& n1, const std::string& a1, const std::string& n2,
        const std::string& a2) {
       return "<tool_call>\n{\"name\": " + q(n1) + ", \"arguments\": " + a1 + "}\n</tool_call>\n" +
              "<tool_call>\n{\"name\": " + q(n2) + ", \"arguments\": " + a2 + "}\n</tool_call>";
     }},
    {Format::Llama3Json,
     [](const std::string& n, const std::string& a) {
       return "{\"name\": " + q(n) + ", \"parameters\": " + a + "}";
     },
     [](const std::string& n1, const std::string& a1, const std::string& n2,
        const std::string& a2) {
       return "{\"name\": " + q(n1) + ", \"parameters\": " + a1 + "}\n{\"name\": " + q(n2) +
              ", \"parameters\": " + a2 + "}";
     }},
    {Format::Mistral,
     [](const std::string& n, const std::string& a) {
       return "[TOOL_CALLS][{\"name\": " + q(n) + ", \"arguments\": " + a +
              ", \"id\": \"abc123XYZ\"}]";
     },
     [](const std::string& n1, const std::string& a1, const std::string& n2,
        const std::string& a2) {
       return "[TOOL_CALLS][{\"name\": " + q(n1) + ", \"arguments\": " + a1 +
              "}, {\"name\": " + q(n2) + ", \"arguments\": " + a2 + "}]";
     }},
    {Format::DeepSeekR1,
     [](const std::string& n, const std::string& a) {
       return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>" + n +
              "\n```json\n" + a + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
     },
     [](const std::string& n1, const std::string& a1, const std::string& n2,
        const std::string& a2) {
       return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>" + n1 +
              "\n```json\n" + a1 +
              "\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + n2 +
              "\n```json\n" + a2 + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
     }},
    {Format::DeepSeekV3,
     [](const std::string& n, const std::string& a) {
       return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>" + n +
              "\n```json\n" + a + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
     },
     nullptr},
    {Format::FunctionaryV31,
     [](const std::string& n, const std::string& a) {
       return "<function=" + n + ">" + a + "</function>";
     },
     [](const std::string& n1, const std::string& a1, const std::string& n2,
        const std::string& a2) {
       return "<function=" + n1 + ">" + a1 + "</function><function=" + n2 + ">" + a2 +
              "</function>";
     }},
    {Format::FunctionaryV32,
     [](const std::string& n, const std::string& a) { return n + "\n" + a; },
     [](const std::string& n1, const std::string& a1, const std::string& n2,
        const std::string& a2) { return n1 + "\n" + a1 + ">>>" + n2 + "\n" + a2; }},
    {Format::CommandR7B,
     [](const std::string& n, const std::string& a) {
       return "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": " + q(n) +
              ", \"parameters\": " + a + "}\n]<|END_ACTION|>";
     },
     [](const std::string& n1, const std::string& a1, const std::string& n2,
        const std::string& a2) {
       return "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": " + q(n1) +
              ", \"parameters\": " + a1 + "}, {\"tool_call_id\": \"1\", \"tool_name\": " + q(n2) +
              ", \"parameters\": " + a2 + "}]<|END_ACTION|>";
     }},
    {Format::Firefunction,
     [](const std::string& n, const std::string& a) {
       return "functools[{\"name\": " + q(n) + ", \"arguments\": " + a + "}]";
     },
     [](const std::string& n1, const std::string& a1, const std::string& n2,
        const std::string& a2) {
       return "functools[{\"name\": " + q(n1) + ", \"arguments\": " + a1 +
              "}, {\"name\": " + q(n2) + ", \"arguments\": " + a2 + "}]";
     }},
};

std::vector<Tool> tools() {
  Result<std::vector<Tool>> t = parse_tools(kToolsJson);
  EXPECT_TRUE(t.is_ok()) << t.status().message();
  return t ? *t : std::vector<Tool>{};
}

std::shared_ptr<const Grammar> grammar_of(Format f, const Choice& choice, bool parallel,
                                          const ParseOptions& options = {}) {
  Result<CallGrammar> g = build_grammar(f, tools(), choice, parallel, options);
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  if (!g) return nullptr;
  Result<std::shared_ptr<const Grammar>> parsed = Grammar::parse(g->gbnf, format_name(f));
  EXPECT_TRUE(parsed.is_ok()) << parsed.status().message() << "\n" << g->gbnf;
  return parsed ? *parsed : nullptr;
}

/// True when the grammar takes the whole text and may end there.
bool accepts(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  if (!g) return false;
  GrammarMatcher m(g);
  return m.accept_text(text) && m.can_end();
}

const Choice kRequired{Choice::Required, ""};
const Choice kAuto{Choice::Auto, ""};

TEST(ToolCallsGrammar, AcceptsWellFormedCallsAndRefusesBadArguments) {
  for (const FormatText& f : kFormats) {
    SCOPED_TRACE(format_name(f.format));
    const auto g = grammar_of(f.format, kRequired, false);
    const std::string good = f.one("get_weather", kArgs);
    EXPECT_TRUE(accepts(g, good)) << good;
    EXPECT_TRUE(accepts(g, f.one("get_time", kTimeArgs)));
    EXPECT_FALSE(accepts(g, f.one("get_weather", kBadArgs)));                  // not in the enum
    EXPECT_FALSE(accepts(g, f.one("get_weather", R"({"unit": "celsius"})")));  // no location
    EXPECT_FALSE(accepts(g, f.one("get_weather", R"({"location": 7})")));      // not a string
    EXPECT_FALSE(accepts(g, f.one("get_wether", kArgs)));                      // no such tool
    // What the grammar lets through, the parser reads back.
    const Reply r = parse_reply(f.format, good, false);
    ASSERT_EQ(r.calls.size(), 1u) << good;
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(r.calls[0].arguments, R"({"location":"Paris","unit":"celsius"})");
    EXPECT_EQ(r.content, "");
  }
}

TEST(ToolCallsGrammar, ParallelCallsOnlyWhenAllowed) {
  for (const FormatText& f : kFormats) {
    if (!f.two) continue;
    SCOPED_TRACE(format_name(f.format));
    const std::string two = f.two("get_weather", kArgs, "get_time", kTimeArgs);
    const auto single = grammar_of(f.format, kRequired, false);
    const auto parallel = grammar_of(f.format, kRequired, true);
    EXPECT_FALSE(accepts(single, two)) << two;
    // Llama 3.x's templates refuse several calls: its grammar keeps one.
    EXPECT_EQ(accepts(parallel, two), f.format != Format::Llama3Json) << two;
    EXPECT_TRUE(accepts(parallel, f.one("get_weather", kArgs)));
    if (f.format != Format::Llama3Json) {
      const Reply r = parse_reply(f.format, two, false);
      ASSERT_EQ(r.calls.size(), 2u) << two;
      EXPECT_EQ(r.calls[1].name, "get_time");
      EXPECT_EQ(r.calls[1].arguments, R"({"tz":"Europe/Paris"})");
    }
  }
}

TEST(ToolCallsGrammar, NamedChoiceAllowsThatToolOnly) {
  for (const FormatText& f : kFormats) {
    SCOPED_TRACE(format_name(f.format));
    const auto g = grammar_of(f.format, Choice{Choice::Named, "get_time"}, false);
    EXPECT_TRUE(accepts(g, f.one("get_time", kTimeArgs)));
    EXPECT_FALSE(accepts(g, f.one("get_weather", kArgs)));
  }
}

TEST(ToolCallsGrammar, LazyGrammarsStartAtTheirTriggers) {
  for (const FormatText& f : kFormats) {
    SCOPED_TRACE(format_name(f.format));
    Result<CallGrammar> g = build_grammar(f.format, tools(), kAuto, false);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    const std::string good = f.one("get_weather", kArgs);
    if (f.format == Format::Generic) {  // no call syntax of its own: forced JSON, or a response
      EXPECT_FALSE(g->lazy);
      EXPECT_TRUE(g->triggers.empty() && g->start_triggers.empty());
      const auto parsed = Grammar::parse(g->gbnf);
      ASSERT_TRUE(parsed.is_ok());
      EXPECT_TRUE(accepts(*parsed, good));
      EXPECT_TRUE(accepts(*parsed, "{\"response\": \"It is sunny.\"}"));
      continue;
    }
    EXPECT_TRUE(g->lazy);
    EXPECT_FALSE(g->triggers.empty() && g->start_triggers.empty());
    // The call text begins with a trigger, and the grammar matches from that trigger on.
    bool starts_with_trigger = false;
    for (const auto* list : {&g->triggers, &g->start_triggers}) {
      for (const std::string& t : *list)
        starts_with_trigger = starts_with_trigger || good.starts_with(t);
    }
    EXPECT_TRUE(starts_with_trigger) << good;
    const auto parsed = Grammar::parse(g->gbnf);
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    EXPECT_TRUE(accepts(*parsed, good));
    EXPECT_FALSE(accepts(*parsed, f.one("get_weather", kBadArgs)));
  }
}

TEST(ToolCallsGrammar, TriggersOfEachFormat) {
  const auto triggers = [](Format f) {
    Result<CallGrammar> g = build_grammar(f, tools(), kAuto, true);
    EXPECT_TRUE(g.is_ok());
    return g ? std::make_pair(g->triggers, g->start_triggers)
             : std::pair<std::vector<std::string>, std::vector<std::string>>{};
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(triggers(Format::Hermes).first, V{"<tool_call>"});
  EXPECT_EQ(triggers(Format::Mistral).first, V{"[TOOL_CALLS]"});
  EXPECT_EQ(triggers(Format::CommandR7B).first, V{"<|START_ACTION|>"});
  EXPECT_EQ(triggers(Format::Firefunction).first, V{"functools["});
  EXPECT_EQ(triggers(Format::FunctionaryV31).first, V{"<function="});
  EXPECT_EQ(triggers(Format::FunctionaryV32).first, (V{">>>get_weather\n", ">>>get_time\n"}));
  EXPECT_EQ(triggers(Format::FunctionaryV32).second, (V{"get_weather\n", "get_time\n"}));
  EXPECT_EQ(triggers(Format::DeepSeekR1).first.size(), 4u);
  EXPECT_TRUE(triggers(Format::Llama3Json).first.empty());  // no builtin tool among these
  EXPECT_EQ(triggers(Format::Llama3Json).second.front(), "{\"name\"");
}

TEST(ToolCallsGrammar, BuiltinToolsAndPythonCode) {
  Result<std::vector<Tool>> t = parse_tools(R"([
    {"type": "function", "function": {"name": "brave_search", "parameters": {"type": "object",
     "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
    {"type": "function", "function": {"name": "python", "parameters": {"type": "object",
     "properties": {"code": {"type": "string"}}, "required": ["code"]}}}])");
  ASSERT_TRUE(t.is_ok());
  Result<CallGrammar> llama = build_grammar(Format::Llama3Json, *t, kAuto, false);
  ASSERT_TRUE(llama.is_ok()) << llama.status().message();
  EXPECT_EQ(llama->triggers, std::vector<std::string>{"<|python_tag|>"});
  const auto g = Grammar::parse(llama->gbnf);
  ASSERT_TRUE(g.is_ok()) << g.status().message() << "\n" << llama->gbnf;
  EXPECT_TRUE(accepts(*g, "<|python_tag|>brave_search.call(query=\"weather in Paris\")"));
  EXPECT_FALSE(accepts(*g, "<|python_tag|>brave_search.call(query=3)"));
  EXPECT_TRUE(accepts(*g, "{\"name\": \"python\", \"parameters\": {\"code\": \"print(1)\"}}"));
  Result<CallGrammar> v31 = build_grammar(Format::FunctionaryV31, *t, kAuto, false);
  ASSERT_TRUE(v31.is_ok());
  EXPECT_EQ(v31->triggers, (std::vector<std::string>{"<function=", "<|python_tag|>"}));
  const auto g31 = Grammar::parse(v31->gbnf);
  ASSERT_TRUE(g31.is_ok());
  EXPECT_TRUE(accepts(*g31, "<|python_tag|>import math\nprint(math.pi)"));
}

TEST(ToolCallsGrammar, ForcedGrammarsLetReasoningComeFirst) {
  const std::string call = kFormats[1].one("get_weather", kArgs);  // Hermes
  EXPECT_FALSE(accepts(grammar_of(Format::Hermes, kRequired, false), "<think>hm</think>\n" + call));
  const auto thinking =
      grammar_of(Format::Hermes, kRequired, false, ParseOptions{.extract_reasoning = true});
  EXPECT_TRUE(accepts(thinking, "<think>Paris, I think.</think>\n" + call));
  EXPECT_TRUE(accepts(thinking, call));
  // DeepSeek R1's prompt opened the thinking: the reply closes it, then calls.
  const std::string ds = kFormats[4].one("get_weather", kArgs);
  const auto open = grammar_of(Format::DeepSeekR1, kRequired, false,
                               ParseOptions{.extract_reasoning = true, .reasoning_open = true});
  EXPECT_TRUE(accepts(open, "The user asks for Paris.\n</think>\n\n" + ds));
  EXPECT_FALSE(accepts(open, ds));
  const Reply r = parse_reply(Format::DeepSeekR1, "The user asks for Paris.\n</think>\n\n" + ds,
                              ParseOptions{.extract_reasoning = true, .reasoning_open = true});
  EXPECT_EQ(r.reasoning, "The user asks for Paris.");
  EXPECT_EQ(r.calls.size(), 1u);
  // Command R7B thinks in its own tags.
  const auto r7b =
      grammar_of(Format::CommandR7B, kRequired, false, ParseOptions{.extract_reasoning = true});
  EXPECT_TRUE(accepts(r7b, "<|START_THINKING|>Look it up.<|END_THINKING|>" +
                               kFormats[8].one("get_weather", kArgs)));
}

TEST(ToolCallsGrammar, EveryForcedGrammarAndParserAgreeOnThinkingFirst) {
  const ParseOptions reasoning{.extract_reasoning = true};
  for (const FormatText& f : kFormats) {
    SCOPED_TRACE(format_name(f.format));
    const bool r7b = f.format == Format::CommandR7B;
    const std::string text = std::string(r7b ? "<|START_THINKING|>" : "<think>") + "Paris." +
                             (r7b ? "<|END_THINKING|>" : "</think>") + "\n" +
                             f.one("get_weather", kArgs);
    EXPECT_TRUE(accepts(grammar_of(f.format, kRequired, false, reasoning), text)) << text;
    const Reply r = parse_reply(f.format, text, reasoning);
    EXPECT_EQ(r.reasoning, "Paris.");
    EXPECT_EQ(r.content, "");
    ASSERT_EQ(r.calls.size(), 1u) << text;
    EXPECT_EQ(r.calls[0].arguments, R"({"location":"Paris","unit":"celsius"})");
  }
}

TEST(ToolCallsGrammar, NoGrammarAndErrors) {
  EXPECT_TRUE(build_grammar(Format::Hermes, tools(), Choice{Choice::None, ""}, true)->gbnf.empty());
  EXPECT_TRUE(build_grammar(Format::ContentOnly, tools(), kAuto, true)->gbnf.empty());
  EXPECT_TRUE(build_grammar(Format::Hermes, {}, kAuto, true)->gbnf.empty());
  const auto error = [](Format f, const std::vector<Tool>& t, const Choice& c) {
    Result<CallGrammar> g = build_grammar(f, t, c, false);
    return g.is_ok() ? std::string("(ok)") : g.status().message();
  };
  EXPECT_EQ(error(Format::Hermes, {}, kRequired),
            "tool calls: tool_choice \"required\" without tools");
  EXPECT_EQ(error(Format::ContentOnly, tools(), kRequired),
            "tool calls: tool_choice \"required\" with a template that has no call syntax");
  EXPECT_EQ(error(Format::Hermes, tools(), Choice{Choice::Named, "nope"}),
            "tool calls: there is no tool named 'nope'");
  Result<std::vector<Tool>> bad = parse_tools(R"([{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"x": {"type": "strang"}}}}}])");
  ASSERT_TRUE(bad.is_ok());
  const std::string e = error(Format::Hermes, *bad, kAuto);
  EXPECT_TRUE(e.starts_with("tool 'f': parameters: json schema:")) << e;
}

TEST(ToolCallsGrammar, LazyStepFollowsACallFromItsTrigger) {
  std::vector<std::string> pieces = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (const char* p : {"Sure", "<tool_call>", "\n", "{\"name\": \"", "get_weather", "get_time",
                        "\", \"arguments\": ", "{\"location\": \"", "Paris", "\", \"unit\": \"",
                        "celsius", "kelvin", "\"}", "}", "</tool_call>"}) {
    pieces.emplace_back(p);
    types.push_back(1);
  }
  auto vocab =
      tok::Vocab::from_lists("llama", pieces, {}, types, {.bos = 1, .eos = 2, .unk = 0}, {});
  ASSERT_TRUE(vocab.is_ok()) << vocab.status().message();
  auto tok = Tokenizer::from_vocab(std::move(vocab).value());
  ASSERT_TRUE(tok.is_ok());
  Result<CallGrammar> g = build_grammar(Format::Hermes, tools(), kAuto, false);
  ASSERT_TRUE(g.is_ok());
  auto grammar = Grammar::parse(g->gbnf);
  ASSERT_TRUE(grammar.is_ok());
  auto step = make_lazy_grammar_step(*grammar, **tok, g->triggers, g->start_triggers, true);
  const auto allowed = [&](std::string_view piece) {
    Candidates c =
        Candidates::from_logits(std::vector<float>(static_cast<size_t>((*tok)->n_vocab()), 0.0f));
    step->apply(c);
    return !std::isinf(c.items[static_cast<size_t>((*tok)->vocab().find(piece))].logit);
  };
  std::string text;
  const auto take = [&](std::string_view piece) {
    ASSERT_TRUE(allowed(piece)) << "after '" << text << "': " << piece;
    ASSERT_TRUE(step->accept((*tok)->vocab().find(piece), false).is_ok()) << piece;
    text += piece;
  };
  EXPECT_TRUE(allowed("}"));  // free before the trigger
  for (const char* p : {"Sure", "<tool_call>", "\n", "{\"name\": \"", "get_weather",
                        "\", \"arguments\": ", "{\"location\": \"", "Paris", "\", \"unit\": \""})
    take(p);
  EXPECT_FALSE(allowed("kelvin"));  // the schema's enum
  EXPECT_FALSE(allowed("Sure"));
  for (const char* p : {"celsius", "\"}", "}", "\n", "</tool_call>"}) take(p);
  EXPECT_TRUE(step->done());  // one call: nothing may follow
  const Reply r = parse_reply(Format::Hermes, text, false);
  EXPECT_EQ(r.content, "Sure");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"location":"Paris","unit":"celsius"})");
}

}  // namespace
}  // namespace tessera::tool_calls
