// What a block variant implies for the tensor list, and the checks that hold an
// architecture's declarations together:
//   variant_error   — combinations the blocks cannot build (static_assert in each arch file);
//   weights_error   — the tensor list against the variant: every tensor the variant uses is
//                     declared, required when the variant says Yes and optional when Either,
//                     and none it does not use (static_assert in each arch file);
//   decide_variant  — the variant one file chose: each Either settled from its tensors, the
//                     residual and positions from its keys (load, synth, training).
#pragma once

#include <array>
#include <functional>
#include <span>
#include <string>

#include "model/variant.h"
#include "model/weights.h"

namespace tessera {

struct Arch;

namespace variant_detail {

constexpr Presence both(Presence a, Presence b) {
  if (a == Presence::No || b == Presence::No) return Presence::No;
  return a == Presence::Yes && b == Presence::Yes ? Presence::Yes : Presence::Either;
}
constexpr Presence when(bool b) { return b ? Presence::Yes : Presence::No; }

using LW = LayerWeights;
using MW = ModelWeights;

/// Whether variant v uses the layer field f. Fields set at load (fused projections of
/// separate parts) and unknown fields: No.
/// Whether variant v has the dense feed-forward: always without experts, with them only
/// in the leading dense layers, or as the file chose between the two.
constexpr Presence dense_ffn(const BlockVariant& v) {
  if (v.moe == Presence::Yes) return when(v.leading_dense);
  return v.moe == Presence::Either ? Presence::Either : Presence::Yes;
}

/// Whether variant v uses a mixture-of-experts field (No for other fields).
constexpr Presence moe_presence(const BlockVariant& v, Tensor* LW::*f) {
  if (f == &LW::ffn_gate_inp || f == &LW::ffn_gate_exps || f == &LW::ffn_up_exps || f == &LW::ffn_down_exps) {
    return v.moe;
  }
  if (f == &LW::ffn_gate_shexp || f == &LW::ffn_up_shexp || f == &LW::ffn_down_shexp) {
    return both(v.moe, when(v.shared_experts != SharedExperts::None));
  }
  if (f == &LW::ffn_gate_inp_shexp) return both(v.moe, when(v.shared_experts == SharedExperts::Gated));
  return Presence::No;
}

/// Whether variant v uses the dense feed-forward field f, ignoring experts (No for other
/// fields).
constexpr Presence ffn_presence(const BlockVariant& v, Tensor* LW::*f) {
  const bool gated = v.ffn != FfnKind::Plain;
  if (f == &LW::ffn_down) return Presence::Yes;
  if (f == &LW::ffn_gate) return when(v.ffn == FfnKind::Gated);
  if (f == &LW::ffn_up) return when(v.ffn != FfnKind::GatedFused);
  if (f == &LW::ffn_gate_up) return when(v.ffn == FfnKind::GatedFused);
  if (f == &LW::ffn_up_b) return gated ? Presence::No : v.up_bias;
  if (f == &LW::ffn_down_b) return v.down_bias;
  return Presence::No;
}

/// Whether f holds a tensor of multi-head latent attention's own (attn_q aside).
constexpr bool is_mla_field(Tensor* LW::*f) {
  return f == &LW::wq_a || f == &LW::attn_q_a_norm || f == &LW::wq_b || f == &LW::wkv_a_mqa ||
         f == &LW::attn_kv_a_norm || f == &LW::wkv_b;
}

/// Whether variant v uses a field of multi-head latent attention, or attn_q beside it:
/// attn_q unless q goes through the low-rank attn_q_a / attn_q_b (No for other fields).
constexpr Presence mla_presence(const BlockVariant& v, Tensor* LW::*f) {
  if (!v.mla) return Presence::No;
  if (f == &LW::wkv_a_mqa || f == &LW::attn_kv_a_norm || f == &LW::wkv_b) return Presence::Yes;
  if (f == &LW::wq_a || f == &LW::attn_q_a_norm || f == &LW::wq_b) return v.q_lora;
  if (f == &LW::wq) return v.q_lora == Presence::Either ? Presence::Either : when(v.q_lora == Presence::No);
  return Presence::No;
}

constexpr Presence layer_presence(const BlockVariant& v, Tensor* LW::*f) {
  const bool separate = v.qkv == QkvLayout::Separate;
  if (f == &LW::ffn_down || f == &LW::ffn_gate || f == &LW::ffn_up || f == &LW::ffn_gate_up ||
      f == &LW::ffn_up_b || f == &LW::ffn_down_b) {
    return both(ffn_presence(v, f), dense_ffn(v));
  }
  if (const Presence m = moe_presence(v, f); m != Presence::No) return m;
  if (f == &LW::wo) return Presence::Yes;
  if (f == &LW::attn_norm) return when(v.pre_norm && !v.post_norm);
  if (f == &LW::attn_norm_b) return both(when(v.pre_norm && !v.post_norm), v.norm_bias);
  if (f == &LW::post_attn_norm || f == &LW::post_ffn_norm) return when(v.post_norms);
  if (f == &LW::attn_out_norm || f == &LW::layer_out_norm) return when(v.post_norm);
  if (f == &LW::attn_out_norm_b || f == &LW::layer_out_norm_b) return both(when(v.post_norm), v.norm_bias);
  if (f == &LW::attn_norm_2) return v.second_norm;
  if (f == &LW::attn_norm_2_b) return both(v.second_norm, v.norm_bias);
  if (is_mla_field(f) || (v.mla && f == &LW::wq)) return mla_presence(v, f);
  if (f == &LW::wq) return when(separate);
  if (f == &LW::wk || f == &LW::wv) return when(separate && !v.mla);
  if (f == &LW::bq || f == &LW::bk || f == &LW::bv) return both(when(separate && !v.mla), v.qkv_bias);
  if (f == &LW::wqkv) return when(!separate);
  if (f == &LW::bqkv) return both(when(!separate), v.qkv_bias);
  if (f == &LW::attn_q_norm || f == &LW::attn_k_norm) return when(v.qk_norm || v.qk_norm_whole);
  if (f == &LW::attn_q_norm_b || f == &LW::attn_k_norm_b) return both(when(v.qk_norm || v.qk_norm_whole), v.norm_bias);
  if (f == &LW::bo) return v.out_bias;
  if (f == &LW::ffn_norm) return when(v.ffn_norm && v.pre_norm);
  if (f == &LW::ffn_norm_b) return both(when(v.ffn_norm && v.pre_norm), v.norm_bias);
  return Presence::No;
}

/// Whether variant v uses the model field f.
constexpr Presence model_presence(const BlockVariant& v, Tensor* MW::*f) {
  if (f == &MW::token_embd) return Presence::Yes;
  if (f == &MW::output_norm) return when(v.logits);
  if (f == &MW::token_types) return when(v.token_types);
  if (f == &MW::token_embd_norm) return when(v.embd_norm);
  if (f == &MW::token_embd_norm_b) return both(when(v.embd_norm), v.norm_bias);
  if (f == &MW::position_embd) return when(v.positions == kLearnedPositions);
  if (f == &MW::rope_freqs) return v.rope_freqs;
  if (f == &MW::rope_factors_long || f == &MW::rope_factors_short) return v.long_rope;
  if (f == &MW::output_norm_b) return both(when(v.logits), v.norm_bias);
  if (f == &MW::output) return v.logits ? v.output : Presence::No;
  if (f == &MW::cls || f == &MW::cls_b) return v.rank_head;
  if (f == &MW::cls_out || f == &MW::cls_out_b) return v.rank_out;
  return Presence::No;
}

/// Every field a tensor list can fill, with the name a list gives it (for messages).
struct NamedLayerField {
  Tensor* LW::*field;
  const char* name;
};
struct NamedModelField {
  Tensor* MW::*field;
  const char* name;
};
inline constexpr NamedLayerField kLayerFields[] = {
    {&LW::attn_norm, "attn_norm.weight"},     {&LW::attn_norm_b, "attn_norm.bias"},
    {&LW::attn_norm_2, "attn_norm_2.weight"}, {&LW::attn_norm_2_b, "attn_norm_2.bias"},
    {&LW::wq, "attn_q.weight"},               {&LW::wk, "attn_k.weight"},
    {&LW::wv, "attn_v.weight"},               {&LW::bq, "attn_q.bias"},
    {&LW::bk, "attn_k.bias"},                 {&LW::bv, "attn_v.bias"},
    {&LW::wqkv, "attn_qkv.weight"},           {&LW::bqkv, "attn_qkv.bias"},
    {&LW::attn_q_norm, "attn_q_norm.weight"}, {&LW::attn_q_norm_b, "attn_q_norm.bias"},
    {&LW::attn_k_norm, "attn_k_norm.weight"}, {&LW::attn_k_norm_b, "attn_k_norm.bias"},
    {&LW::wo, "attn_output.weight"},          {&LW::bo, "attn_output.bias"},
    {&LW::post_attn_norm, "post_attention_norm.weight"}, {&LW::post_ffn_norm, "post_ffw_norm.weight"},
    {&LW::ffn_norm, "ffn_norm.weight"},       {&LW::ffn_norm_b, "ffn_norm.bias"},
    {&LW::ffn_gate, "ffn_gate.weight"},       {&LW::ffn_up, "ffn_up.weight"},
    {&LW::ffn_gate_up, "ffn_up.weight (gate and up)"},
    {&LW::ffn_up_b, "ffn_up.bias"},           {&LW::ffn_down, "ffn_down.weight"},
    {&LW::ffn_down_b, "ffn_down.bias"},           {&LW::ffn_gate_inp, "ffn_gate_inp.weight"},
    {&LW::ffn_gate_exps, "ffn_gate_exps.weight"}, {&LW::ffn_up_exps, "ffn_up_exps.weight"},
    {&LW::ffn_down_exps, "ffn_down_exps.weight"}, {&LW::ffn_gate_inp_shexp, "ffn_gate_inp_shexp.weight"},
    {&LW::ffn_gate_shexp, "ffn_gate_shexp.weight"}, {&LW::ffn_up_shexp, "ffn_up_shexp.weight"},
    {&LW::ffn_down_shexp, "ffn_down_shexp.weight"},
    {&LW::wq_a, "attn_q_a.weight"}, {&LW::attn_q_a_norm, "attn_q_a_norm.weight"}, {&LW::wq_b, "attn_q_b.weight"},
    {&LW::wkv_a_mqa, "attn_kv_a_mqa.weight"}, {&LW::attn_kv_a_norm, "attn_kv_a_norm.weight"},
    {&LW::wkv_b, "attn_kv_b.weight"},
    {&LW::attn_out_norm, "attn_output_norm.weight"}, {&LW::attn_out_norm_b, "attn_output_norm.bias"},
    {&LW::layer_out_norm, "layer_output_norm.weight"}, {&LW::layer_out_norm_b, "layer_output_norm.bias"},
};
inline constexpr NamedModelField kModelFields[] = {
    {&MW::token_embd, "token_embd.weight"},        {&MW::token_embd_norm, "token_embd_norm.weight"},
    {&MW::token_embd_norm_b, "token_embd_norm.bias"}, {&MW::position_embd, "position_embd.weight"},
    {&MW::rope_freqs, "rope_freqs.weight"},        {&MW::rope_factors_long, "rope_factors_long.weight"},
    {&MW::rope_factors_short, "rope_factors_short.weight"}, {&MW::output_norm, "output_norm.weight"},
    {&MW::output_norm_b, "output_norm.bias"},      {&MW::output, "output.weight"},
    {&MW::token_types, "token_types.weight"},      {&MW::cls, "cls.weight"},
    {&MW::cls_b, "cls.bias"},                      {&MW::cls_out, "cls.output.weight"},
    {&MW::cls_out_b, "cls.output.bias"},
};

}  // namespace variant_detail

/// Whether variant v uses the tensor a list entry declares.
constexpr Presence presence_of(const BlockVariant& v, const WeightSpec& spec) {
  return spec.layer_field ? variant_detail::layer_presence(v, spec.layer_field)
                          : variant_detail::model_presence(v, spec.model_field);
}

/// Why the blocks cannot build v, or null when they can.
constexpr const char* variant_error(const BlockVariant& v) {
  if (v.ffn != FfnKind::Plain && v.up_bias != Presence::No) {
    return "a gated feed-forward has no place for an ffn_up bias";
  }
  if (v.second_norm != Presence::No && (v.ffn_norm || v.residual != Residual::Parallel)) {
    return "a second attention norm belongs to a parallel block without ffn_norm";
  }
  if (v.post_norm && (v.ffn_norm || v.residual != Residual::Sequential || v.second_norm != Presence::No)) {
    return "post-norm layers are sequential, with attn_output_norm and layer_output_norm only";
  }
  if (!v.logits && v.output != Presence::No) {
    return "an encoder (no logits) has no output matrix";
  }
  if (!v.ffn_norm && v.pre_norm && !v.post_norm && v.residual != Residual::Parallel) {
    return "a feed-forward without its own norm must run in parallel with the attention";
  }
  if (!v.pre_norm && v.second_norm != Presence::No) {
    return "a block without pre-norms has no second attention norm";
  }
  if (v.qk_norm != (v.qkv == QkvLayout::FusedPerHead)) {
    return "q/k norms go with the per-head fused qkv layout (an architecture's own build)";
  }
  if (v.qk_norm_whole && v.qkv == QkvLayout::FusedPerHead) {
    return "whole-vector q/k norms and per-head ones exclude each other";
  }
  if (v.long_rope != Presence::No && !(v.positions & kRopePositions)) {
    return "LongRoPE factors need RoPE positions";
  }
  if (v.positions == 0 || (v.positions & ~(kRopePositions | kAlibiPositions | kLearnedPositions)) != 0) {
    return "the positions must be a non-empty set of Rope, Alibi and Learned";
  }
  if ((v.positions & kLearnedPositions) && v.positions != kLearnedPositions) {
    return "learned positions (position_embd in every file) exclude the other kinds";
  }
  if (v.rope_freqs != Presence::No && !(v.positions & kRopePositions)) {
    return "rope_freqs needs RoPE positions";
  }
  if (v.moe == Presence::No && (v.shared_experts != SharedExperts::None || v.leading_dense)) {
    return "shared experts and leading dense layers belong to a mixture-of-experts feed-forward";
  }
  if (v.moe != Presence::No && (v.ffn != FfnKind::Gated || v.act != Activation::Silu)) {
    return "the experts are SwiGLU: a dense alternative must be gated SiLU too";
  }
  if (v.rank_head != Presence::No && v.logits) {
    return "a reranker's classification head belongs to an encoder";
  }
  if (v.rank_out != Presence::No && v.rank_head == Presence::No) {
    return "cls.output projects the output of cls: it needs the head";
  }
  if (v.leading_dense && v.moe != Presence::Yes) {
    return "leading dense layers need experts in every file";
  }
  if (v.mla && (v.qkv != QkvLayout::Separate || v.qkv_bias != Presence::No || v.qk_norm || v.qk_norm_whole ||
                v.positions != kRopePositions || !v.pre_norm || v.post_norm)) {
    return "multi-head latent attention is a pre-norm attention with RoPE and no q/k/v biases or q/k norms";
  }
  if (v.q_lora != Presence::No && !v.mla) {
    return "the low-rank q (attn_q_a, attn_q_b) belongs to multi-head latent attention";
  }
  return nullptr;
}

/// The first disagreement between the tensor list `specs` and variant v (a tensor's
/// name), or null: every field v uses is declared once, required when v says Yes and
/// optional when Either, and nothing v does not use is declared.
constexpr const char* weights_error(std::span<const WeightSpec> specs, const BlockVariant& v) {
  using namespace variant_detail;
  for (const WeightSpec& s : specs) {
    const Presence p = presence_of(v, s);
    if (p == Presence::No || s.required != (p == Presence::Yes)) return s.name;
  }
  for (const NamedLayerField& f : kLayerFields) {
    int n = 0;
    for (const WeightSpec& s : specs) n += s.layer_field == f.field;
    if (n != (layer_presence(v, f.field) == Presence::No ? 0 : 1)) return f.name;
  }
  for (const NamedModelField& f : kModelFields) {
    int n = 0;
    for (const WeightSpec& s : specs) n += s.model_field == f.field;
    if (n != (model_presence(v, f.field) == Presence::No ? 0 : 1)) return f.name;
  }
  return nullptr;
}

/// The variant a file of `arch` chose: each Either of arch.variant settled by whether the
/// file has its tensors (those of layer 0 for per-layer parts), the residual from
/// h.parallel_residual where the variant leaves it to the key, the positions those
/// configure set. Errors: keys or positions the variant does not allow.
Result<BlockVariant> decide_variant(const Arch& arch, const HParams& h,
                                    const std::function<bool(const std::string&)>& has_tensor);

/// Whether v is decided: no Either, one position kind, no residual left to a key.
bool is_decided(const BlockVariant& v);

/// The variant of layer il of a model with decided variant v: v, except that a
/// mixture-of-experts model with leading dense layers has the dense feed-forward (and no
/// experts) in layers il < h.n_layer_dense_lead and the experts (and no dense one) after.
BlockVariant layer_variant(const BlockVariant& v, const HParams& h, int64_t il);

}  // namespace tessera
