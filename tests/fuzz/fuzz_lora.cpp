// Fuzzes the LoRA-adapter loader: any bytes as an adapter file for the tiny model. An
// adapter that loads must give a model that decodes a token.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.h"

using namespace tessera;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  fuzz::tiny_model_bytes();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::temp_path("adapter");
  fuzz::write_file(path, data, size);
  ModelParams mp;
  mp.adapters.push_back({path, 0.5f});
  Result<std::unique_ptr<Model>> model = Model::load_from_memory(fuzz::tiny_model_bytes(), "tiny", mp);
  if (!model) {
    if (model.status().message().empty()) fuzz::property_failed("a refused adapter has no message");
    return 0;
  }
  Result<std::unique_ptr<Context>> ctx = Context::create(**model, fuzz::tiny_context_params());
  if (!ctx) fuzz::property_failed("no context for the adapted model");
  const TokenId tokens[] = {1, 2};
  const Status s = (*ctx)->decode(tokens);
  if (!s) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    fuzz::property_failed("an adapted model does not decode");
  }
  return 0;
}
