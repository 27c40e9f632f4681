// Random LoRA adapter files for the adapter tests: the adapter tensors of chosen weights
// of a base model (shapes read from the base), or any hand-made list of tensors and keys
// for the files the loader must refuse.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/dtype.h"
#include "tessera/status.h"

namespace tessera::test {

struct AdapterTensor {
  std::string name;               // "<weight>.lora_a" or "<weight>.lora_b"
  std::array<int64_t, 4> ne{1, 1, 1, 1};
  int n_dims = 2;
  bool is_b() const { return name.ends_with(".lora_b"); }
};

struct AdapterFile {
  std::string general_type = "adapter";  // empty: the key is left out
  std::string adapter_type = "lora";
  std::string arch = "llama";
  std::optional<float> alpha;  // adapter.lora.alpha; absent: the scale alone
  DType type = DType::F32;     // of every tensor (F32, F16 or BF16)
  float stddev = 0.02f;        // the tensors hold N(0, stddev) values
  bool zero_b = false;         // every lora_b is 0: the adapter changes nothing
  uint64_t seed = 1;
  std::vector<AdapterTensor> tensors;
};

/// An adapter of rank r for the named weights of the model file `base` (its architecture,
/// a [n_in, r] and b [r, n_out] from each weight's shape). Errors: a name the base lacks.
Result<AdapterFile> adapter_for(const std::string& base, const std::vector<std::string>& weights, int64_t r);

/// A fresh path "<temp dir>/tessera_<stem>_<pid>_<n>.gguf", removed when the process
/// exits (ctest runs each test in its own process, and each writes its own models).
std::string temp_gguf(const std::string& stem);

/// Writes the adapter file.
Status write_adapter(const AdapterFile& f, const std::string& path);

/// The projection weights of every layer of a llama-style model: attn_q/k/v/output,
/// ffn_gate/up/down of blk.0 .. blk.(n_layer-1).
std::vector<std::string> llama_projections(int64_t n_layer);

}  // namespace tessera::test
