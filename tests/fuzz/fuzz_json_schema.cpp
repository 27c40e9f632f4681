// Fuzzes the JSON-schema to grammar converter: any text as a schema. A schema it accepts
// must give a grammar the GBNF parser accepts (else the converter wrote bad GBNF).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "tessera/grammar.h"
#include "tessera/json_schema.h"

using namespace tessera;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<std::string> gbnf = json_schema_to_grammar(text);
  if (!gbnf) {
    if (gbnf.status().message().empty()) fuzz::property_failed("a refused schema has no message");
    return 0;
  }
  Result<std::shared_ptr<const Grammar>> g = Grammar::parse(*gbnf, "schema grammar");
  if (!g) {
    std::fprintf(stderr, "%s\n--- grammar:\n%s\n", g.status().message().c_str(), gbnf->c_str());
    fuzz::property_failed("the converter's grammar does not parse");
  }
  return 0;
}
