#include "runtime/matmul_observer.h"

#include <cstring>
#include <unordered_map>

namespace tessera {
namespace {

Tensor* owner_of(Tensor* t) { return t->view_src ? t->view_src : t; }

/// The names a product by `w` is reported under: its parts' for a tensor fused at load.
std::unordered_map<const Tensor*, std::vector<std::string>> fused_parts(const ModelWeights& w) {
  std::unordered_map<const Tensor*, std::vector<std::string>> parts;
  for (const LayerWeights& l : w.layers) {
    // wq is set only when the file has separate q/k/v: then wqkv was made by fusing.
    if (l.wqkv != nullptr && l.wq != nullptr) parts[l.wqkv] = {l.wq->name, l.wk->name, l.wv->name};
    if (l.ffn_gate_up != nullptr && l.ffn_gate != nullptr) {
      parts[l.ffn_gate_up] = {l.ffn_gate->name, l.ffn_up->name};
    }
  }
  return parts;
}

/// The F32 (or I32) elements of `t`, dense in its logical order, read from the memory of
/// its owner (the tensor a view points into), which the pass kept.
template <typename T>
Status read_dense(Scheduler& sched, const SchedGraph& plan, const Tensor* t, std::vector<T>& out) {
  Tensor* owner = owner_of(const_cast<Tensor*>(t));
  std::vector<uint8_t> bytes(owner->nbytes());
  TESSERA_RETURN_IF_ERROR(sched.get_output_async(plan, owner, bytes.data(), bytes.size()));
  TESSERA_RETURN_IF_ERROR(sched.synchronize());
  const size_t base = t->view_src ? t->view_offset : 0;
  out.resize(size_t(t->nelements()));
  size_t k = 0;
  for (int64_t i3 = 0; i3 < t->ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < t->ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < t->ne[1]; ++i1) {
        const size_t row = base + size_t(i1) * t->nb[1] + size_t(i2) * t->nb[2] + size_t(i3) * t->nb[3];
        for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
          std::memcpy(&out[k++], bytes.data() + row + size_t(i0) * t->nb[0], sizeof(T));
        }
      }
    }
  }
  return Status::ok();
}

// MulMatId: input [n_in, n_used or 1 (one row broadcast to every expert), n_tokens], ids
// [n_used, n_tokens]: row (i, t) went to expert ids[i, t].
Status report_experts(Scheduler& sched, const SchedGraph& plan, const ObservedMatmul& o,
                      MatmulObserver fn, void* user) {
  const Tensor* x = o.node->src[1];
  const Tensor* ids = o.node->src[2];
  std::vector<float> in;
  std::vector<int32_t> id;
  TESSERA_RETURN_IF_ERROR(read_dense(sched, plan, x, in));
  TESSERA_RETURN_IF_ERROR(read_dense(sched, plan, ids, id));
  const int64_t n_in = x->ne[0], n_used = ids->ne[0], n_tokens = ids->ne[1];
  std::vector<float> rows(size_t(n_used * n_tokens * n_in));
  std::vector<int32_t> expert(size_t(n_used * n_tokens));
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t i = 0; i < n_used; ++i) {
      const int64_t r = t * n_used + i;
      const float* src = in.data() + size_t((t * x->ne[1] + i % x->ne[1]) * n_in);
      std::memcpy(rows.data() + size_t(r * n_in), src, size_t(n_in) * sizeof(float));
      expert[size_t(r)] = id[size_t(t * n_used + i)];
    }
  }
  MatmulInput m;
  m.n_in = n_in;
  m.n_rows = n_used * n_tokens;
  m.rows = rows.data();
  m.n_expert = o.node->src[0]->ne[2];
  m.expert = expert.data();
  for (const std::string& name : o.names) {
    m.weight = name;
    fn(m, user);
  }
  return Status::ok();
}

}  // namespace

std::vector<ObservedMatmul> observe_weight_matmuls(const Graph& graph, const ModelWeights& w) {
  const auto parts = fused_parts(w);
  std::vector<ObservedMatmul> out;
  for (Tensor* node : graph.nodes()) {
    if (node->op != Op::MulMat && node->op != Op::MulMatId) continue;
    const Tensor* weight = node->src[0];
    Tensor* x = node->src[1];
    if (!(weight->flags & kFlagWeight) || weight->view_src != nullptr || x->type != DType::F32) continue;
    ObservedMatmul o{node, {}};
    auto fused = parts.find(weight);
    o.names = fused != parts.end() ? fused->second : std::vector<std::string>{weight->name};
    owner_of(x)->flags |= kFlagOutput;
    if (node->op == Op::MulMatId) owner_of(node->src[2])->flags |= kFlagOutput;
    out.push_back(std::move(o));
  }
  return out;
}

Status report_matmul_inputs(Scheduler& sched, const SchedGraph& plan,
                            const std::vector<ObservedMatmul>& observed, MatmulObserver fn, void* user) {
  std::vector<float> rows;
  for (const ObservedMatmul& o : observed) {
    if (o.node->op == Op::MulMatId) {
      TESSERA_RETURN_IF_ERROR(report_experts(sched, plan, o, fn, user));
      continue;
    }
    const Tensor* x = o.node->src[1];
    TESSERA_RETURN_IF_ERROR(read_dense(sched, plan, x, rows));
    MatmulInput m;
    m.n_in = x->ne[0];
    m.n_rows = x->nelements() / x->ne[0];
    m.rows = rows.data();
    for (const std::string& name : o.names) {
      m.weight = name;
      fn(m, user);
    }
  }
  return Status::ok();
}

}  // namespace tessera
