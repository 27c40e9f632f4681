// Fuzzes the safetensors reader: any bytes as a file image, parsed and validated (the
// header length, the JSON header, each tensor's dtype, shape and offsets, the tiling of
// the data section), then every tensor's first and last byte read and each floating-point
// tensor converted to floats: nothing a header says may lead a read outside the image.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "tessera/safetensors.h"

using namespace tessera;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<std::unique_ptr<safetensors::File>> file =
      safetensors::File::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz.safetensors");
  if (!file) {
    if (file.status().message().empty()) fuzz::property_failed("a refused file has no message");
    return 0;
  }
  size_t sum = 0;
  for (const auto& [k, v] : (*file)->metadata()) sum += k.size() + v.size();
  for (const safetensors::TensorInfo& t : (*file)->tensors()) {
    if (t.nbytes > 0) sum += t.data[0] + t.data[t.nbytes - 1];
    if ((*file)->find(t.name) != &t) fuzz::property_failed("find() does not return the listed tensor");
    if (t.n_elements() <= (1 << 20)) {
      std::vector<float> out(size_t(t.n_elements()));
      if (safetensors::to_float(t, out)) sum += out.empty() ? 0 : size_t(out[0] == out[0]);
    }
  }
  volatile size_t sink = sum;
  (void)sink;
  return 0;
}
