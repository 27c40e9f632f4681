// `tessera convert`: a Hugging Face checkpoint folder to one GGUF file, in C++ with no
// Python. The folder holds config.json, the weights as model.safetensors or shards listed
// by model.safetensors.index.json, and the tokenizer files (tokenizer.json or
// tokenizer.model, tokenizer_config.json, generation_config.json). Each architecture's
// tensor names, the transforms the reference converter applies (LLaMA's q/k row
// permutation for GGUF's rotary layout, fused or split projections, ...) and the metadata
// keys it writes are those of llama.cpp's convert_hf_to_gguf.py.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tessera/status.h"

namespace tessera {

struct ConvertProgress {
  size_t tensor = 0;  // tensors written so far
  size_t n_tensors = 0;
  std::string name;   // the GGUF name of the tensor being written
};

struct ConvertParams {
  std::string input_dir;
  std::string output_path;
  /// f32, f16 or bf16 (the weight matrices; norms, biases and routers stay F32), or a
  /// quantization recipe (q8_0, q4_k_m, ...: see quantize_type_names()), applied to the
  /// F16 conversion as `tessera quantize` applies it.
  std::string type = "f16";
  /// The tokenizer part alone (needs config.json's `architectures` and the tokenizer files).
  bool vocab_only = false;
  /// A tessera architecture name used instead of the one config.json maps to.
  std::string arch_override;
  int n_threads = 0;  // 0: all cores
  std::function<void(const ConvertProgress&)> progress;  // optional
};

struct ConvertReport {
  std::string arch;         // the tessera (GGUF) architecture written
  std::string hf_arch;      // config.json's architectures[0]
  size_t n_tensors = 0;
  bool vocab = false;       // the tokenizer.* keys were written
  uint64_t out_bytes = 0;
  double seconds = 0;
};

/// Converts p.input_dir to p.output_path. Errors name the file and the tensor or key: a
/// missing or truncated shard, a dtype the converter cannot read, a tensor it cannot place
/// or one left over, a shape that disagrees with config.json, an unknown architecture.
/// No partial output is left behind.
Result<ConvertReport> convert_checkpoint(const ConvertParams& p);

/// The Hugging Face architectures (config.json `architectures` values) convert_checkpoint
/// maps, each with the tessera architecture it becomes, in a stable order.
std::vector<std::pair<std::string, std::string>> convertible_architectures();

/// `tessera convert --lora DIR --base BASE.gguf -o OUT.gguf`: a PEFT LoRA adapter folder
/// (adapter_config.json, adapter_model.safetensors with base_model.model.<module>.lora_A
/// .weight [r, in] and .lora_B.weight [out, r]) to a GGUF adapter for the GGUF model BASE,
/// in the format --lora loads and `tessera finetune` writes (general.type "adapter",
/// adapter.type "lora", adapter.lora.alpha; <base tensor>.lora_a / .lora_b).
struct LoraConvertParams {
  std::string adapter_dir;
  std::string base_path;  // the GGUF model the adapter was trained on
  std::string output_path;
  std::string type = "f32";  // of the written tensors: f32, f16 or bf16
};

struct LoraConvertReport {
  std::string arch;       // the base's general.architecture
  size_t n_weights = 0;   // base weights the adapter updates (one lora_a/lora_b pair each)
  int64_t r = 0;          // adapter_config.json's r
  float alpha = 0;        // adapter.lora.alpha written (rsLoRA's folded in: see peft_lora.cpp)
  uint64_t out_bytes = 0;
};

/// Converts p.adapter_dir for p.base_path. Each module maps to the base's tensor by the
/// weight converter's own names and transforms (LLaMA's q/k row permutation applies to
/// lora_B's rows). Errors name the file, the key or the tensor: a missing
/// adapter_config.json or adapter_model.safetensors, a base whose architecture convert
/// does not map, a module with no place in the base, a shape that disagrees with the base
/// tensor, fan_in_fan_out, DoRA, a lora_A without its lora_B. No partial output is left.
Result<LoraConvertReport> convert_peft_lora(const LoraConvertParams& p);

}  // namespace tessera
