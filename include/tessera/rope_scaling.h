// RoPE scaling chosen for a context, over what the model file says (<arch>.rope.freq_base
// and <arch>.rope.scaling.*): the reference engine's context parameters of the same names
// (llama_context_params; its flags --rope-scaling, --rope-scale, --rope-freq-base,
// --rope-freq-scale and --yarn-*), with the same "unset" values and the same rules.
//
// How the context combines them with the file (as the reference's context does):
//  - the scaling type: `type`, else the file's rope.scaling.type (absent: linear);
//  - the frequency base: `freq_base`, else the file's;
//  - the frequency scale: `freq_scale`, else 1 / rope.scaling.factor (1 without one);
//    with the type none it is 1 whatever was given;
//  - YaRN's original context: `yarn_orig_ctx`, else rope.scaling.original_context_length,
//    else the training context;
//  - the extrapolation mix: `yarn_ext_factor`, or when negative 1 for YaRN and 0 otherwise;
//  - the attention factor: `yarn_attn_factor` times the file's rope.scaling.attn_factor.
//    With a mix (ext_factor != 0) the rotation's magnitude is that times
//    1 + 0.1 ln(1 / freq_scale) (YaRN's mscale), else that alone;
//  - the ramp: pairs rotating fewer than yarn_beta_slow times over the original context
//    are interpolated (freq_scale theta), those rotating more than yarn_beta_fast times
//    keep their angle, linear in between, mixed in by ext_factor.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "tessera/status.h"

namespace tessera {

/// --rope-scaling: how the positions past the training context are mapped.
enum class RopeScalingType : uint8_t {
  Unspecified,  // the model file's
  None,         // no frequency scaling (freq_scale is 1)
  Linear,       // every frequency times freq_scale (position interpolation)
  Yarn,         // YaRN: interpolated low frequencies, kept high ones, a ramp between
};

/// The name --rope-scaling takes ("none", "linear", "yarn"); nullopt for another.
std::optional<RopeScalingType> rope_scaling_from_name(std::string_view name);

struct RopeScalingParams {
  RopeScalingType type = RopeScalingType::Unspecified;
  float freq_base = 0.0f;          // > 0; 0: the file's
  float freq_scale = 0.0f;         // > 0; 0: the file's (1 / rope.scaling.factor)
  int64_t yarn_orig_ctx = 0;       // >= 0; 0: the file's original (else training) context
  float yarn_ext_factor = -1.0f;   // finite; negative: 1 for YaRN, else 0
  float yarn_attn_factor = 1.0f;   // > 0
  float yarn_beta_fast = 32.0f;    // > 0
  float yarn_beta_slow = 1.0f;     // > 0

  /// Whether anything differs from the file's values.
  bool overrides() const;
  bool operator==(const RopeScalingParams&) const = default;
};

/// Checks the ranges above; the message names the field.
Status check_rope_scaling(const RopeScalingParams& p);

}  // namespace tessera
