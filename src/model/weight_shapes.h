// The tensor shapes the architectures' lists share, as ShapeFn functions of the
// hyper-parameters (ggml order: [row length, rows]). An architecture with a shape of its
// own writes it in its file.
#pragma once

#include "model/hparams.h"

namespace tessera::shapes {

/// [n_embd]: norm weights and biases, and biases of projections into the residual.
inline Shape embd(const HParams& h) { return {h.n_embd, 1, 1, 1}; }
/// [n_ff]: the up projection's bias.
inline Shape ff(const HParams& h) { return {h.n_ff, 1, 1, 1}; }
/// [n_embd, n_vocab]: token_embd and output.
inline Shape vocab(const HParams& h) { return {h.n_embd, h.n_vocab, 1, 1}; }
/// [n_embd, n_ctx_train]: learned absolute positions (position_embd).
inline Shape positions(const HParams& h) { return {h.n_embd, h.n_ctx_train, 1, 1}; }
/// [n_embd, n_embd_q] and [n_embd, n_embd_kv]: attn_q, attn_k, attn_v.
inline Shape q(const HParams& h) { return {h.n_embd, h.n_embd_q(), 1, 1}; }
inline Shape kv(const HParams& h) { return {h.n_embd, h.n_embd_kv(), 1, 1}; }
/// Their biases.
inline Shape q_bias(const HParams& h) { return {h.n_embd_q(), 1, 1, 1}; }
inline Shape kv_bias(const HParams& h) { return {h.n_embd_kv(), 1, 1, 1}; }
/// [n_embd, n_embd_q + 2 n_embd_kv]: a fused attn_qkv (rows q, then k, then v), and its bias.
inline Shape qkv(const HParams& h) { return {h.n_embd, h.n_embd_q() + 2 * h.n_embd_kv(), 1, 1}; }
inline Shape qkv_bias(const HParams& h) { return {h.n_embd_q() + 2 * h.n_embd_kv(), 1, 1, 1}; }
/// [n_embd_q, n_embd]: attn_output.
inline Shape attn_out(const HParams& h) { return {h.n_embd_q(), h.n_embd, 1, 1}; }
/// [n_embd, n_ff] and [n_ff, n_embd]: ffn_gate / ffn_up, and ffn_down.
inline Shape up(const HParams& h) { return {h.n_embd, h.n_ff, 1, 1}; }
inline Shape down(const HParams& h) { return {h.n_ff, h.n_embd, 1, 1}; }
/// Mixture of experts: the router [n_embd, n_expert]; the experts' gate / up
/// [n_embd, n_ff_exp, n_expert] and down [n_ff_exp, n_embd, n_expert]; the shared
/// experts' gate / up [n_embd, n_ff_shexp] and down, and their gate [n_embd, 1].
inline Shape router(const HParams& h) { return {h.n_embd, h.n_expert, 1, 1}; }
inline Shape up_exps(const HParams& h) { return {h.n_embd, h.n_ff_exp, h.n_expert, 1}; }
inline Shape down_exps(const HParams& h) { return {h.n_ff_exp, h.n_embd, h.n_expert, 1}; }
inline Shape up_shexp(const HParams& h) { return {h.n_embd, h.n_ff_shexp, 1, 1}; }
inline Shape down_shexp(const HParams& h) { return {h.n_ff_shexp, h.n_embd, 1, 1}; }
inline Shape shexp_gate(const HParams& h) { return {h.n_embd, 1, 1, 1}; }
/// A reranker's head (cls.weight [n_embd, n_embd], its bias embd), its score projection
/// cls.output.weight [n_embd, 1] and that one's bias [1].
inline Shape cls(const HParams& h) { return {h.n_embd, h.n_embd, 1, 1}; }
inline Shape score(const HParams& h) { return {h.n_embd, 1, 1, 1}; }
inline Shape one(const HParams&) { return {1, 1, 1, 1}; }

}  // namespace tessera::shapes
