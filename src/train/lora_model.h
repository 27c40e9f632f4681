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
  std::vector<std::string> targets = {"q", "k", "v", "o", "gate", "up", "down"};
};

/// The LoRA's target names ("q", "k", "v", "o", "gate", "up", "down") from a comma list.
Result<std::vector<std::string>> parse_lora_targets(const std::string& list);

/// A new LoRA over `base` (which must outlive it): a ~ U(-1/sqrt(n_in), 1/sqrt(n_in)) from
/// `seed`, b = 0 (so training starts from the base), scale alpha / r.
Result<std::unique_ptr<TrainModel>> create_lora(const Model& base, const LoraShape& shape, uint64_t seed,
                                                Backend& backend);

}  // namespace tessera::train
