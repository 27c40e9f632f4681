#include "common/split_test_util.h"

#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/scheduler.h"
#include "model/model_impl.h"
#include "runtime/forward_graph.h"
#include "runtime/kv_cache.h"
#include "tessera/batch.h"
#include "tessera/context.h"
#include "tessera/sampler.h"

namespace tessera::test {

std::unique_ptr<Model> load_placed(const std::string& path, const std::string& layers) {
  ModelParams params;
  params.layers = layers;
  Result<std::unique_ptr<Model>> m = Model::load(path, params);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  return m ? std::move(*m) : nullptr;
}

std::string split_at(int64_t k, int64_t n_layer) {
  auto range = [](int64_t a, int64_t b) { return a == b ? std::to_string(a) : std::to_string(a) + "-" + std::to_string(b); };
  return range(0, k - 1) + ":a," + range(k, n_layer - 1) + ":b";
}

std::vector<std::vector<float>> split_scenario(const Model& m, bool movable) {
  std::vector<std::vector<float>> rows;
  const int n_backends = int(m.impl().placement.backends.size());
  ContextParams p;
  p.n_ctx = 256;
  p.n_seq_max = 3;
  p.n_threads = n_backends;  // one thread per backend: the same kernels as one thread alone
  p.n_batch = 16;            // the 23-token prompt batch is two forward passes
  Result<std::unique_ptr<Context>> made = Context::create(m, p);
  EXPECT_TRUE(made.is_ok()) << made.status().message();
  if (!made) return rows;
  Context& ctx = **made;
  const int64_t nv = ctx.n_vocab();
  auto keep = [&](std::span<const float> l) { rows.emplace_back(l.begin(), l.end()); };
  auto tokens = [&](size_t n, int seed) {
    std::vector<TokenId> t;
    for (size_t i = 0; i < n; ++i) t.push_back(TokenId(1 + (seed * 7919 + int(i) * 104729) % (nv - 1)));
    return t;
  };
  Batch b;
  b.add_sequence(tokens(13, 1), 0, 0, true);
  b.add_sequence(tokens(10, 2), 0, 1, true);
  EXPECT_TRUE(ctx.decode(b).is_ok());
  for (int64_t i = 0; i < b.size(); ++i) keep(ctx.logits_at(i));
  // Sequence 2 shares sequence 0's first 6 positions, then goes its own way.
  EXPECT_TRUE(ctx.seq_cp(0, 2, 0, 6).is_ok());
  EXPECT_TRUE(ctx.seq_rm(1, 8, -1).is_ok());
  if (movable) {
    EXPECT_TRUE(ctx.seq_add(1, 4, -1, 3).is_ok());  // 4..7 become 7..10
  }
  TokenId next[3] = {argmax(ctx.logits_at(12)), argmax(ctx.logits_at(20)), 7};
  for (int step = 0; step < 5; ++step) {
    Batch s;
    for (SeqId q = 0; q < 3; ++q) s.add(next[q], ctx.seq_pos_max(q) + 1, q, true);
    EXPECT_TRUE(ctx.decode(s).is_ok());
    for (SeqId q = 0; q < 3; ++q) {
      keep(ctx.logits_at(q));
      next[q] = argmax(ctx.logits_at(q));
    }
    if (step == 2) {  // sequence 1's history moves into cells of its own
      EXPECT_TRUE(ctx.seq_rm(2, -1, -1).is_ok());
      EXPECT_TRUE(ctx.seq_copy(1, 2, -1, -1).is_ok());
      next[2] = next[1];
    }
  }
  return rows;
}

PlanStats plan_stats(const Model& m, int64_t n_tokens) {
  const detail::ModelImpl& impl = m.impl();
  std::vector<std::unique_ptr<CpuBackend>> owned;
  std::vector<Backend*> backends;
  for (size_t b = 0; b < impl.placement.backends.size(); ++b) {
    owned.push_back(std::make_unique<CpuBackend>(1));
    backends.push_back(owned.back().get());
  }
  std::vector<Backend*> layer_backends;
  for (int b : impl.placement.layer) layer_backends.push_back(backends[size_t(b)]);
  Result<std::unique_ptr<KvCache>> kv = KvCache::create(impl.hparams, 64, 1, DType::F16, DType::F16, layer_backends);
  EXPECT_TRUE(kv.is_ok());
  std::unordered_map<const Tensor*, int> at = impl.weight_backend;
  for (size_t il = 0; il < (*kv)->layers().size(); ++il) {
    at[(*kv)->layers()[il].k] = impl.placement.layer[il];
    at[(*kv)->layers()[il].v] = impl.placement.layer[il];
  }
  Scheduler sched(backends, [&](const Tensor* t) {
    auto it = at.find(t);
    return it == at.end() ? kAnyBackend : it->second;
  });
  ForwardGraphCache cache(impl, impl.hparams, sched, false, 64);
  ForwardShape shape;
  shape.n_tokens = n_tokens;
  shape.n_outputs = n_tokens;
  shape.groups = {AttnGroup{n_tokens, 0, 64}};
  ForwardGraph& fg = cache.get(shape, (*kv)->layers());
  PlanStats s;
  s.n_splits = int64_t(fg.plan->splits().size());
  s.n_copies = fg.plan->n_copies();
  s.bytes_copied = fg.plan->bytes_copied();
  for (const SchedSplit& split : fg.plan->splits()) {
    s.split_backends.push_back(split.backend);
    for (const SchedCopy& c : split.copies) {
      s.copied.push_back(std::string(op_name(c.src->op)) + " [" + std::to_string(c.src->ne[0]) + ", " +
                         std::to_string(c.src->ne[1]) + "]");
    }
  }
  return s;
}

}  // namespace tessera::test
