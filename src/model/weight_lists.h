// Tensor lists that several architectures share, and join_weights to put an
// architecture's list together from its own entries and these (at compile time).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

#include "model/weight_shapes.h"
#include "model/weights.h"

namespace tessera {

/// The lists `lists` one after the other, as one array.
template <size_t... N>
constexpr std::array<WeightSpec, (N + ...)> join_weights(const std::array<WeightSpec, N>&... lists) {
  std::array<WeightSpec, (N + ...)> out{};
  size_t at = 0;
  ((std::copy(lists.begin(), lists.end(), out.begin() + at), at += N), ...);
  return out;
}

/// The entries of `list`, each optional (the tensors of a part a file may have or not:
/// Presence::Either).
template <size_t N>
constexpr std::array<WeightSpec, N> optional_weights(std::array<WeightSpec, N> list) {
  for (WeightSpec& s : list) s.required = false;
  return list;
}

/// The attention half of a LLaMA-family layer (with the FFN's norm): RMSNorm weights,
/// separate q, k and v.
inline constexpr std::array kLlamaAttnLayer = {
    per_layer("blk.{}.attn_norm.weight", &LayerWeights::attn_norm, shapes::embd),
    per_layer("blk.{}.attn_q.weight", &LayerWeights::wq, shapes::q),
    per_layer("blk.{}.attn_k.weight", &LayerWeights::wk, shapes::kv),
    per_layer("blk.{}.attn_v.weight", &LayerWeights::wv, shapes::kv),
    per_layer("blk.{}.attn_output.weight", &LayerWeights::wo, shapes::attn_out),
    per_layer("blk.{}.ffn_norm.weight", &LayerWeights::ffn_norm, shapes::embd),
};

/// A gated (SwiGLU / GeGLU) dense feed-forward.
inline constexpr std::array kGatedFfnLayer = {
    per_layer("blk.{}.ffn_gate.weight", &LayerWeights::ffn_gate, shapes::up),
    per_layer("blk.{}.ffn_up.weight", &LayerWeights::ffn_up, shapes::up),
    per_layer("blk.{}.ffn_down.weight", &LayerWeights::ffn_down, shapes::down),
};

/// A LLaMA-family layer: RMSNorm weights, separate q, k and v, a gated feed-forward.
inline constexpr auto kLlamaLayer = join_weights(kLlamaAttnLayer, kGatedFfnLayer);

/// A mixture-of-experts feed-forward: the router and the stacked experts.
inline constexpr std::array kMoeLayer = {
    per_layer("blk.{}.ffn_gate_inp.weight", &LayerWeights::ffn_gate_inp, shapes::router),
    per_layer("blk.{}.ffn_gate_exps.weight", &LayerWeights::ffn_gate_exps, shapes::up_exps),
    per_layer("blk.{}.ffn_up_exps.weight", &LayerWeights::ffn_up_exps, shapes::up_exps),
    per_layer("blk.{}.ffn_down_exps.weight", &LayerWeights::ffn_down_exps, shapes::down_exps),
};

/// The shared experts (SharedExperts::Ungated), and their gate (Gated adds it).
inline constexpr std::array kSharedExpertsLayer = {
    per_layer("blk.{}.ffn_gate_shexp.weight", &LayerWeights::ffn_gate_shexp, shapes::up_shexp),
    per_layer("blk.{}.ffn_up_shexp.weight", &LayerWeights::ffn_up_shexp, shapes::up_shexp),
    per_layer("blk.{}.ffn_down_shexp.weight", &LayerWeights::ffn_down_shexp, shapes::down_shexp),
};
inline constexpr std::array kSharedExpertsGate = {
    per_layer("blk.{}.ffn_gate_inp_shexp.weight", &LayerWeights::ffn_gate_inp_shexp, shapes::shexp_gate, true,
              /*matrix=*/true),
};

/// A GPT-2-family layer: LayerNorms with biases, a fused qkv with bias, and biased output
/// and feed-forward projections (no gate).
inline constexpr std::array kGptLayer = {
    per_layer("blk.{}.attn_norm.weight", &LayerWeights::attn_norm, shapes::embd),
    per_layer("blk.{}.attn_norm.bias", &LayerWeights::attn_norm_b, shapes::embd),
    per_layer("blk.{}.attn_qkv.weight", &LayerWeights::wqkv, shapes::qkv),
    per_layer("blk.{}.attn_qkv.bias", &LayerWeights::bqkv, shapes::qkv_bias),
    per_layer("blk.{}.attn_output.weight", &LayerWeights::wo, shapes::attn_out),
    per_layer("blk.{}.attn_output.bias", &LayerWeights::bo, shapes::embd),
    per_layer("blk.{}.ffn_norm.weight", &LayerWeights::ffn_norm, shapes::embd),
    per_layer("blk.{}.ffn_norm.bias", &LayerWeights::ffn_norm_b, shapes::embd),
    per_layer("blk.{}.ffn_up.weight", &LayerWeights::ffn_up, shapes::up),
    per_layer("blk.{}.ffn_up.bias", &LayerWeights::ffn_up_b, shapes::ff),
    per_layer("blk.{}.ffn_down.weight", &LayerWeights::ffn_down, shapes::down),
    per_layer("blk.{}.ffn_down.bias", &LayerWeights::ffn_down_b, shapes::embd),
};

}  // namespace tessera
