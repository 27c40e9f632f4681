// The block parsers of the formats whose calls sit between special markers (DeepSeek,
// Functionary v3.1 and v3.2), and the table of every format's syntax.
#include "runtime/tool_calls/syntax.h"

namespace tessera::tool_calls {

Block parse_deepseek(std::string_view text, bool final) {
  Reader r(text, final);
  for (const std::string_view opener : kDeepSeekOpeners) {
    if (text.starts_with(opener)) {
      r.skip(opener.size());
      break;
    }
  }
  std::vector<ParsedCall> calls;
  while (true) {
    r.space();
    if (!calls.empty()) {
      if (r.final() && r.at_end()) return r.complete(std::move(calls));
      const size_t before = r.pos();
      if (const Reader::Step s = r.optional("<｜tool▁calls▁end｜>"); s != Reader::Ok)
        return r.stop(s);
      if (r.pos() != before) return r.complete(std::move(calls));
    }
    // <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{..}\n```<｜tool▁call▁end｜>,
    // or V3.1's <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{..}<｜tool▁call▁end｜>.
    std::string first;
    Reader::Step s = r.literal("<｜tool▁call▁begin｜>");
    if (s == Reader::Ok) s = r.name(first);
    if (s == Reader::Ok) s = r.literal("<｜tool▁sep｜>");
    if (s == Reader::Ok && r.at_end()) s = Reader::More;
    if (s != Reader::Ok) return r.stop(s);
    ParsedCall call;
    if (r.rest()[0] == '{') {
      call.name = first;
    } else {
      s = r.name(call.name);
      if (s == Reader::Ok && call.name.empty()) s = Reader::Fail;
      if (s == Reader::Ok) r.space();
      if (s == Reader::Ok) s = r.optional("```json");
      if (s == Reader::Ok) s = r.optional("```");
      if (s != Reader::Ok) return r.stop(s);
    }
    std::string_view value;
    if ((s = r.value(value)) != Reader::Ok) return r.stop(s);
    const auto arguments = arguments_of(value);
    if (!arguments) return r.stop(Reader::Fail);
    call.arguments = *arguments;
    r.space();
    s = r.optional("```");
    if (s == Reader::Ok) r.space();
    if (s == Reader::Ok) s = r.literal("<｜tool▁call▁end｜>");
    if (s != Reader::Ok) return r.stop(s);
    calls.push_back(std::move(call));
  }
}

Block parse_functionary_v31(std::string_view text, bool final) {
  Reader r(text, final);
  constexpr std::string_view kTag = "<|python_tag|>";
  if (text.starts_with(kTag)) {  // the rest of the reply is Python code
    if (!final) return r.stop(Reader::More);
    r.skip(text.size());
    return r.complete({{"python", "{\"code\":" + json::quote(text.substr(kTag.size())) + "}"}});
  }
  r.skip(std::string_view("<function=").size());
  ParsedCall call;
  std::string_view value;
  Reader::Step s = r.name(call.name);
  if (s == Reader::Ok && call.name.empty()) s = Reader::Fail;
  if (s == Reader::Ok) s = r.literal(">");
  if (s == Reader::Ok) s = r.value(value);
  if (s != Reader::Ok) return r.stop(s);
  const auto arguments = arguments_of(value);
  if (!arguments) return r.stop(Reader::Fail);
  call.arguments = *arguments;
  r.space();
  if (r.final() && r.at_end()) return r.complete({std::move(call)});
  if ((s = r.literal("</function>")) != Reader::Ok) return r.stop(s);
  return r.complete({std::move(call)});
}

Block parse_functionary_v32(std::string_view text, bool final) {
  // [>>>]RECIPIENT\n then content (RECIPIENT "all"), JSON arguments, or Python code.
  Reader r(text, final);
  ParsedCall call;
  Reader::Step s = r.optional(">>>");
  if (s == Reader::Ok) s = r.name(call.name);
  if (s == Reader::Ok && call.name.empty()) s = Reader::Fail;
  if (s == Reader::Ok) s = r.literal("\n");
  if (s != Reader::Ok) return r.stop(s);
  if (call.name == "all") return r.complete({});
  const std::string_view body = r.rest();
  const size_t first = json::skip_space(body, 0);
  if (first == body.size()) return r.stop(Reader::More);
  if (body[first] == '{') {
    std::string_view value;
    if ((s = r.value(value)) != Reader::Ok) return r.stop(s);
    const auto arguments = arguments_of(value);
    if (!arguments) return r.stop(Reader::Fail);
    call.arguments = *arguments;
    return r.complete({std::move(call)});
  }
  if (call.name != "python") return r.stop(Reader::Fail);
  size_t end = body.find(">>>");
  if (end == std::string_view::npos) {
    if (!final) return r.stop(Reader::More);
    end = body.size();
  }
  r.skip(end);
  call.arguments = "{\"code\":" + json::quote(body.substr(0, end)) + "}";
  return r.complete({std::move(call)});
}

const Syntax& syntax_of(Format format) {
  static const Syntax kContentOnly{};
  static const Syntax kGeneric{{}, {"{"}, parse_generic};
  static const Syntax kHermes{{"<tool_call>"}, {}, parse_hermes};
  static const Syntax kLlama3{{"<|python_tag|>"}, {"{"}, parse_llama3};
  static const Syntax kMistral{{"[TOOL_CALLS]"}, {}, parse_mistral};
  static const Syntax kDeepSeek{
      {std::begin(kDeepSeekOpeners), std::end(kDeepSeekOpeners)}, {}, parse_deepseek};
  static const Syntax kFunctionaryV31{{"<function=", "<|python_tag|>"}, {}, parse_functionary_v31};
  static const Syntax kFunctionaryV32{{">>>"}, {""}, parse_functionary_v32};
  static const Syntax kCommandR7B{{"<|START_ACTION|>", "<|START_RESPONSE|>", "<|END_RESPONSE|>"},
                                  {},
                                  parse_command_r7b,
                                  "<|START_THINKING|>",
                                  "<|END_THINKING|>"};
  static const Syntax kFirefunction{{"functools["}, {}, parse_firefunction};
  switch (format) {
    case Format::ContentOnly:
      return kContentOnly;
    case Format::Generic:
      return kGeneric;
    case Format::Hermes:
      return kHermes;
    case Format::Llama3Json:
      return kLlama3;
    case Format::Mistral:
      return kMistral;
    case Format::DeepSeekR1:
    case Format::DeepSeekV3:
      return kDeepSeek;
    case Format::FunctionaryV31:
      return kFunctionaryV31;
    case Format::FunctionaryV32:
      return kFunctionaryV32;
    case Format::CommandR7B:
      return kCommandR7B;
    case Format::Firefunction:
      return kFirefunction;
  }
  return kContentOnly;
}

}  // namespace tessera::tool_calls
