#include "train/train_graph.h"

#include <cmath>
#include <vector>

#include "core/ops.h"

namespace tessera::train {
namespace {

Tensor* input(Graph& g, DType type, int64_t n, const char* name) {
  Tensor* t = g.arena().new_tensor(type, {n, 1, 1, 1}, name);
  t->flags |= kFlagInput;
  return t;
}

// The inputs that stay the same every step: positions 0..n_ctx-1 in each sequence,
// every token an output, each sequence one attention group over its own tokens with a
// causal mask (and, for a model whose layers differ in their window, the window's: fewer
// than n_swa positions back).
void set_fixed_inputs(const TrainGraph& tg, Backend& backend, int64_t n_swa) {
  const int64_t n = tg.n_tokens();
  std::vector<int32_t> pos(static_cast<size_t>(n)), ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    pos[size_t(i)] = int32_t(i % tg.n_ctx);
    ids[size_t(i)] = int32_t(i);
  }
  backend.set_tensor(tg.in.positions, pos.data(), 0, pos.size() * sizeof(int32_t));
  backend.set_tensor(tg.in.out_ids, ids.data(), 0, ids.size() * sizeof(int32_t));
  std::vector<float> mask(size_t(tg.in.mask_size()));
  const int64_t t = tg.n_ctx;
  for (int64_t b = 0; b < tg.batch; ++b) {
    for (int64_t q = 0; q < t; ++q) {
      for (int64_t c = 0; c < t; ++c) mask[size_t((b * t + q) * t + c)] = c <= q ? 0.0f : -INFINITY;
    }
  }
  backend.set_tensor(tg.in.kq_mask, mask.data(), 0, mask.size() * sizeof(float));
  if (!tg.in.kq_mask_swa) return;
  for (int64_t b = 0; b < tg.batch; ++b) {
    for (int64_t q = 0; q < t; ++q) {
      for (int64_t c = 0; c < t; ++c) mask[size_t((b * t + q) * t + c)] = c <= q && q - c < n_swa ? 0.0f : -INFINITY;
    }
  }
  backend.set_tensor(tg.in.kq_mask_swa, mask.data(), 0, mask.size() * sizeof(float));
}

}  // namespace

Result<std::unique_ptr<TrainGraph>> build_train_graph(const TrainModel& m, int64_t batch, int64_t n_ctx,
                                                      bool backward, Backend& backend) {
  if (batch <= 0 || n_ctx <= 0) return Status::error("train: batch and context must be positive");
  auto tg = std::make_unique<TrainGraph>();
  tg->batch = batch;
  tg->n_ctx = n_ctx;
  Graph& g = tg->graph;
  BatchInputs& in = tg->in;
  in.n_tokens = batch * n_ctx;
  in.n_outputs = in.n_tokens;
  for (int64_t b = 0; b < batch; ++b) in.groups.push_back({n_ctx, b * n_ctx, n_ctx});
  in.kv.assign(size_t(m.h.n_layer), KvLayer{});  // no cache: the batch attends over itself
  in.swa_mask = m.h.mixed_swa();
  in.n_ctx_per_seq = n_ctx;
  create_batch_inputs(g, in);
  tg->targets = input(g, DType::I32, in.n_tokens, "train_targets");
  Tensor* logits = m.arch->build(g, m.h, m.w, in);
  tg->loss = ops::cross_entropy(g, logits, tg->targets);
  tg->loss->flags |= kFlagOutput;
  g.expand(tg->loss);
  if (backward) {
    tg->seed = input(g, DType::F32, 1, "train_seed");
    Result<Gradients> grads = build_backward(g, tg->loss, tg->seed, m.params);
    if (!grads) return grads.status();
    tg->grads = std::move(*grads);
  }
  for (Tensor* t : {in.tokens, in.positions, in.kq_mask, in.out_ids}) g.expand(t);
  if (in.kq_mask_swa) g.expand(in.kq_mask_swa);
  tg->plan = plan_graph_memory(g, backend.alignment());
  Result<std::unique_ptr<Buffer>> buf = backend.alloc_buffer(tg->plan.size);
  if (!buf) return buf.status().with_context("train: the compute buffer");
  tg->buffer = std::move(*buf);
  apply_graph_memory(tg->plan, g, *tg->buffer);
  set_fixed_inputs(*tg, backend, m.h.n_swa);
  return tg;
}

void set_micro_batch(TrainGraph& tg, Backend& backend, const int32_t* tokens, const int32_t* targets,
                     float seed) {
  const size_t bytes = size_t(tg.n_tokens()) * sizeof(int32_t);
  backend.set_tensor(tg.in.tokens, tokens, 0, bytes);
  backend.set_tensor(tg.targets, targets, 0, bytes);
  if (tg.seed) backend.set_tensor(tg.seed, &seed, 0, sizeof(float));
}

}  // namespace tessera::train
