// A context's RoPE scaling over the model file's (tessera/rope_scaling.h): the
// hyper-parameters its forward graphs and cache shifts rotate with.
#pragma once

#include "model/hparams.h"
#include "tessera/rope_scaling.h"

namespace tessera {

/// `file` with `p` applied, as the reference's context combines its parameters with the
/// model's (llama_init_from_model; the rules in tessera/rope_scaling.h). Errors: a value
/// out of range (check_rope_scaling), or a setting for a model whose positions are not
/// rotary (ALiBi, learned embeddings), which would have nothing to scale.
Result<HParams> apply_rope_scaling(const HParams& file, const RopeScalingParams& p);

}  // namespace tessera
