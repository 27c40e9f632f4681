// Fuzzes the GGUF reader and the model loader: any bytes as a file image, parsed
// (header, metadata, tensor infos, the data section's layout), every value and tensor
// touched, then loaded as a model (hyper-parameters, the architecture's weight list and
// shapes, the vocabulary, weight repacking) and its tokenizer run once.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "tessera/gguf.h"

using namespace tessera;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  Result<std::unique_ptr<gguf::File>> file = gguf::File::from_bytes(bytes, "fuzz.gguf");
  if (!file) {
    if (file.status().message().empty()) fuzz::property_failed("a refused file has no message");
    return 0;
  }
  size_t sum = 0;
  for (const auto& [key, value] : (*file)->metadata()) sum += key.size() + value.to_string(8).size();
  for (const gguf::TensorInfo& t : (*file)->tensors()) {
    if (t.nbytes > 0) sum += t.data[0] + t.data[t.nbytes - 1];
  }
  volatile size_t sink = sum;
  (void)sink;

  Result<std::unique_ptr<Model>> model = Model::load_from_memory(std::move(bytes), "fuzz.gguf");
  if (!model) {
    if (model.status().message().empty()) fuzz::property_failed("a refused model has no message");
    return 0;
  }
  if (const Tokenizer* tok = (*model)->tokenizer()) {
    const std::vector<TokenId> ids = tok->encode("Hello, world! <s> 123", true, true);
    volatile size_t n = tok->decode(ids).size();
    (void)n;
  }
  return 0;
}
