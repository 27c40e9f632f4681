// Formats by name, which one a chat template asks for, and the few texts that depend on
// the format alone.
#include <string>

#include "runtime/tool_calls/syntax.h"
#include "tessera/tool_calls.h"

namespace tessera::tool_calls {

std::string_view format_name(Format format) {
  switch (format) {
    case Format::ContentOnly:
      return "Content-only";
    case Format::Generic:
      return "Generic";
    case Format::Hermes:
      return "Hermes 2 Pro";
    case Format::Llama3Json:
      return "Llama 3.x";
    case Format::Mistral:
      return "Mistral Nemo";
    case Format::DeepSeekR1:
      return "DeepSeek R1";
    case Format::DeepSeekV3:
      return "DeepSeek V3";
    case Format::FunctionaryV31:
      return "Functionary v3.1 Llama 3.1";
    case Format::FunctionaryV32:
      return "Functionary v3.2";
    case Format::CommandR7B:
      return "Command R7B";
    case Format::Firefunction:
      return "FireFunction v2";
  }
  return "?";
}

Format detect_format(std::string_view t) {
  const auto has = [t](std::string_view s) { return t.find(s) != std::string_view::npos; };
  if (has("<｜tool▁calls▁begin｜>"))
    return has("</think>") ? Format::DeepSeekR1 : Format::DeepSeekV3;
  if (has("<|END_THINKING|><|START_ACTION|>")) return Format::CommandR7B;
  if (has("<tool_call>")) return Format::Hermes;
  if (has(">>>all")) return Format::FunctionaryV32;
  if (has(" functools[")) return Format::Firefunction;
  if (has("<|start_header_id|>") && has("<function=")) return Format::FunctionaryV31;
  if (has("<|start_header_id|>ipython<|end_header_id|>")) return Format::Llama3Json;
  if (has("[TOOL_CALLS]")) return Format::Mistral;
  return Format::Generic;
}

std::string_view system_instruction(Format format) {
  if (format != Format::Generic) return {};
  return "Answer with one JSON object only. To call tools: {\"tool_call\": {\"name\": NAME, "
         "\"arguments\": {..}}} (or, where several calls are allowed, {\"tool_calls\": "
         "[{\"name\": NAME, \"arguments\": {..}}, ..]}). To answer the user: {\"response\": "
         "TEXT}.";
}

bool prompt_opens_reasoning(std::string_view prompt) {
  size_t end = prompt.size();
  while (end > 0 && json::is_space(prompt[end - 1])) --end;
  const std::string_view body = prompt.substr(0, end);
  return body.ends_with("<think>") || body.ends_with("<|START_THINKING|>");
}

}  // namespace tessera::tool_calls
