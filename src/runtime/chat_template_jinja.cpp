// Rendering a model's own Jinja chat template: the context transformers'
// apply_chat_template gives it (messages, add_generation_prompt, bos_token, eos_token,
// tools, extra variables), and the end marker and assistant suffix of a template of no
// known family, read off a probe render.
#include <nlohmann/json.hpp>

#include "runtime/chat_template.h"

namespace tessera::chat {
namespace {

using Json = nlohmann::ordered_json;

Result<Json> parse_part(const std::string& text, const char* what, bool want_object) {
  // Bounded nesting before parsing (the recursive parser would otherwise follow it).
  int depth = 0;
  for (char c : text) {
    depth += (c == '[' || c == '{') - (c == ']' || c == '}');
    if (depth > 512) return Status::error(std::string(what) + ": nested too deeply");
  }
  try {
    Json j = Json::parse(text);
    if (want_object ? !j.is_object() : !j.is_array())
      return Status::error(std::string(what) + " must be a JSON " + (want_object ? "object" : "array"));
    return j;
  } catch (const nlohmann::json::exception& e) {
    return Status::error(std::string(what) + ": not JSON: " + e.what());
  }
}

// OpenAI sends a call's arguments as a JSON string; a template that wants an object
// gets the parsed object (a string that is not a JSON object stays as it is).
void arguments_as_objects(Json& message) {
  auto calls = message.find("tool_calls");
  if (calls == message.end() || !calls->is_array()) return;
  for (Json& call : *calls) {
    if (!call.is_object()) continue;
    auto fn = call.find("function");
    if (fn == call.end() || !fn->is_object()) continue;
    auto args = fn->find("arguments");
    if (args == fn->end() || !args->is_string()) continue;
    Json parsed = Json::parse(args->get<std::string>(), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object()) *args = std::move(parsed);
  }
}

// Whether the template writes a call's arguments given as an object / as a string (as
// llama.cpp's minja decides it: the argument's key appears as a key).
bool renders_arguments(const JinjaChat& chat, bool as_object) {
  const Json args = {{"argument_needle", "print('Hello, World!')"}};
  const Json call = {{"id", "call_1___"}, {"type", "function"},
                     {"function", {{"name", "ipython"}, {"arguments", as_object ? args : Json(args.dump())}}}};
  const std::vector<ChatMessage> probe = {
      {"user", "Hey"},
      {"assistant", "", Json{{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({call})}}.dump()}};
  JinjaChat plain = chat;
  plain.object_arguments = false;
  Result<std::string> out = render_jinja(plain, probe, false, {});
  if (!out) return false;
  return out->find("\"argument_needle\":") != std::string::npos ||
         out->find("'argument_needle':") != std::string::npos ||
         out->find("<parameter=argument_needle>") != std::string::npos;
}

}  // namespace

Result<std::string> render_jinja(const JinjaChat& chat, std::span<const ChatMessage> messages,
                                 bool add_generation_prompt, const ChatExtras& extras) {
  Json ctx = Json::object();
  Json m = Json::array();
  for (const ChatMessage& msg : messages) {
    if (msg.json.empty()) {
      m.push_back(Json{{"role", msg.role}, {"content", msg.content}});
      continue;
    }
    Result<Json> whole = parse_part(msg.json, "message", true);
    if (!whole) return whole.status();
    if (chat.object_arguments) arguments_as_objects(*whole);
    m.push_back(std::move(*whole));
  }
  ctx["messages"] = std::move(m);
  const bool with_tools = !extras.tools_json.empty();
  if (with_tools) {
    Result<Json> t = parse_part(extras.tools_json, "tools", false);
    if (!t) return t.status();
    ctx["tools"] = std::move(*t);
  }
  ctx["add_generation_prompt"] = add_generation_prompt;
  ctx["bos_token"] = chat.bos;
  ctx["eos_token"] = chat.eos;
  if (!extras.kwargs_json.empty()) {
    Result<Json> kw = parse_part(extras.kwargs_json, "chat_template_kwargs", true);
    if (!kw) return kw.status();
    for (auto it = kw->begin(); it != kw->end(); ++it) ctx[it.key()] = it.value();
  }
  const jinja::Template& tpl = with_tools && chat.tool_use ? *chat.tool_use : chat.main;
  jinja::RenderOptions options;
  if (!extras.now.empty()) {
    Result<std::tm> now = jinja::parse_iso_time(extras.now);
    if (!now) return now.status();
    options.now = *now;
  }
  Result<std::string> out = tpl.render(ctx.dump(), options);
  if (!out) return Status::error("chat template: " + out.status().message());
  if (chat.strip_bos && !chat.bos.empty() && out->starts_with(chat.bos)) out->erase(0, chat.bos.size());
  return out;
}

Result<std::shared_ptr<const JinjaChat>> make_jinja(std::string_view source, std::string_view tool_use_source,
                                                    std::string bos, std::string eos, bool strip_bos,
                                                    const Family* family) {
  Result<jinja::Template> main = jinja::Template::parse(source);
  if (!main) return Status::error("chat template: " + main.status().message());
  auto chat = std::make_shared<JinjaChat>(JinjaChat{*main, std::nullopt, std::string(source), std::move(bos),
                                                    std::move(eos), strip_bos, "", ""});
  if (!tool_use_source.empty()) {
    Result<jinja::Template> tools = jinja::Template::parse(tool_use_source);
    if (!tools) return Status::error("chat template (tool_use): " + tools.status().message());
    chat->tool_use = *tools;
  }
  chat->object_arguments = !renders_arguments(*chat, false) && renders_arguments(*chat, true);
  if (family) {
    // The family's own marker; its suffix as the family writes it after a reply.
    chat->end_marker = family->eos_close ? chat->eos : family->end_marker;
    chat->assistant_suffix = family->eos_close ? chat->eos + family->tag_close : family->assistant_suffix;
    return std::shared_ptr<const JinjaChat>(chat);
  }
  // No family: what the template writes after an assistant message's content. A
  // template that refuses the probe (it wants a system message, say) keeps the EOS text.
  const std::vector<ChatMessage> probe = {{"user", "\x01u"}, {"assistant", "\x01r"}};
  Result<std::string> text = render_jinja(*chat, probe, false, {});
  chat->end_marker = chat->eos;
  chat->assistant_suffix = chat->eos;
  if (text) {
    const size_t at = text->rfind("\x01r");
    if (at != std::string::npos) {
      const std::string suffix = text->substr(at + 2);
      const std::string marker = trim(suffix);
      if (!marker.empty()) {
        chat->assistant_suffix = suffix;
        chat->end_marker = marker;
      }
    }
  }
  return std::shared_ptr<const JinjaChat>(chat);
}

}  // namespace tessera::chat
