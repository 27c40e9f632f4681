// Fuzzes the GBNF parser and matcher: the input up to the first NUL byte is a grammar;
// the rest is a text fed to a matcher of it in pieces of 1 to 8 bytes (the first byte
// of each piece picks its length), then asked whether it may end.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "tessera/grammar.h"

using namespace tessera;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t nul = all.find('\0');
  const std::string_view text = all.substr(0, nul);
  Result<std::shared_ptr<const Grammar>> g = Grammar::parse(text);
  if (!g) {
    if (g.status().message().empty()) fuzz::property_failed("a refused grammar has no message");
    return 0;
  }
  if (nul == std::string_view::npos) return 0;
  GrammarMatcher m(*g);
  std::string_view rest = all.substr(nul + 1);
  while (!rest.empty()) {
    const size_t n = std::min(rest.size() - 1, size_t(uint8_t(rest[0]) % 8 + 1));
    const bool ok = m.accept_text(rest.substr(1, n));
    rest.remove_prefix(n + 1);
    if (!ok) break;
  }
  volatile bool end = m.can_end() || m.is_complete();
  (void)end;
  return 0;
}
