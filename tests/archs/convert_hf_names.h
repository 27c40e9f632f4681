// The Hugging Face side of the `tessera convert` tests: where each tensor of a reference GGUF
// sits in a checkpoint of its architecture, and the config.json its keys come from, written
// by the inverse of the reference converter's rules (convert_hf_to_gguf.py and
// tensor_mapping.py), independently of the converter's own tables.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tessera/gguf.h"

namespace tessera::test {

/// How the HF side of an architecture differs from LLaMA's.
enum class HfStyle {
  Llama, Mixtral, Moe, Gemma, Gemma2, Olmo2, Starcoder2, Phi3, Deepseek2, Bert,
  Gpt2, Starcoder, Refact, Mpt, GptNeox, Bloom, Falcon, Falcon40b, Persimmon, Baichuan, NomicBert,
};

/// A GGUF tensor's place in the checkpoint: the HF tensor, and where the checkpoint fuses
/// several GGUF tensors into one (Baichuan's W_pack, Refact's kv and gate_up), this one's
/// block of rows among `parts`. An empty name: not in a checkpoint (rope_freqs).
struct HfPlace {
  std::string name;
  int part = 0;
  int parts = 1;
};

HfPlace hf_place(const std::string& gguf_name, HfStyle style);

/// The checkpoint tensor of expert `e` of a stacked GGUF tensor.
std::string hf_expert(const std::string& gguf_name, int64_t e, HfStyle style);

/// config.json for the GGUF's keys, in the architecture's own names.
nlohmann::json hf_config(const gguf::File& f, HfStyle style, const std::string& hf_arch);

}  // namespace tessera::test
