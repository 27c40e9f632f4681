// Fuzzes chat-template rendering: a family (by name, or detected from arbitrary Jinja
// text) and up to 8 arbitrary messages (any role, any bytes). Checks the property every
// family documents: format_delta(history, added) is a suffix of format(history + added).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "tessera/chat.h"

using namespace tessera;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  static const std::vector<std::string> names = ChatTemplate::names();
  static const char* kRoles[] = {"system", "user", "assistant", "developer", "tool"};
  std::optional<ChatTemplate> tmpl;
  if (in.ConsumeBool()) {
    tmpl = ChatTemplate::detect(in.ConsumeRandomLengthString(4096));
  } else {
    Result<ChatTemplate> t = ChatTemplate::from_name(names[in.ConsumeIntegralInRange<size_t>(0, names.size() - 1)]);
    if (!t) fuzz::property_failed("a listed family name is refused");
    tmpl = *t;
  }
  if (!tmpl) return 0;
  if (in.ConsumeBool()) tmpl->set_eos_text(in.ConsumeRandomLengthString(16));
  std::vector<ChatMessage> messages(in.ConsumeIntegralInRange<size_t>(0, 8));
  for (ChatMessage& m : messages) {
    m.role = in.ConsumeBool() ? std::string(kRoles[in.ConsumeIntegralInRange<size_t>(0, 4)])
                              : in.ConsumeRandomLengthString(12);
    m.content = in.ConsumeRandomLengthString(512);
  }
  const bool add_generation_prompt = in.ConsumeBool();
  const size_t split = messages.empty() ? 0 : in.ConsumeIntegralInRange<size_t>(0, messages.size());
  const std::string whole = tmpl->format(messages, add_generation_prompt).value();
  const std::span<const ChatMessage> all(messages);
  const std::string delta = tmpl->format_delta(all.first(split), all.subspan(split), add_generation_prompt).value();
  if (delta.size() > whole.size() || whole.compare(whole.size() - delta.size(), delta.size(), delta) != 0) {
    fuzz::property_failed("format_delta is not a suffix of format");
  }
  volatile size_t n = tmpl->end_marker().size() + tmpl->assistant_suffix().size();
  (void)n;
  return 0;
}
