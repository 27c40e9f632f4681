// The graph allocator: peak memory well under the sum of the intermediates, no two
// tensors that are alive at the same time share bytes, and a graph computed in the
// planned buffer (first filled with poison) equals one computed with a buffer per tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "backend/cpu/cpu_backend.h"
#include "core/graph_alloc.h"
#include "core/ops.h"

namespace tessera {
namespace {

constexpr int64_t kEmbd = 48, kTokens = 7, kFF = 80, kLayers = 3;

/// A small transformer-shaped graph: residual stream, norms, matmuls, softmax.
struct Net {
  Graph g;
  std::vector<Tensor*> weights;
  Tensor* input = nullptr;
  Tensor* out = nullptr;

  Tensor* weight(int64_t k, int64_t m) {
    Tensor* w = g.arena().new_tensor(DType::F32, {k, m, 1, 1});
    weights.push_back(w);
    return w;
  }

  Net() {
    input = g.arena().new_tensor(DType::F32, {kEmbd, kTokens, 1, 1}, "input");
    input->flags |= kFlagInput;
    Tensor* x = input;
    for (int l = 0; l < kLayers; ++l) {
      Tensor* h = ops::mul(g, ops::rms_norm(g, x, 1e-5f), weight(kEmbd, 1));
      Tensor* q = ops::mul_mat(g, weight(kEmbd, kEmbd), h);
      Tensor* k = ops::mul_mat(g, weight(kEmbd, kEmbd), h);
      Tensor* att = ops::soft_max(g, ops::mul_mat(g, k, q), nullptr, 0.125f);  // [tok, tok]
      Tensor* vt = ops::cont(g, ops::transpose(g, ops::mul_mat(g, weight(kEmbd, kEmbd), h)));
      x = ops::add(g, x, ops::mul_mat(g, vt, att));
      Tensor* f = ops::mul(g, ops::silu(g, ops::mul_mat(g, weight(kEmbd, kFF), x)),
                           ops::mul_mat(g, weight(kEmbd, kFF), x));
      x = ops::add(g, x, ops::scale(g, ops::mul_mat(g, weight(kFF, kEmbd), f), 0.5f));
    }
    out = ops::rms_norm(g, x, 1e-5f);
    out->flags |= kFlagOutput;
    g.expand(out);
  }
};

void fill_weights(Net& net, std::vector<std::vector<float>>& storage) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.2f);
  for (Tensor* w : net.weights) {
    auto& v = storage.emplace_back(size_t(w->nelements()));
    for (float& f : v) f = dist(rng) + (w->ne[1] == 1 ? 1.0f : 0.0f);
    w->data = v.data();
  }
}

std::vector<float> input_values() {
  std::vector<float> v(size_t(kEmbd * kTokens));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(float(i) * 0.37f);
  return v;
}

TEST(GraphAlloc, PeakWellBelowSumAndNoLiveOverlap) {
  Net net;
  std::vector<std::vector<float>> storage;
  fill_weights(net, storage);
  const AllocPlan plan = plan_graph_memory(net.g, 64);
  ASSERT_GT(plan.size, 0u);
  EXPECT_LT(plan.size * 3, plan.sum_of_tensors) << plan.size << " of " << plan.sum_of_tensors;

  // Live interval of each planned tensor: from its step to its owner's last reader.
  const auto& nodes = net.g.nodes();
  std::map<const Tensor*, int> step;
  for (size_t i = 0; i < nodes.size(); ++i) step[nodes[i]] = int(i);
  std::map<const Tensor*, int> last_use;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (op_is_view(nodes[i]->op)) continue;
    for (Tensor* s : nodes[i]->src) {
      if (s) last_use[s->view_src ? s->view_src : s] = int(i);
    }
  }
  struct Live {
    const Tensor* t;
    size_t begin, end;
    int from, to;
  };
  std::vector<Live> lives;
  for (const auto& [t, offset] : plan.offsets) {
    const bool pinned = (t->flags & (kFlagInput | kFlagOutput)) != 0;
    const int from = step.count(t) ? step[t] : -1;
    const int to = pinned ? int(nodes.size()) : std::max(from, last_use[t]);
    lives.push_back({t, offset, offset + t->nbytes(), from, to});
  }
  int in_place = 0;
  for (size_t a = 0; a < lives.size(); ++a) {
    for (size_t b = a + 1; b < lives.size(); ++b) {
      const Live& x = lives[a];
      const Live& y = lives[b];
      const bool bytes_overlap = x.begin < y.end && y.begin < x.end;
      const bool time_overlap = x.from <= y.to && y.from <= x.to;
      if (!bytes_overlap || !time_overlap) continue;
      // The only allowed sharing: a node written in place over its dying first source.
      const bool y_over_x = y.t->src[0] == x.t && y.from == x.to && op_can_run_in_place(y.t);
      const bool x_over_y = x.t->src[0] == y.t && x.from == y.to && op_can_run_in_place(x.t);
      EXPECT_TRUE(y_over_x || x_over_y) << "live tensors share memory at steps " << x.from << ".."
                                        << x.to << " and " << y.from << ".." << y.to;
      in_place += (y_over_x || x_over_y);
    }
  }
  EXPECT_GT(in_place, 0) << "expected some in-place reuse";
}

TEST(GraphAlloc, PoisonedPlannedBufferComputesSameAsSeparateBuffers) {
  CpuBackend backend(2);
  const std::vector<float> in = input_values();

  // Reference: every tensor its own memory.
  Net ref;
  std::vector<std::vector<float>> ref_weights;
  fill_weights(ref, ref_weights);
  std::vector<std::vector<char>> separate;
  auto give_memory = [&](Tensor* t) {
    separate.emplace_back(t->nbytes() + 64);
    t->data = separate.back().data();
  };
  for (Tensor* leaf : ref.g.leafs()) {
    if (!leaf->data) give_memory(leaf);
  }
  for (Tensor* n : ref.g.nodes()) {
    if (n->view_src) {
      n->data = static_cast<char*>(n->view_src->data) + n->view_offset;
    } else {
      give_memory(n);
    }
  }
  std::memcpy(ref.input->data, in.data(), in.size() * 4);
  ASSERT_TRUE(backend.compute(ref.g).is_ok());

  // Planned: one buffer, poisoned with NaN bytes before each compute.
  Net planned;
  std::vector<std::vector<float>> planned_weights;
  fill_weights(planned, planned_weights);
  const AllocPlan plan = plan_graph_memory(planned.g, backend.alignment());
  Result<std::unique_ptr<Buffer>> buf = backend.alloc_buffer(plan.size);
  ASSERT_TRUE(buf.is_ok());
  apply_graph_memory(plan, planned.g, **buf);
  for (int round = 0; round < 2; ++round) {
    (*buf)->clear(0xff);  // 0xffffffff is a NaN: any read of unwritten memory shows
    backend.set_tensor(planned.input, in.data(), 0, in.size() * 4);
    ASSERT_TRUE(backend.compute(planned.g).is_ok());
    const float* a = static_cast<const float*>(ref.out->data);
    const float* b = static_cast<const float*>(planned.out->data);
    for (int64_t i = 0; i < ref.out->nelements(); ++i) {
      ASSERT_FALSE(std::isnan(b[i])) << i;
      ASSERT_EQ(a[i], b[i]) << "element " << i << ", round " << round;
    }
  }
}

}  // namespace
}  // namespace tessera
