#include "common/lora_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "tessera/gguf.h"
#include "quant/convert.h"

namespace tessera::test {
namespace {

// The files temp_gguf handed out; its destructor (at exit) removes them.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (const std::string& p : paths) std::remove(p.c_str());
  }
};

}  // namespace

std::string temp_gguf(const std::string& stem) {
  static TempFiles files;
  const std::string path = ::testing::TempDir() + "tessera_" + stem + "_" + std::to_string(getpid()) + "_" +
                           std::to_string(files.paths.size()) + ".gguf";
  files.paths.push_back(path);
  return path;
}

Result<AdapterFile> adapter_for(const std::string& base, const std::vector<std::string>& weights, int64_t r) {
  Result<std::unique_ptr<gguf::File>> file = gguf::File::open(base);
  if (!file) return file.status();
  AdapterFile out;
  Result<std::string> arch = (*file)->get_string("general.architecture");
  if (!arch) return arch.status();
  out.arch = *arch;
  for (const std::string& w : weights) {
    const gguf::TensorInfo* t = (*file)->find_tensor(w);
    if (t == nullptr) return Status::error(base + ": no tensor '" + w + "'");
    out.tensors.push_back({w + ".lora_a", {t->ne[0], r, 1, 1}});
    out.tensors.push_back({w + ".lora_b", {r, t->ne[1], 1, 1}});
  }
  return out;
}

Status write_adapter(const AdapterFile& f, const std::string& path) {
  gguf::Writer w;
  if (!f.general_type.empty()) w.set("general.type", f.general_type);
  if (!f.adapter_type.empty()) w.set("adapter.type", f.adapter_type);
  if (!f.arch.empty()) w.set("general.architecture", f.arch);
  if (f.alpha) w.set("adapter.lora.alpha", *f.alpha);
  std::mt19937_64 rng(f.seed);
  std::normal_distribution<float> normal(0.0f, f.stddev);
  for (const AdapterTensor& t : f.tensors) {
    const int64_t n = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
    std::vector<float> v(size_t(n), 0.0f);
    if (!(f.zero_b && t.is_b())) {
      for (float& x : v) x = normal(rng);
    }
    std::vector<uint8_t> bytes(dtype_row_size(f.type, t.ne[0]) * size_t(n / t.ne[0]));
    quant::from_float_fn(f.type)(v.data(), bytes.data(), n);
    w.add_tensor(t.name, f.type, t.ne, t.n_dims, bytes.data(), bytes.size());
  }
  return w.write(path);
}

std::vector<std::string> llama_projections(int64_t n_layer) {
  std::vector<std::string> out;
  for (int64_t il = 0; il < n_layer; ++il) {
    for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
      out.push_back("blk." + std::to_string(il) + "." + w + ".weight");
    }
  }
  return out;
}

}  // namespace tessera::test
