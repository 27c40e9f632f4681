#include "server/chat_tools.h"

#include <atomic>
#include <chrono>

#include "server/errors.h"
#include "server/server_context.h"
#include "tessera/grammar.h"

namespace tessera::server {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

// Each request's call ids differ (tool_calls::ParseOptions::id_seed).
uint64_t next_id_seed() {
  static std::atomic<uint64_t> counter{0x9e3779b97f4a7c15ULL};
  return counter.fetch_add(0x9e3779b97f4a7c15ULL) ^ uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
}

// The message as the template gets it: the client's object with its key order, OpenAI's
// `developer` role as `system`, content parts joined as `decode_messages` joined them.
std::string message_json(const ojson& m, const ChatMessage& decoded) {
  ojson copy = m;
  copy["role"] = decoded.role;
  if (copy.contains("content") && copy["content"].is_array()) copy["content"] = decoded.content;
  if (!copy.contains("content")) copy["content"] = nullptr;
  return copy.dump();
}

void set_content(ChatMessage& m, std::string text) {
  m.content = std::move(text);
  if (m.json.empty()) return;
  ojson j = ojson::parse(m.json);
  j["content"] = m.content;
  m.json = j.dump();
}

// The generic format's instruction: in the first system message, or as one; for a
// template that refuses system messages (Gemma's), before the first user message's text,
// as llama.cpp's minja moves a system message there.
void add_instruction(const ChatTemplate& tmpl, std::vector<ChatMessage>& messages, const ChatExtras& extras,
                     const std::string& instruction) {
  std::vector<ChatMessage> as_system = messages;
  if (!as_system.empty() && as_system[0].role == "system") {
    set_content(as_system[0], as_system[0].content + "\n\n" + instruction);
  } else {
    as_system.insert(as_system.begin(), ChatMessage{"system", instruction});
  }
  if (tmpl.format(as_system, true, extras).is_ok()) {
    messages = std::move(as_system);
    return;
  }
  for (ChatMessage& m : messages) {
    if (m.role != "user") continue;
    set_content(m, instruction + "\n\n" + m.content);
    return;
  }
  messages = std::move(as_system);  // no user message: the template's own error tells
}

}  // namespace

ReplyPlan decode_chat_tools(const Fields& body, const ojson& ordered, const ServerContext& ctx,
                            std::vector<ChatMessage>& messages, ChatExtras& extras) {
  ReplyPlan plan;
  plan.options.id_seed = next_id_seed();
  const ChatTemplate& tmpl = *ctx.chat_template;

  // The whole messages for a Jinja template: tool_calls, tool_call_id, name...
  if (tmpl.is_jinja() && ordered.contains("messages") && ordered["messages"].is_array() &&
      ordered["messages"].size() == messages.size()) {
    for (size_t i = 0; i < messages.size(); ++i) messages[i].json = message_json(ordered["messages"][i], messages[i]);
  }

  if (const json* kw = body.get("chat_template_kwargs")) {
    if (!kw->is_object()) throw bad_field("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    extras.kwargs_json = ordered["chat_template_kwargs"].dump();
  }

  const std::string reasoning = body.string("reasoning_format").value_or(ctx.options.reasoning_format);
  if (reasoning != "none" && reasoning != "deepseek" && reasoning != "auto") {
    throw bad_field("reasoning_format", "'reasoning_format' must be none, deepseek or auto, not \"" + reasoning + "\"");
  }
  // A template that writes <think> blocks is one whose replies may open with one.
  const bool thinks = tmpl.source().find("<think>") != std::string_view::npos ||
                      tmpl.source().find("<|START_THINKING|>") != std::string_view::npos;
  plan.options.extract_reasoning = reasoning != "none" && thinks;
  plan.parse = plan.options.extract_reasoning;

  const json* tools = body.get("tools");
  if (!tools) {
    if (body.get("tool_choice")) {
      const json& c = *body.get("tool_choice");
      if (!(c.is_string() && (c == "none" || c == "auto"))) {
        throw bad_field("tool_choice", "'tool_choice' names a tool, or asks for one, but the request has no 'tools'");
      }
    }
    return plan;
  }
  Result<std::vector<tool_calls::Tool>> list = tool_calls::parse_tools(ordered["tools"].dump());
  if (!list) throw bad_field("tools", list.status().message());
  const json* choice_json = body.get("tool_choice");
  Result<tool_calls::Choice> choice = tool_calls::parse_choice(choice_json ? choice_json->dump() : "null", *list);
  if (!choice) throw bad_field("tool_choice", choice.status().message());
  plan.parallel = body.boolean("parallel_tool_calls").value_or(true);
  if (list->empty() || choice->kind == tool_calls::Choice::None) {
    // The model still sees the tools (it may talk about them), but writes no call.
    if (!list->empty()) extras.tools_json = ordered["tools"].dump();
    return plan;
  }
  extras.tools_json = ordered["tools"].dump();
  plan.tools = true;
  plan.parse = true;
  plan.tool_list = std::move(*list);
  plan.choice = *choice;
  plan.format = tool_calls::detect_format(tmpl.source());
  std::string instruction(tool_calls::system_instruction(plan.format));
  if (!instruction.empty()) {
    // A template that does not show the tools itself (Gemma's, a built-in family) gets
    // them in this instruction, as llama.cpp's minja adds them for such templates: the
    // model must know what it may call. Whether it shows them: the first tool's name is
    // in a render with the tools.
    const Result<std::string> shown = tmpl.format(messages, true, extras);
    if (!shown || shown->find(plan.tool_list[0].name) == std::string::npos) {
      instruction += "\n\nThe tools you can call:\n" + ordered["tools"].dump(2);
    }
    add_instruction(tmpl, messages, extras, instruction);
  }
  return plan;
}

void finish_chat_tools(ReplyPlan& plan, const std::string& prompt_text, serving::GenerationRequest& r) {
  plan.options.reasoning_open = plan.options.extract_reasoning && tool_calls::prompt_opens_reasoning(prompt_text);
  if (!plan.tools) return;
  if (r.grammar) {
    throw bad_field("tools", "'tools' and a grammar (grammar, response_format, json_schema) cannot both constrain "
                             "the output");
  }
  Result<tool_calls::CallGrammar> g =
      tool_calls::build_grammar(plan.format, plan.tool_list, plan.choice, plan.parallel, plan.options);
  if (!g) throw bad_field("tools", g.status().message());
  r.render_special = true;
  if (g->gbnf.empty()) return;
  Result<std::shared_ptr<const Grammar>> grammar = Grammar::parse(g->gbnf, "tools");
  if (!grammar) throw internal_error("the grammar of the tools does not parse: " + grammar.status().message());
  r.grammar = *grammar;
  r.grammar_lazy = g->lazy;
  r.grammar_triggers = g->triggers;
  r.grammar_start_triggers = g->start_triggers;
}

json call_json(const tool_calls::ToolCall& call) {
  return {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

json reply_message(const ReplyPlan& plan, const std::string& text, bool& has_calls) {
  has_calls = false;
  if (!plan.parse) return {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}};
  const tool_calls::Reply reply = tool_calls::parse_reply(plan.format, text, plan.options);
  json m = {{"role", "assistant"}, {"content", reply.content}, {"refusal", nullptr}};
  if (!reply.reasoning.empty()) m["reasoning_content"] = reply.reasoning;
  if (!reply.calls.empty()) {
    has_calls = true;
    json calls = json::array();
    for (const tool_calls::ToolCall& c : reply.calls) calls.push_back(call_json(c));
    m["tool_calls"] = calls;
    if (reply.content.empty()) m["content"] = nullptr;  // as OpenAI answers a call
  }
  return m;
}

}  // namespace tessera::server
