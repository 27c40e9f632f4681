// The mixture-of-experts feed-forward (blocks.h: moe_ffn_block), as the reference's
// llm_build_moe_ffn computes it: router logits, softmax or sigmoid, top-k, the chosen
// probabilities (normalised and scaled where the model says), each chosen expert's
// SwiGLU through mul_mat_id, the weighted sum, then the shared experts.
#include <cmath>

#include "core/check.h"
#include "core/ops.h"
#include "model/blocks.h"

namespace tessera {
namespace {

/// The routing of x [n_embd, n_tokens]: the chosen experts' ids I32 [n_used, n_tokens]
/// and their weights F32 [n_used, n_tokens].
struct Routing {
  Tensor* ids;
  Tensor* weights;
};

Routing route(Graph& g, const HParams& h, const LayerWeights& l, Tensor* x) {
  Tensor* logits = ops::mul_mat(g, loaded_weight(l.ffn_gate_inp), x);  // [n_expert, n_tokens]
  Tensor* probs = h.expert_gating == ExpertGating::Softmax ? ops::soft_max(g, logits, nullptr, 1.0f)
                                                            : ops::sigmoid(g, logits);
  Tensor* ids = ops::top_k(g, probs, int(h.n_expert_used));
  Tensor* weights = ops::take_along(g, probs, ids);  // the probabilities themselves
  if (h.expert_weights_norm) weights = ops::div(g, weights, ops::sum_rows(g, weights));
  if (h.expert_weights_scale > 0) weights = ops::scale(g, weights, h.expert_weights_scale);
  return {ids, weights};
}

/// down(silu(gate x) * up x) with the shared experts' matrices (adapters included).
Tensor* shared_experts(Graph& g, const LayerWeights& l, Tensor* x) {
  Tensor* gate = project(g, l, loaded_weight(l.ffn_gate_shexp), x);
  Tensor* up = project(g, l, loaded_weight(l.ffn_up_shexp), x);
  return project(g, l, loaded_weight(l.ffn_down_shexp), ops::mul(g, ops::silu(g, gate), up));
}

}  // namespace

Tensor* moe_ffn_block(Graph& g, const HParams& h, const BlockVariant& v, const LayerWeights& l, Tensor* x) {
  TESSERA_CHECK_MSG(v.moe == Presence::Yes && h.n_expert_used > 0, "moe_ffn_block needs a layer with experts");
  const int64_t n_embd = x->ne[0];
  const int64_t n_tokens = x->ne[1];
  const int64_t n_used = h.n_expert_used;
  const Routing r = route(g, h, l, x);
  // Every expert reads the token's one row (mul_mat_id broadcasts it over the ids).
  Tensor* xe = ops::reshape(g, x->is_contiguous() ? x : ops::cont(g, x), {n_embd, 1, n_tokens, 1});
  Tensor* gate = ops::mul_mat_id(g, loaded_weight(l.ffn_gate_exps), xe, r.ids);  // [n_ff_exp, n_used, n_tokens]
  Tensor* up = ops::mul_mat_id(g, loaded_weight(l.ffn_up_exps), xe, r.ids);
  Tensor* hidden = ops::mul(g, ops::silu(g, gate), up);
  Tensor* experts = ops::mul_mat_id(g, loaded_weight(l.ffn_down_exps), hidden, r.ids);  // [n_embd, n_used, n_tokens]
  experts = ops::mul(g, experts, ops::reshape(g, r.weights, {1, n_used, n_tokens, 1}));
  // The sum over the chosen experts, first to last.
  auto expert = [&](int64_t i) {
    return ops::view(g, experts, {n_embd, n_tokens, 1, 1},
                     {experts->nb[0], experts->nb[2], experts->nb[2] * size_t(n_tokens), experts->nb[2] * size_t(n_tokens)},
                     size_t(i) * experts->nb[1]);
  };
  Tensor* out = n_used == 1 ? ops::cont(g, expert(0)) : ops::add(g, expert(0), expert(1));
  for (int64_t i = 2; i < n_used; ++i) out = ops::add(g, out, expert(i));
  if (v.shared_experts == SharedExperts::None) return out;
  Tensor* shared = shared_experts(g, l, x);
  if (v.shared_experts == SharedExperts::Gated) {  // one scalar per token
    shared = ops::mul(g, shared, ops::sigmoid(g, ops::mul_mat(g, loaded_weight(l.ffn_gate_inp_shexp), x)));
  }
  return ops::add(g, out, shared);
}

Tensor* feed_forward(Graph& g, const HParams& h, const BlockVariant& v, const LayerWeights& l, Tensor* x) {
  return v.moe == Presence::Yes ? moe_ffn_block(g, h, v, l, x) : ffn_block(g, x, v, l);
}

}  // namespace tessera
