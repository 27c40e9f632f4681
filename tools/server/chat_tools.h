// Tools and reasoning in /v1/chat/completions: the request's `tools`, `tool_choice`,
// `parallel_tool_calls`, `chat_template_kwargs` and `reasoning_format` become what the
// template renders (ChatExtras), the grammar that makes the model write calls, and the
// plan by which its replies are read back into content, reasoning_content and tool_calls
// (tessera/tool_calls.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/json_fields.h"
#include "tessera/chat.h"
#include "tessera/serving.h"
#include "tessera/tool_calls.h"

namespace tessera::server {

struct ServerContext;

/// How the replies of one chat request are read.
struct ReplyPlan {
  bool parse = false;  // through tool_calls::parse_reply / StreamParser (else plain content)
  bool tools = false;  // calls may come: finish_reason "tool_calls" when they do
  tool_calls::Format format = tool_calls::Format::ContentOnly;
  tool_calls::ParseOptions options;
  // The grammar to build once the prompt is known (reasoning_open depends on it).
  std::vector<tool_calls::Tool> tool_list;
  tool_calls::Choice choice;
  bool parallel = true;
};

/// Reads the tool and reasoning fields of a chat request (`ordered`: the same body with
/// its key order, which the template's tojson keeps): fills `extras`, adds the
/// instruction of the generic format to `messages`, and returns the plan. Throws a 400
/// naming the field at fault.
ReplyPlan decode_chat_tools(const Fields& body, const nlohmann::ordered_json& ordered, const ServerContext& ctx,
                            std::vector<ChatMessage>& messages, ChatExtras& extras);

/// Once the prompt text is rendered: whether it opened a thinking block, and the grammar
/// of the calls (set on `r`, lazy for tool_choice auto). Throws a 400 for a tool schema
/// no grammar can express, and when the request also has its own grammar.
void finish_chat_tools(ReplyPlan& plan, const std::string& prompt_text, serving::GenerationRequest& r);

/// {"role": "assistant", "content", "reasoning_content", "tool_calls"} of a whole reply.
nlohmann::json reply_message(const ReplyPlan& plan, const std::string& text, bool& has_calls);
/// A call as OpenAI writes it: {id, type: "function", function: {name, arguments}}.
nlohmann::json call_json(const tool_calls::ToolCall& call);

}  // namespace tessera::server
