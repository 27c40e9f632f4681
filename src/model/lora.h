// LoRA adapters at load: each adapter file is mapped and validated, and its low-rank
// updates are attached to the layer weights they name (LayerWeights::lora), so that the
// graph builders' project() adds them as extra matmuls. Nothing is merged or copied.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "model/arch.h"
#include "tessera/model.h"

namespace tessera {

/// The adapter files' keys: general.type "adapter", adapter.type "lora", the base's
/// general.architecture, adapter.lora.alpha (optional; 0 or absent: the scale alone).
/// Every tensor is <weight>.lora_a or .lora_b, in pairs, of a projection weight
/// (attention q, k, v, qkv, output; feed-forward gate, up, down) of a layer of the base,
/// with a [n_in, r] and b [r, n_out]. Errors name the adapter file and the tensor.
Status attach_adapters(const std::vector<AdapterSpec>& specs, const Arch& arch, const HParams& h,
                       ModelWeights& w, TensorArena& arena, std::vector<std::unique_ptr<gguf::File>>& files);

/// The weights as a forward graph sees them with the adapters' user scales `scales`
/// (ModelParams::adapters order, one each): every delta's scale is scale_for() its
/// adapter's, and the deltas of adapters at scale 0 are left out. A copy of the tensor
/// pointers; nothing is read.
ModelWeights with_adapter_scales(const ModelWeights& w, std::span<const float> scales);

/// The layer fields an adapter may update (those project() multiplies).
bool adaptable(Tensor* LayerWeights::*field);

}  // namespace tessera
