// Fuzzes the reading of replies into content, reasoning and tool calls
// (tessera/tool_calls.h): the first byte picks the format, the second the options, the
// third how the text is cut; the rest is the reply. Checks the property StreamParser
// documents: the deltas, concatenated (calls by index), equal parse_reply's result on the
// whole text, however the text is cut; no crash on any bytes.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "tessera/tool_calls.h"

using namespace tessera;
using tool_calls::Format;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const Format format = Format(data[0] % (int(Format::Firefunction) + 1));
  tool_calls::ParseOptions options;
  options.extract_reasoning = data[1] & 1;
  options.reasoning_open = data[1] & 2;
  options.id_seed = data[1];
  const size_t step = 1 + data[2] % 17;
  const std::string_view text(reinterpret_cast<const char*>(data + 3), size - 3);

  const tool_calls::Reply whole = tool_calls::parse_reply(format, text, options);
  tool_calls::StreamParser parser(format, options);
  std::string content, reasoning;
  std::map<int, tool_calls::ToolCall> calls;
  auto take = [&](const tool_calls::Delta& d) {
    content += d.content;
    reasoning += d.reasoning;
    for (const auto& c : d.calls) {
      tool_calls::ToolCall& call = calls[c.index];
      call.id += c.id;
      call.name += c.name;
      call.arguments += c.arguments;
    }
  };
  for (size_t i = 0; i < text.size(); i += step) take(parser.feed(text.substr(i, step)));
  take(parser.finish());
  if (content != whole.content) fuzz::property_failed("streamed content differs from the whole parse");
  if (reasoning != whole.reasoning) fuzz::property_failed("streamed reasoning differs from the whole parse");
  if (calls.size() != whole.calls.size()) fuzz::property_failed("streamed calls differ in number");
  for (size_t i = 0; i < whole.calls.size(); ++i) {
    const auto it = calls.find(int(i));
    if (it == calls.end() || it->second.id != whole.calls[i].id || it->second.name != whole.calls[i].name ||
        it->second.arguments != whole.calls[i].arguments) {
      fuzz::property_failed("a streamed call differs from the whole parse");
    }
  }
  return 0;
}
