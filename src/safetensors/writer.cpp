// Writing a safetensors file (tessera/safetensors.h): the header JSON with the tensors'
// offsets in the order given, padded with spaces to a multiple of 8 bytes, then the data.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "tessera/safetensors.h"

namespace tessera::safetensors {

Status write(const std::string& path, const std::vector<WriteTensor>& tensors,
             const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t at = 0;
  for (const WriteTensor& t : tensors) {
    if (t.name == "__metadata__" || header.contains(t.name)) {
      return Status::error("safetensors: " + path + ": tensor name '" + t.name + "' is reserved or given twice");
    }
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= uint64_t(d);
    if (n * dtype_size(t.dtype) != t.data.size()) {
      return Status::error("safetensors: " + path + ": tensor '" + t.name + "' has " + std::to_string(t.data.size()) +
                           " bytes for " + std::to_string(n) + " " + dtype_name(t.dtype) + " elements");
    }
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {at, at + t.data.size()}}};
    at += t.data.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return Status::error("safetensors: cannot create '" + path + "'");
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  bool ok = std::fwrite(len, 1, 8, f.get()) == 8 && std::fwrite(text.data(), 1, text.size(), f.get()) == text.size();
  for (const WriteTensor& t : tensors) {
    ok = ok && (t.data.empty() || std::fwrite(t.data.data(), 1, t.data.size(), f.get()) == t.data.size());
  }
  if (!ok || std::fflush(f.get()) != 0) return Status::error("safetensors: writing '" + path + "' failed");
  return Status::ok();
}

}  // namespace tessera::safetensors
