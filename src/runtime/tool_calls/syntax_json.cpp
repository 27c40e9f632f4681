// The block parsers of the formats whose calls are JSON objects (Generic, Hermes,
// Llama 3.x, Mistral, FireFunction, Command R7B), and the Reader they share.
#include <initializer_list>

#include "runtime/tool_calls/syntax.h"

namespace tessera::tool_calls {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

/// The calls of a JSON array of call objects (or of one call object); nullopt when any
/// element is not a call, or there is none.
std::optional<std::vector<ParsedCall>> calls_of(std::string_view value, std::string_view name_key,
                                                std::initializer_list<std::string_view> args_keys) {
  std::vector<std::string_view> items;
  if (const auto list = json::elements(value)) {
    items = *list;
  } else {
    items.push_back(value);
  }
  std::vector<ParsedCall> calls;
  for (const std::string_view item : items) {
    auto call = call_of(item, name_key, args_keys);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

/// After the calls: `close`, or (final) the end of the text, whitespace aside.
Block close_block(Reader& r, std::string_view close, std::vector<ParsedCall> calls) {
  r.space();
  if (r.final() && r.at_end()) return r.complete(std::move(calls));
  if (const Reader::Step s = r.literal(close); s != Reader::Ok) return r.stop(s);
  return r.complete(std::move(calls));
}

}  // namespace

// ---- Reader and the call helpers -------------------------------------------------------

Reader::Step Reader::literal(std::string_view lit) {
  const size_t n = std::min(lit.size(), text_.size() - pos_);
  if (text_.compare(pos_, n, lit.substr(0, n)) != 0) return Fail;
  if (n < lit.size()) return final_ ? Fail : More;
  pos_ += n;
  return Ok;
}

Reader::Step Reader::optional(std::string_view lit) {
  const size_t n = std::min(lit.size(), text_.size() - pos_);
  if (text_.compare(pos_, n, lit.substr(0, n)) != 0) return Ok;
  if (n < lit.size()) return final_ ? Ok : More;
  pos_ += n;
  return Ok;
}

Reader::Step Reader::value(std::string_view& out) {
  space();
  if (at_end()) return final_ ? Fail : More;
  const json::ScanResult r = json::scan(text_, pos_, final_);
  if (r.kind == json::Scan::Partial) return More;
  if (r.kind == json::Scan::Invalid) return Fail;
  out = text_.substr(pos_, r.end - pos_);
  pos_ = r.end;
  return Ok;
}

Reader::Step Reader::name(std::string& out) {
  const size_t start = pos_;
  while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
  if (at_end() && !final_) return More;
  out.assign(text_.substr(start, pos_ - start));
  return Ok;
}

std::optional<std::string> arguments_of(std::string_view value) {
  if (!value.empty() && value[0] == '{') return json::compact(value);
  const auto text = json::string_value(value);
  if (!text) return std::nullopt;
  const size_t start = json::skip_space(*text, 0);
  if (start == text->size() || (*text)[start] != '{') return std::nullopt;
  const json::ScanResult r = json::scan(*text, start, true);
  if (r.kind != json::Scan::Complete || json::skip_space(*text, r.end) != text->size())
    return std::nullopt;
  return json::compact(std::string_view(*text).substr(start, r.end - start));
}

std::optional<ParsedCall> call_of(std::string_view object, std::string_view name_key,
                                  std::initializer_list<std::string_view> args_keys) {
  const auto m = json::members(object);
  if (!m) return std::nullopt;
  const auto name_value = json::find(*m, name_key);
  const auto name = name_value ? json::string_value(*name_value) : std::nullopt;
  if (!name || name->empty()) return std::nullopt;
  for (const std::string_view key : args_keys) {
    if (const auto value = json::find(*m, key)) {
      auto arguments = arguments_of(*value);
      if (!arguments) return std::nullopt;
      return ParsedCall{*name, std::move(*arguments)};
    }
  }
  return std::nullopt;
}

// ---- the formats ----------------------------------------------------------------------

Block parse_generic(std::string_view text, bool final) {
  Reader r(text, final);
  std::string_view object;
  if (const Reader::Step s = r.value(object); s != Reader::Ok) return r.stop(s);
  const auto m = json::members(object);
  if (!m) return r.stop(Reader::Fail);
  if (const auto one = json::find(*m, "tool_call")) {
    if (auto call = call_of(*one, "name", {"arguments"})) return r.complete({std::move(*call)});
  } else if (const auto list = json::find(*m, "tool_calls")) {
    if (json::elements(*list)) {
      if (auto calls = calls_of(*list, "name", {"arguments"})) return r.complete(std::move(*calls));
    }
  } else if (const auto response = json::find(*m, "response")) {
    Block b = r.complete({});
    const auto text_value = json::string_value(*response);
    b.content = text_value ? *text_value : json::compact(*response);
    return b;
  }
  return r.stop(Reader::Fail);
}

Block parse_hermes(std::string_view text, bool final) {
  Reader r(text, final);
  r.skip(std::string_view("<tool_call>").size());
  std::string_view object;
  if (const Reader::Step s = r.value(object); s != Reader::Ok) return r.stop(s);
  auto call = call_of(object, "name", {"arguments", "parameters"});
  if (!call) return r.stop(Reader::Fail);
  return close_block(r, "</tool_call>", {std::move(*call)});
}

Block parse_llama3(std::string_view text, bool final) {
  Reader r(text, final);
  constexpr std::string_view kTag = "<|python_tag|>";
  const bool tagged = text.starts_with(kTag);
  if (tagged) r.skip(kTag.size());
  r.space();
  if (!tagged || (!r.at_end() && r.rest()[0] == '{')) {
    std::string_view object;
    if (const Reader::Step s = r.value(object); s != Reader::Ok) return r.stop(s);
    auto call = call_of(object, "name", {"parameters", "arguments"});
    if (!call) return r.stop(Reader::Fail);
    return r.complete({std::move(*call)});
  }
  // A builtin tool: NAME.call(KEY=VALUE, ...), each VALUE JSON.
  ParsedCall call;
  Reader::Step s = r.name(call.name);
  if (s == Reader::Ok && call.name.empty()) s = Reader::Fail;
  if (s == Reader::Ok) s = r.literal(".call(");
  std::string args = "{";
  for (bool first = true; s == Reader::Ok; first = false) {
    r.space();
    if (r.at_end()) return r.stop(Reader::More);
    if (r.rest()[0] == ')') {
      r.skip(1);
      call.arguments = args + "}";
      return r.complete({std::move(call)});
    }
    if (!first && (s = r.literal(",")) != Reader::Ok) break;
    r.space();
    std::string key;
    std::string_view value;
    if ((s = r.name(key)) != Reader::Ok) break;
    if (key.empty()) s = Reader::Fail;
    if (s == Reader::Ok) r.space();
    if (s == Reader::Ok) s = r.literal("=");
    if (s == Reader::Ok) s = r.value(value);
    if (s != Reader::Ok) break;
    if (!first) args += ',';
    args += json::quote(key);
    args += ':';
    args += json::compact(value);
  }
  return r.stop(s);
}

Block parse_mistral(std::string_view text, bool final) {
  Reader r(text, final);
  r.skip(std::string_view("[TOOL_CALLS]").size());
  std::string_view value;
  if (const Reader::Step s = r.value(value); s != Reader::Ok) return r.stop(s);
  auto calls = calls_of(value, "name", {"arguments", "parameters"});
  if (!calls) return r.stop(Reader::Fail);
  return r.complete(std::move(*calls));
}

Block parse_firefunction(std::string_view text, bool final) {
  Reader r(text, final);
  r.skip(std::string_view("functools").size());  // the list's '[' follows
  std::string_view value;
  if (const Reader::Step s = r.value(value); s != Reader::Ok) return r.stop(s);
  auto calls = json::elements(value) ? calls_of(value, "name", {"arguments"}) : std::nullopt;
  if (!calls) return r.stop(Reader::Fail);
  return r.complete(std::move(*calls));
}

Block parse_command_r7b(std::string_view text, bool final) {
  Reader r(text, final);
  for (const std::string_view marker : {"<|START_RESPONSE|>", "<|END_RESPONSE|>"}) {
    if (text.starts_with(marker)) {
      r.skip(marker.size());
      return r.complete({});
    }
  }
  r.skip(std::string_view("<|START_ACTION|>").size());
  std::string_view value;
  if (const Reader::Step s = r.value(value); s != Reader::Ok) return r.stop(s);
  auto calls = json::elements(value) ? calls_of(value, "tool_name", {"parameters"}) : std::nullopt;
  if (!calls) return r.stop(Reader::Fail);
  return close_block(r, "<|END_ACTION|>", std::move(*calls));
}

}  // namespace tessera::tool_calls
