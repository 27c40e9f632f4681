// A LoRA being trained on a frozen base: the base's weights as they are (any type; the
// gradient reaches the activations through dequantized copies of them), and for each
// targeted projection W a pair a [n_in, r], b [r, n_out] of F32 parameters attached as
// the base's adapters are at run time (LayerWeights::lora), so the architecture's own
// graph builder runs it. Its keys and parameters are a GGUF LoRA adapter.
#pragma once

#include <string>
#include <vector>

#include "tessera/model.h"
#include "train/train_model.h"

namespace tessera::train {

struct LoraShape {
  int64_t r = 8;
  float alpha = 16.0f;
  std::vector<std::string> targets = {"all"};  // {"all"}: every projection the model has
};

/// The LoRA's targets from "all" or a comma list of q, k, v, qkv, o, gate, up, down (the
/// projections attn_q, attn_k, attn_v, attn_qkv, attn_output, ffn_gate, ffn_up, ffn_down).
Result<std::vector<std::string>> parse_lora_targets(const std::string& list);

/// A new LoRA over `base` (which must outlive it) on the targeted projections that its
/// architecture's weight list declares adaptable: a ~ U(-1/sqrt(n_in), 1/sqrt(n_in)) from
/// `seed`, b = 0 (so training starts from the base), scale alpha / r. Errors: a named
/// target the architecture lacks (listing those it has).
Result<std::unique_ptr<TrainModel>> create_lora(const Model& base, const LoraShape& shape, uint64_t seed,
                                                Backend& backend);

}  // namespace tessera::train
