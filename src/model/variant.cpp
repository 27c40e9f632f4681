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
    &BlockVariant::moe,       &BlockVariant::q_lora,      &BlockVariant::rank_head,
    &BlockVariant::rank_out,
};

/// The keys a mixture-of-experts variant needs, or their absence without one.
Status check_experts(const BlockVariant& v, const HParams& h, const std::string& arch) {
  if (v.moe != Presence::Yes) {
    if (h.n_layer_dense_lead > 0) {
      return Status::error("model: key '" + arch + ".leading_dense_block_count' is set, but this " + arch +
                           " file has no experts");
    }
    return Status::ok();
  }
  if (h.n_expert <= 0 || h.n_expert_used <= 0 || h.n_expert_used > h.n_expert) {
    return Status::error("model: a mixture-of-experts " + arch + " file needs keys '" + arch + ".expert_count' and '" +
                         arch + ".expert_used_count' with 1 <= used <= count (found " + std::to_string(h.n_expert) +
                         " and " + std::to_string(h.n_expert_used) + ")");
  }
  if (h.n_layer_dense_lead > 0 && !v.leading_dense) {
    return Status::error("model: key '" + arch + ".leading_dense_block_count' is set, but " + arch +
                         " has no leading dense layers");
  }
  if (h.n_layer_dense_lead > h.n_layer) {
    return Status::error("model: key '" + arch + ".leading_dense_block_count' exceeds block_count");
  }
  return Status::ok();
}

/// A value head size other than the key's needs MLA; MLA needs its ranks.
Status check_heads(const BlockVariant& v, const HParams& h, const std::string& arch) {
  if (h.head_dim_v != h.head_dim && !v.mla) {
    return Status::error("model: key '" + arch + ".attention.value_length' = " + std::to_string(h.head_dim_v) +
                         " differs from the key head size " + std::to_string(h.head_dim) + ", but " + arch +
                         " attention has one head size for keys and values");
  }
  if (!v.mla) return Status::ok();
  if (h.n_lora_kv <= 0) {
    return Status::error("model: a " + arch + " file needs key '" + arch + ".attention.kv_lora_rank'");
  }
  if (v.q_lora == Presence::Yes && h.n_lora_q <= 0) {
    return Status::error("model: this " + arch + " file has attn_q_a but no key '" + arch + ".attention.q_lora_rank'");
  }
  if (h.n_rot >= h.head_dim) {
    return Status::error("model: " + arch + " rope.dimension_count " + std::to_string(h.n_rot) +
                         " leaves no unrotated part of the key head size " + std::to_string(h.head_dim));
  }
  return Status::ok();
}

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
      // (moe swaps the dense FFN for the experts: only what `with` adds decides.)
      const bool adds = presence_of(with, spec) == Presence::Yes && presence_of(without, spec) == Presence::No;
      if (adds) found = found || has_tensor(weight_name(spec, v.leading_dense ? h.n_layer - 1 : 0));
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
  TESSERA_RETURN_IF_ERROR(check_experts(v, h, arch_name));
  TESSERA_RETURN_IF_ERROR(check_heads(v, h, arch_name));
  if (v.rank_out == Presence::Yes && v.rank_head != Presence::Yes) {
    return Status::error("model: tensor 'cls.output.weight' projects the classification head 'cls.weight', which "
                         "the file lacks");
  }
  if (h.pooling_type == 4 && v.rank_head != Presence::Yes) {
    return Status::error("model: " + arch_name + ".pooling_type is 4 (rank), but the file has no classification "
                         "head (tensor 'cls.weight'" + (arch.variant.rank_head == Presence::No
                                                           ? ", which " + arch_name + " files do not have)"
                                                           : ")"));
  }
  if (v.rope() && h.rope_mode != v.rope_mode) {
    return Status::error("model: " + arch_name + " RoPE mode differs from its block variant's");
  }
  return v;
}

BlockVariant layer_variant(const BlockVariant& v, const HParams& h, int64_t il) {
  if (!v.leading_dense) return v;
  BlockVariant l = v;
  l.leading_dense = false;
  if (il < h.n_layer_dense_lead) {
    l.moe = Presence::No;
    l.shared_experts = SharedExperts::None;
  }
  return l;
}

bool is_decided(const BlockVariant& v) {
  for (Presence BlockVariant::*choice : kChoices) {
    if (v.*choice == Presence::Either) return false;
  }
  const bool one_position = v.positions != 0 && (v.positions & (v.positions - 1)) == 0;
  return one_position && v.residual != Residual::ByKey;
}

}  // namespace tessera
