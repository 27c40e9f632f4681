// Fuzzes the state-file loader: any bytes as a saved state of the tiny model's context.
// A state that loads must leave a context that decodes: one more token is evaluated.
// A refused one must leave the context as it was (still able to decode from empty).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.h"

using namespace tessera;

namespace {

const Model& tiny_model() {
  static const std::unique_ptr<Model> model = [] {
    Result<std::unique_ptr<Model>> m = Model::load_from_memory(fuzz::tiny_model_bytes(), "tiny");
    if (!m) fuzz::property_failed("the tiny model does not load");
    return std::move(*m);
  }();
  return *model;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  tiny_model();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::temp_path("state");
  fuzz::write_file(path, data, size);
  Result<std::unique_ptr<Context>> ctx = Context::create(tiny_model(), fuzz::tiny_context_params());
  if (!ctx) fuzz::property_failed("no context for the tiny model");
  Result<std::vector<uint8_t>> user = (*ctx)->load_state(path);
  if (!user && user.status().message().empty()) fuzz::property_failed("a refused state has no message");
  if (user && (*ctx)->n_past() >= fuzz::tiny_context_params().n_ctx) return 0;  // a full cache takes no token
  const TokenId next = 1;
  const Status s = (*ctx)->decode(std::span<const TokenId>(&next, 1));
  if (!s) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    fuzz::property_failed(user ? "a loaded state does not decode" : "a refused state broke the context");
  }
  return 0;
}
