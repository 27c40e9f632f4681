// Fuzzes the Jinja engine (tessera/jinja.h): the input up to its first NUL byte is a
// template, what follows (when there is one) the JSON context; without one, a fixed
// context of a chat request with tools. Every input must parse or be refused, and render
// or fail, within the render limits (small here, so that each execution stays fast):
// no crash, no hang, no memory past the limits. Rendering twice gives the same result
// (checked on inputs under 1 KiB, to keep executions fast).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "tessera/jinja.h"

using namespace tessera;

namespace {

constexpr const char* kContext = R"({"messages": [
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "What is the weather in Paris?"},
  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2.5, null, true]}}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
  {"role": "assistant", "content": "<think>ok</think>It is 21 \u00b0C."}],
 "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
 "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false})";

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view source = input.substr(0, nul);
  const std::string context = nul == std::string_view::npos ? kContext : std::string(input.substr(nul + 1));
  Result<jinja::Template> t = jinja::Template::parse(source);
  if (!t) {
    if (t.status().message().empty()) fuzz::property_failed("a refused template has no message");
    return 0;
  }
  jinja::RenderOptions options;
  options.now = std::tm{};
  options.max_output = size_t{1} << 16;
  options.max_steps = 20'000;
  Result<std::string> first = t->render(context, options);
  if (size < 1024) {
    Result<std::string> second = t->render(context, options);
    if (first.is_ok() != second.is_ok() || (first && *first != *second)) {
      fuzz::property_failed("rendering the same template twice gave different results");
    }
  }
  if (first && first->size() > options.max_output) fuzz::property_failed("the output passed max_output");
  return 0;
}
