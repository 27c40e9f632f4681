#include "model/variant_check.h"

#include "model/arch.h"

namespace tessera {
namespace {

const char* position_name(PositionKind k) {
  switch (k) {
    case PositionKind::Rope:
      return "RoPE";
    case PositionKind::Alibi:
      return "ALiBi";
    case PositionKind::Learned:
      return "learned";
  }
  return "?";
}

/// The parts a file may have or not (Presence::Either).
constexpr Presence BlockVariant::*kChoices[] = {
    &BlockVariant::norm_bias, &BlockVariant::second_norm, &BlockVariant::qkv_bias,
    &BlockVariant::out_bias,  &BlockVariant::up_bias,     &BlockVariant::down_bias,
    &BlockVariant::rope_freqs, &BlockVariant::long_rope, &BlockVariant::output,
};

}  // namespace

Result<BlockVariant> decide_variant(const Arch& arch, const HParams& h,
                                    const std::function<bool(const std::string&)>& has_tensor) {
  BlockVariant v = arch.variant;
  for (Presence BlockVariant::*choice : kChoices) {
    if (v.*choice != Presence::Either) continue;
    BlockVariant with = v;
    BlockVariant without = v;
    with.*choice = Presence::Yes;
    without.*choice = Presence::No;
    bool found = false;
    for (const WeightSpec& spec : arch.weights) {
      // The tensors this choice adds (layer 0 stands for every layer: the loader then
      // requires the same in all of them).
      if (presence_of(with, spec) != presence_of(without, spec)) found = found || has_tensor(weight_name(spec, 0));
    }
    v.*choice = found ? Presence::Yes : Presence::No;
  }
  const std::string arch_name(arch.name);
  if (v.residual == Residual::ByKey) {
    v.residual = h.parallel_residual ? Residual::Parallel : Residual::Sequential;
  } else if (h.parallel_residual && v.residual == Residual::Sequential) {
    return Status::error("model: key '" + arch_name + ".use_parallel_residual' is true, but " + arch_name +
                         " blocks are sequential");
  }
  const uint8_t bit = position_bit(h.positions);
  if ((v.positions & bit) == 0) {
    return Status::error("model: " + arch_name + " positions are " + position_name(h.positions) +
                         ", which its block variant does not allow");
  }
  v.positions = bit;
  if (v.rope() && h.rope_mode != v.rope_mode) {
    return Status::error("model: " + arch_name + " RoPE mode differs from its block variant's");
  }
  return v;
}

bool is_decided(const BlockVariant& v) {
  for (Presence BlockVariant::*choice : kChoices) {
    if (v.*choice == Presence::Either) return false;
  }
  const bool one_position = v.positions != 0 && (v.positions & (v.positions - 1)) == 0;
  return one_position && v.residual != Residual::ByKey;
}

}  // namespace tessera
