// Tool calls (OpenAI `tools` / `tool_calls`) in the syntax each model family was trained
// on, as llama.cpp's server handles them: which syntax a chat template asks for, the
// grammar that makes a model write well-formed calls whose arguments follow each tool's
// JSON schema, and the split of a generated reply into content, reasoning and calls
// (whole, or as it streams).
//
// The usual flow for one request with tools:
//
//     Format f = detect_format(template_text);            // once per model
//     auto tools = parse_tools(request_tools_json);       // errors name the entry
//     auto choice = parse_choice(request_tool_choice_json, *tools);
//     auto g = build_grammar(f, *tools, *choice, parallel, options);
//     // g->gbnf empty: no grammar. Else Grammar::parse(g->gbnf), and either
//     // make_lazy_grammar_step(grammar, tok, g->triggers, g->start_triggers, true)
//     // (g->lazy) or make_grammar_step(grammar, tok, true).
//     StreamParser p(f, options);   // feed() each piece of text, finish() at the end
//
// The text given to the parsers must include the text of special tokens that are part of
// a format's syntax ("[TOOL_CALLS]", "<|python_tag|>", "<tool_call>"...): decode with
// render_special, end-of-generation tokens left out.
//
// Decisions (where llama.cpp leaves a choice):
// - JSON crosses this API as text (tools, tool_choice, schemas, arguments): nlohmann-json
//   stays private to the library, as with json_schema_to_grammar.
// - A call is emitted once it is complete and well-formed, so that a call that turns out
//   malformed (or cut off by the end of generation) becomes content and nothing streamed
//   has to be taken back: in a stream, each call's id and name come in its first
//   CallDelta and its whole arguments in the next one.
// - Malformed calls are kept as content, byte for byte. Whitespace directly before and
//   after a call (or a marker such as <|START_RESPONSE|>) is dropped, as is whitespace
//   after the reasoning; reasoning is trimmed.
// - In a call's grammar, a tool's object schemas that list `properties` and say nothing of
//   `additionalProperties` admit no other keys (as llama.cpp's converter reads them; JSON
//   Schema would allow any, and a small model then invents keys and never ends the call).
// - Arguments are the model's JSON with the whitespace outside strings removed (numbers,
//   escapes and key order kept as written). A call whose arguments are a JSON string
//   holding JSON (the OpenAI wire form) is accepted too; arguments that are not JSON make
//   the call malformed.
// - The parsers read calls more loosely than the grammars write them (DeepSeek's opener
//   variants and V3.1's form, a closing tag missing at the very end, "parameters" for
//   "arguments"...), so that an unconstrained model is understood too. With reasoning
//   extracted, calls are looked for only after the thinking; a lazy grammar, which sees
//   only text, engages at a trigger even inside the thinking.
// - Ids are "call_" + 24 letters and digits; Mistral's are 9 letters and digits (its
//   template requires that). They derive from ParseOptions::id_seed and the call's index,
//   so a stream and a whole parse of the same text agree: give each request its own seed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.h"

namespace tessera::tool_calls {

/// A tool-call syntax. The example after each is what a model writes.
enum class Format {
  ContentOnly,  // no calls: the reply is content (and reasoning)
  Generic,      // {"tool_call": {"name": .., "arguments": {..}}} or {"response": ".."}; any
                // template without a call syntax of its own (Gemma, Phi, Command R+...)
  Hermes,       // <tool_call>{"name": .., "arguments": {..}}</tool_call>: Hermes 2 Pro/3,
                // Qwen2.5, Qwen3 (with <think>)
  Llama3Json,   // {"name": .., "parameters": {..}} opening the reply; builtin tools as
                // <|python_tag|>brave_search.call(query="..."): Llama 3.1, 3.2, 3.3
  Mistral,      // [TOOL_CALLS][{"name": .., "arguments": {..}, "id": ".."}]: Mistral Nemo
  DeepSeekR1,  // <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
               // ```json {..} ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>, after <think>
  DeepSeekV3,      // the same calls, without reasoning
  FunctionaryV31,  // <function=NAME>{..}</function>; <|python_tag|>CODE for "python"
  FunctionaryV32,  // NAME\n{..} and >>>NAME\n{..} (the prompt ends with ">>>"); "all\n"
                   // (or ">>>all\n") opens content
  CommandR7B,      // <|START_ACTION|>[{"tool_call_id": "0", "tool_name": .., "parameters":
                   // {..}}]<|END_ACTION|>; reasoning in <|START_THINKING|>..<|END_THINKING|>
  Firefunction,    // functools[{"name": .., "arguments": {..}}]
};

/// "Content-only", "Generic", "Hermes 2 Pro", "Llama 3.x", "Mistral Nemo", "DeepSeek R1",
/// "DeepSeek V3", "Functionary v3.1 Llama 3.1", "Functionary v3.2", "Command R7B",
/// "FireFunction v2".
std::string_view format_name(Format format);

/// The format a chat template's Jinja text asks for, from distinctive substrings, tested in
/// llama.cpp's order: "<｜tool▁calls▁begin｜>" (DeepSeekR1 when the text mentions
/// "</think>", else DeepSeekV3), "<|END_THINKING|><|START_ACTION|>" (CommandR7B),
/// "<tool_call>" (Hermes), ">>>all" (FunctionaryV32), " functools[" (Firefunction),
/// "<|start_header_id|>" with "<function=" (FunctionaryV31),
/// "<|start_header_id|>ipython<|end_header_id|>" (Llama3Json), "[TOOL_CALLS]" (Mistral);
/// anything else Generic. Never ContentOnly: use that when a request has no tools or
/// tool_choice "none".
Format detect_format(std::string_view template_text);

/// For Generic: text to add to the system message (or to send as one) so that the model
/// knows the JSON its grammar forces (as llama.cpp does). Empty for the other formats.
std::string_view system_instruction(Format format);

/// One tool of an OpenAI `tools` list: {"type": "function", "function": {"name": ..,
/// "description": .., "parameters": {JSON schema}}}.
struct Tool {
  std::string name;         // 1 to 64 of a-z A-Z 0-9 _ - (OpenAI's rule)
  std::string description;  // "" when absent
  std::string parameters;   // the schema as compact JSON text; {"type":"object"} when absent
};

/// Parses the `tools` array given as JSON text. Errors name the entry and what is wrong:
/// "tools[1]: 'function.name' is missing", "tools[0]: type \"retrieval\" is not supported
/// (only 'function')", "tools[2]: the name \"get weather\" must be 1 to 64 letters, ...",
/// "tools[3]: the name 'f' repeats tools[0]", "tools[1] (get_time): 'parameters' must be
/// a JSON schema object".
/// "null" gives no tools. Schemas are checked when the grammar is built.
Result<std::vector<Tool>> parse_tools(std::string_view tools_json);

/// OpenAI `tool_choice`.
struct Choice {
  enum Kind { None, Auto, Required, Named } kind = Auto;
  std::string name;  // Named: the tool to call
};

/// Parses `tool_choice` given as JSON text: "auto", "none", "required", or
/// {"type": "function", "function": {"name": ..}}; null (or "") is auto. Errors: an
/// unknown value, a name that is not among `tools`, "required" or a name without tools.
Result<Choice> parse_choice(std::string_view tool_choice_json, const std::vector<Tool>& tools);

/// How a reply is read (and what a forced grammar lets come before the calls).
struct ParseOptions {
  /// Split reasoning off: <think>..</think> (CommandR7B: <|START_THINKING|>..
  /// <|END_THINKING|>) opening the reply (after whitespace) goes to Reply::reasoning, and
  /// calls are looked for only after it. Off: thinking is ordinary content.
  bool extract_reasoning = false;
  /// The prompt opened the thinking (DeepSeek R1's template ends with "<think>\n"; see
  /// prompt_opens_reasoning): with extract_reasoning, the reply is reasoning up to the
  /// closing tag (a repeated opening tag is skipped); unclosed, all of it.
  bool reasoning_open = false;
  /// Seed of the call ids (see the decisions above).
  uint64_t id_seed = 0;
};

/// True when a rendered prompt ends inside a thinking block: it ends with "<think>" (or
/// <|START_THINKING|>) followed by whitespace only.
bool prompt_opens_reasoning(std::string_view prompt);

/// The grammar for a request: root matches the call(s) in the format's syntax, each
/// call's arguments constrained by its tool's schema (json_schema_to_grammar). With a lazy
/// grammar the root matches from the first byte of a trigger on.
struct CallGrammar {
  std::string gbnf;   // empty: no grammar (Choice::None, ContentOnly with Auto)
  bool lazy = false;  // engages at a trigger (Choice::Auto); else it constrains the reply
                      // from its first token (Required, Named; Generic always)
  std::vector<std::string> triggers;        // texts that engage a lazy grammar anywhere
  std::vector<std::string> start_triggers;  // ... only opening the reply (after whitespace)
};

/// The grammar for `format` and a choice. Auto: lazy (Generic: forced, calls or
/// {"response": ".."}). Required: forced, any tool. Named: forced, that tool. None: no
/// grammar. `parallel`: one call or more (formats that cannot, Llama3Json, keep one);
/// else exactly one. Forced grammars let reasoning come first when `options` extract it
/// (an optional thinking block; with reasoning_open, the rest of the open one). Errors:
/// a schema json_schema_to_grammar refuses (named by tool), Required or Named with
/// ContentOnly or without tools.
Result<CallGrammar> build_grammar(Format format, const std::vector<Tool>& tools,
                                  const Choice& choice, bool parallel,
                                  const ParseOptions& options = {});

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text, compact
};

struct Reply {
  std::string content;
  std::string reasoning;
  std::vector<ToolCall> calls;
};

/// Splits a whole generated text into content, reasoning and calls.
Reply parse_reply(Format format, std::string_view text, const ParseOptions& options);
Reply parse_reply(Format format, std::string_view text, bool extract_reasoning);

/// What a StreamParser newly knows after a piece of text. Content and reasoning never end
/// inside a UTF-8 character (but at finish(), where the model's bytes are given as they
/// are).
struct Delta {
  struct CallDelta {
    int index = 0;          // of the call in the reply, from 0
    std::string id;         // in the call's first CallDelta only
    std::string name;       // in the call's first CallDelta only
    std::string arguments;  // to append to what came before
  };
  std::string content;
  std::string reasoning;
  std::vector<CallDelta> calls;

  bool empty() const { return content.empty() && reasoning.empty() && calls.empty(); }
};

/// parse_reply on a text that arrives in pieces: feed() returns what is now certain and
/// holds back what may still change meaning (text that may begin a marker, e.g. "<tool"
/// before "_call>"; a call until it is complete, and for Llama 3.x and Generic a reply
/// that opens with '{' until that JSON value ends; trailing whitespace; a cut UTF-8
/// character). Concatenating every Delta's fields (calls by index) gives parse_reply's
/// result on the whole text, however it was cut.
class StreamParser {
 public:
  StreamParser(Format format, const ParseOptions& options);
  StreamParser(Format format, bool extract_reasoning);
  ~StreamParser();
  StreamParser(StreamParser&&) noexcept;
  StreamParser& operator=(StreamParser&&) noexcept;

  Delta feed(std::string_view piece);
  /// The end of the text: everything held back is decided (an unfinished call becomes
  /// content). Further feeds are ignored.
  Delta finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::tool_calls
