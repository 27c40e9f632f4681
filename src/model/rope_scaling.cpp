#include "model/rope_scaling.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace tessera {
namespace {

/// "rope <field> = <value> must be <rule>".
Status out_of_range(const char* field, double value, const char* rule) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return Status::error(std::string("rope scaling: ") + field + " = " + text + " must be " + rule);
}

RopeScaling internal(RopeScalingType t) {
  switch (t) {
    case RopeScalingType::None: return RopeScaling::None;
    case RopeScalingType::Yarn: return RopeScaling::Yarn;
    default: return RopeScaling::Linear;
  }
}

}  // namespace

std::optional<RopeScalingType> rope_scaling_from_name(std::string_view name) {
  if (name == "none") return RopeScalingType::None;
  if (name == "linear") return RopeScalingType::Linear;
  if (name == "yarn") return RopeScalingType::Yarn;
  return std::nullopt;
}

bool RopeScalingParams::overrides() const { return !(*this == RopeScalingParams{}); }

Status check_rope_scaling(const RopeScalingParams& p) {
  using std::isfinite;
  if (!isfinite(p.freq_base) || p.freq_base < 0) {
    return out_of_range("freq_base", p.freq_base, "a finite number > 0 (0: the model's)");
  }
  if (!isfinite(p.freq_scale) || p.freq_scale < 0) {
    return out_of_range("freq_scale", p.freq_scale, "a finite number > 0 (0: the model's)");
  }
  if (p.yarn_orig_ctx < 0 || p.yarn_orig_ctx > std::numeric_limits<int32_t>::max()) {
    return out_of_range("yarn_orig_ctx", double(p.yarn_orig_ctx), "0 (the model's) to 2^31 - 1");
  }
  if (!isfinite(p.yarn_ext_factor)) {
    return out_of_range("yarn_ext_factor", p.yarn_ext_factor, "a finite number (negative: by the scaling type)");
  }
  if (!isfinite(p.yarn_attn_factor) || p.yarn_attn_factor <= 0) {
    return out_of_range("yarn_attn_factor", p.yarn_attn_factor, "a finite number > 0");
  }
  // The ramp's ends are logarithms of n_ctx_orig / (2 pi beta): a beta of 0 or below has none.
  if (!isfinite(p.yarn_beta_fast) || p.yarn_beta_fast <= 0) {
    return out_of_range("yarn_beta_fast", p.yarn_beta_fast, "a finite number > 0");
  }
  if (!isfinite(p.yarn_beta_slow) || p.yarn_beta_slow <= 0) {
    return out_of_range("yarn_beta_slow", p.yarn_beta_slow, "a finite number > 0");
  }
  return Status::ok();
}

Result<HParams> apply_rope_scaling(const HParams& file, const RopeScalingParams& p) {
  TESSERA_RETURN_IF_ERROR(check_rope_scaling(p));
  if (!p.overrides()) return file;
  if (file.positions != PositionKind::Rope) {
    return Status::error("rope scaling: this " + file.arch + " model has no rotary position embeddings (its positions are " +
                         (file.positions == PositionKind::Alibi ? "ALiBi biases" : "learned embeddings") +
                         "): there is nothing to scale");
  }
  HParams h = file;
  if (p.type != RopeScalingType::Unspecified) h.rope_scaling = internal(p.type);
  if (p.freq_base > 0) h.rope_freq_base = p.freq_base;
  // The file's factor counts whatever its own type was: a file of type none keeps one for
  // a context that asks for linear or YaRN scaling.
  h.rope_freq_scale = p.freq_scale > 0 ? p.freq_scale : file.rope_freq_scale_train;
  if (h.rope_scaling == RopeScaling::None) h.rope_freq_scale = 1.0f;
  h.yarn_ext_factor = p.yarn_ext_factor;
  h.yarn_attn_factor = p.yarn_attn_factor;
  h.yarn_beta_fast = p.yarn_beta_fast;
  h.yarn_beta_slow = p.yarn_beta_slow;
  h.yarn_orig_ctx = p.yarn_orig_ctx;
  return h;
}

}  // namespace tessera
