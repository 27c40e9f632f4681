// What an architecture is to the engine: its block variant, its tensor list and its graph
// builder.
// Each architecture is one file in arch/ and one line in arch/registry.cpp.
#pragma once

#include <span>
#include <string_view>

#include "model/blocks.h"
#include "model/variant.h"
#include "model/weights.h"

namespace tessera {

struct Arch {
  std::string_view name;                // general.architecture
  /// What its blocks compute, with the alternatives its files may choose (variant.h). The
  /// arch file static_asserts variant_error and weights_error (variant_check.h).
  BlockVariant variant;
  std::span<const WeightSpec> weights;  // every tensor, declared once
  /// Builds the forward graph of one batch and returns its logits [n_vocab, n_outputs].
  Tensor* (*build)(Graph& g, const HParams& h, const ModelWeights& w, const BatchInputs& in);
  /// Settles what the keys leave to the architecture (HParams::positions and rope_mode,
  /// fixed biases, variants), and refuses combinations it cannot build; null: RoPE,
  /// normal mode, nothing to check.
  Status (*configure)(const gguf::File& file, HParams& h) = nullptr;
  /// The reference quantizer's rules that name an architecture (quant_recipe.cpp).
  struct QuantRules {
    bool falcon_mixes = false;  // Falcon's K-quant mixes, and Q8_0 for its output
    bool rule_70b = false;      // 80 layers with grouped-query attention: more bits
  } quant = {};
};

/// The architecture named `name`, or null.
const Arch* find_arch(std::string_view name);
/// Names of all registered architectures, for error messages.
std::string registered_arch_names();
/// Every registered architecture, in registry order.
std::span<const Arch* const> registered_archs();

}  // namespace tessera
