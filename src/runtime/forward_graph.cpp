#include "runtime/forward_graph.h"

#include <algorithm>

#include "core/check.h"
#include "model/lora.h"

namespace tessera {

std::unique_ptr<ForwardGraph> ForwardGraphCache::build(const ForwardShape& shape,
                                                       const std::vector<KvLayer>& kv) {
  auto fg = std::make_unique<ForwardGraph>();
  fg->shape = shape;
  fg->in.n_tokens = shape.n_tokens;
  fg->in.n_outputs = shape.n_outputs;
  fg->in.groups = shape.groups;
  fg->in.kv = kv;
  fg->in.swa_mask = h_.mixed_swa();
  fg->in.n_ctx_per_seq = n_ctx_per_seq_;
  create_batch_inputs(fg->graph, fg->in);
  if (shape.adapter_scales.empty()) {
    fg->logits = m_.arch->build(fg->graph, h_, m_.weights, fg->in);
  } else {
    const ModelWeights scaled = with_adapter_scales(m_.weights, shape.adapter_scales);
    fg->logits = m_.arch->build(fg->graph, h_, scaled, fg->in);
  }
  if (!m_.weights.variant.logits) {  // an encoder: the build returns the hidden states
    TESSERA_CHECK_MSG(embeddings_, "an encoder's context computes embeddings");
    fg->embeddings = fg->logits;
    fg->logits = nullptr;
    fg->embeddings->flags |= kFlagOutput;
    fg->graph.expand(fg->embeddings);
  } else if (embeddings_) {
    // Every architecture ends with logits = mul_mat(output projection, normed hidden
    // state), perhaps scaled and capped: that second operand is the embedding of the
    // output tokens.
    const Tensor* product = logits_product(fg->logits);
    Tensor* hidden = product->src[1];
    TESSERA_CHECK_MSG(product->op == Op::MulMat && hidden != nullptr &&
                          hidden->ne[0] == h_.n_embd && hidden->ne[1] == shape.n_outputs,
                      "the architecture's logits are not a projection of the final hidden state");
    hidden->flags |= kFlagOutput;
    fg->embeddings = hidden;
  }
  if (fg->logits) {
    fg->logits->flags |= kFlagOutput;
    fg->graph.expand(fg->logits);
  }
  // Every input gets memory, read or not: the runtime sets them all (ALiBi models never
  // read the positions).
  for (Tensor* t : {fg->in.tokens, fg->in.positions, fg->in.kv_slots, fg->in.kq_mask, fg->in.out_ids}) {
    fg->graph.expand(t);
  }
  if (fg->in.kq_mask_swa) fg->graph.expand(fg->in.kq_mask_swa);
  if (observe_) fg->observed = observe_weight_matmuls(fg->graph, m_.weights);
  fg->plan = sched_.plan(fg->graph);
  ++n_built_;
  return fg;
}

ForwardGraph& ForwardGraphCache::get(const ForwardShape& shape, const std::vector<KvLayer>& kv) {
  auto it = std::find_if(graphs_.begin(), graphs_.end(),
                         [&](const std::unique_ptr<ForwardGraph>& g) { return g->shape == shape; });
  std::unique_ptr<ForwardGraph> fg;
  if (it != graphs_.end()) {
    fg = std::move(*it);
    graphs_.erase(it);
  } else {
    fg = build(shape, kv);
    if (graphs_.size() >= capacity_) graphs_.pop_back();
  }
  graphs_.insert(graphs_.begin(), std::move(fg));
  sched_.place(*graphs_.front()->plan);
  return *graphs_.front();
}

}  // namespace tessera
