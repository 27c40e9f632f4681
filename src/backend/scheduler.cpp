#include "backend/scheduler.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <unordered_set>

#include "core/check.h"
#include "tessera/log.h"

namespace tessera {
namespace {

Tensor* owner_of(Tensor* t) { return t->view_src ? t->view_src : t; }
bool is_leaf(const Tensor* t) { return t->op == Op::None; }

/// Nodes of a graph in order, with their positions and consumers.
struct NodeIndex {
  std::unordered_map<const Tensor*, size_t> at;
  std::unordered_map<const Tensor*, std::vector<Tensor*>> consumers;  // in node order

  explicit NodeIndex(const Graph& g) {
    const std::vector<Tensor*>& nodes = g.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      at[nodes[i]] = i;
      for (Tensor* s : nodes[i]->src) {
        if (s) consumers[s].push_back(nodes[i]);
      }
    }
  }
  const std::vector<Tensor*>& of(const Tensor* t) const {
    static const std::vector<Tensor*> none;
    auto it = consumers.find(t);
    return it == consumers.end() ? none : it->second;
  }
};

/// A tensor for people: its name, or its op and shape.
std::string label(const Tensor* t) {
  if (!t->name.empty()) return t->name;
  std::string s = std::string(op_name(t->op)) + " [";
  for (int d = 0; d < kMaxDims; ++d) {
    if (d > 0 && t->ne[d] == 1 && (d + 1 == kMaxDims || t->ne[d + 1] == 1)) break;
    s += (d ? ", " : "") + std::to_string(t->ne[d]);
  }
  return s + "]";
}

bool debug_enabled() {
  const char* v = std::getenv("TESSERA_SCHED_DEBUG");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

}  // namespace

int SchedGraph::backend_of(const Tensor* node) const {
  auto it = backend_of_.find(node);
  TESSERA_CHECK_MSG(it != backend_of_.end(), "not a node of this graph");
  return it->second;
}

int64_t SchedGraph::n_copies() const {
  int64_t n = 0;
  for (const SchedSplit& s : splits_) n += int64_t(s.copies.size());
  return n;
}

size_t SchedGraph::bytes_copied() const {
  size_t n = 0;
  for (const SchedSplit& s : splits_) {
    for (const SchedCopy& c : s.copies) n += c.dst->nbytes();
  }
  return n;
}

std::string SchedGraph::describe(const std::vector<Backend*>& backends) const {
  std::string out;
  for (size_t i = 0; i < splits_.size(); ++i) {
    const SchedSplit& s = splits_[i];
    const std::vector<Tensor*>& nodes = s.graph->nodes();
    out += "split " + std::to_string(i) + " on " + std::string(backends[size_t(s.backend)]->name()) + ": " +
           std::to_string(nodes.size()) + " nodes";
    if (!nodes.empty()) out += " (" + label(nodes.front()) + " .. " + label(nodes.back()) + ")";
    out += "\n";
    for (const SchedCopy& c : s.copies) {
      out += "  copy " + label(c.src) + " from " + std::string(backends[size_t(c.from)]->name()) + ": " +
             std::to_string(c.dst->nbytes()) + " bytes\n";
    }
  }
  out += std::to_string(n_copies()) + " copies, " + std::to_string(bytes_copied()) + " bytes per compute\n";
  return out;
}

Scheduler::Scheduler(std::vector<Backend*> backends, LeafPlacement placement)
    : backends_(std::move(backends)), placement_(std::move(placement)) {
  TESSERA_CHECK(!backends_.empty());
  home_ = -1;
  for (size_t i = 0; i < backends_.size(); ++i) {
    if (backends_[i]->can_hold_tensors() && home_ < 0) home_ = int(i);
  }
  TESSERA_CHECK_MSG(home_ >= 0, "the scheduler needs at least one local backend");
  buffers_.resize(backends_.size());
  generation_.assign(backends_.size(), 1);
}

void Scheduler::assign(Graph& graph, SchedGraph& sg) const {
  const std::vector<Tensor*>& nodes = graph.nodes();
  const NodeIndex index(graph);
  std::unordered_map<const Tensor*, int>& be = sg.backend_of_;
  auto leaf_backend = [&](Tensor* t) -> int {  // of t's memory, when a placed leaf holds it
    Tensor* o = owner_of(t);
    return is_leaf(o) ? placement_(o) : kAnyBackend;
  };

  // 1. Nodes over placed leafs (views of them, writes into them, reads of them).
  std::unordered_set<const Tensor*> fixed;  // placed by a leaf: never moved
  for (Tensor* n : nodes) {
    int b = leaf_backend(n);
    if (b == kAnyBackend && !op_is_view(n->op)) {
      for (Tensor* s : n->src) {
        if (s && (b = leaf_backend(s)) != kAnyBackend) break;
      }
    }
    TESSERA_CHECK_MSG(b == kAnyBackend || (b >= 0 && b < n_backends()), "leaf placed on no backend");
    if (b != kAnyBackend) {
      be[n] = b;
      fixed.insert(n);
    }
  }
  // 2. Forward: where the last-made input was made (views take their owner's backend).
  for (Tensor* n : nodes) {
    if (be.count(n)) continue;
    if (op_is_view(n->op)) {
      auto it = be.find(owner_of(n));
      if (it != be.end()) be[n] = it->second;
      continue;
    }
    int best = kAnyBackend;
    size_t best_at = 0;
    for (Tensor* s : n->src) {
      if (!s) continue;
      auto it = be.find(s);
      if (it == be.end()) continue;
      const size_t at = index.at.at(s);  // s has a backend, so it is a node
      if (best == kAnyBackend || at >= best_at) {
        best = it->second;
        best_at = at;
      }
    }
    if (best != kAnyBackend) be[n] = best;
  }
  // 3. Backward: nodes over graph inputs only, where their first consumer runs.
  for (size_t i = nodes.size(); i-- > 0;) {
    Tensor* n = nodes[i];
    if (be.count(n)) continue;
    for (Tensor* c : index.of(n)) {
      auto it = be.find(c);
      if (it != be.end()) {
        be[n] = it->second;
        break;
      }
    }
    if (!be.count(n)) be[n] = home_;
  }
  // 4. A weight-less node moves to its consumers' backend when that costs no copy.
  for (size_t i = nodes.size(); i-- > 0;) {
    Tensor* n = nodes[i];
    if (fixed.count(n) || op_is_view(n->op)) continue;
    const std::vector<Tensor*>& cons = index.of(n);
    if (cons.empty()) continue;
    const int b = be[cons.front()];
    if (b == be[n]) continue;
    bool movable = std::all_of(cons.begin(), cons.end(),
                               [&](Tensor* c) { return !op_is_view(c->op) && be[c] == b; });
    for (Tensor* s : n->src) {
      if (!movable || !s) continue;
      if (is_leaf(owner_of(s))) continue;  // read in place, or copied as a leaf either way
      if (be[s] == b) continue;
      const std::vector<Tensor*>& others = index.of(s);
      movable = std::any_of(others.begin(), others.end(), [&](Tensor* c) { return c != n && be[c] == b; });
    }
    if (movable) be[n] = b;
  }
  // 5. Supported ops; then views follow their owner (or their consumer, for inputs).
  for (Tensor* n : nodes) {
    if (op_is_view(n->op) || is_remote(be[n]) || backends_[size_t(be[n])]->supports_op(n)) continue;
    for (int b = 0; b < n_backends(); ++b) {
      if (!is_remote(b) && backends_[size_t(b)]->supports_op(n)) {
        be[n] = b;
        break;
      }
    }
  }
  for (Tensor* n : nodes) {
    if (!op_is_view(n->op)) continue;
    Tensor* o = owner_of(n);
    if (!is_leaf(o)) {
      be[n] = be.at(o);
    } else if (placement_(o) != kAnyBackend) {
      be[n] = placement_(o);
    }
  }
}

void Scheduler::cut(Graph& graph, SchedGraph& sg) const {
  std::unordered_map<const Tensor*, int>& be = sg.backend_of_;
  for (Tensor* n : graph.nodes()) {
    if (op_is_view(n->op)) continue;
    if (sg.splits_.empty() || sg.splits_.back().backend != be[n]) {
      SchedSplit s;
      s.backend = be[n];
      s.graph = std::make_unique<Graph>();
      sg.splits_.push_back(std::move(s));
    }
    sg.splits_.back().graph->add_node(n);
  }
  // Per local backend, the graph its memory is planned from: all its nodes (views too),
  // its copies, and (the home backend) the graph inputs.
  sg.memory_.resize(backends_.size());
  for (size_t b = 0; b < backends_.size(); ++b) {
    if (!is_remote(int(b))) sg.memory_[b] = std::make_unique<Graph>();
  }
  for (Tensor* leaf : graph.leafs()) {
    if (leaf->data == nullptr && leaf->view_src == nullptr && placement_(leaf) == kAnyBackend) {
      sg.memory_[size_t(home_)]->add_leaf(leaf);
    }
  }
  // Copies: one per (tensor, reading backend), made before the first split that reads it.
  std::unordered_map<const Tensor*, std::vector<std::pair<int, Tensor*>>> copy_of;
  auto where = [&](Tensor* s) -> int {
    if (!is_leaf(s)) return be.at(s);
    return placement_(s);
  };
  // A device that cannot read host memory gets its own copy of each host leaf (graph
  // inputs, weights read in place) its nodes read, copied whole from the home backend,
  // and its own views into that copy.
  std::unordered_map<const Tensor*, std::vector<std::pair<int, Tensor*>>> device_view_of;
  auto device_copy = [&](SchedSplit& split, Tensor* s) -> Tensor* {
    const int b = split.backend;
    auto find = [&](auto& map, const Tensor* t) -> Tensor* {
      for (const auto& [at, copy] : map[t]) {
        if (at == b) return copy;
      }
      return nullptr;
    };
    Tensor* o = owner_of(s);
    Tensor* dst = find(copy_of, o);
    if (dst == nullptr) {
      TESSERA_CHECK_MSG(backends_[size_t(home_)]->host_memory(), "host leafs are copied from a host backend");
      dst = sg.arena_.new_tensor(o->type, o->ne, o->name + "@" + std::string(backends_[size_t(b)]->name()));
      split.copies.push_back({o, dst, home_});
      sg.memory_[size_t(b)]->add_leaf(dst);
      copy_of[o].emplace_back(b, dst);
    }
    if (s == o) return dst;
    Tensor* v = find(device_view_of, s);
    if (v == nullptr) {
      v = sg.arena_.new_tensor(s->type, s->ne, s->name + "@" + std::string(backends_[size_t(b)]->name()));
      v->op = Op::View;
      v->nb = s->nb;
      v->view_src = dst;
      v->view_offset = s->view_offset;
      sg.memory_[size_t(b)]->add_node(v);
      device_view_of[s].emplace_back(b, v);
    }
    return v;
  };
  for (SchedSplit& split : sg.splits_) {
    const int b = split.backend;
    const bool device = !is_remote(b) && !backends_[size_t(b)]->host_memory();
    for (Tensor* n : split.graph->nodes()) {
      for (Tensor*& s : n->src) {
        if (!s) continue;
        if (device && is_leaf(owner_of(s)) && placement_(owner_of(s)) == kAnyBackend) {
          s = device_copy(split, s);
          continue;
        }
        const int from = where(s);
        if (from == kAnyBackend || from == b) continue;
        std::vector<std::pair<int, Tensor*>>& copies = copy_of[s];
        auto it = std::find_if(copies.begin(), copies.end(), [&](const auto& c) { return c.first == b; });
        if (it == copies.end()) {
          TESSERA_CHECK_MSG(s->is_contiguous(), "the scheduler copies contiguous tensors only");
          Tensor* dst = sg.arena_.new_tensor(s->type, s->ne, s->name + "@" + std::string(backends_[size_t(b)]->name()));
          owner_of(s)->flags |= kFlagOutput;  // kept until the copy is made
          split.copies.push_back({s, dst, from});
          if (!is_remote(b)) sg.memory_[size_t(b)]->add_leaf(dst);
          copies.emplace_back(b, dst);
          it = copies.end() - 1;
        }
        s = it->second;
      }
    }
  }
  for (Tensor* n : graph.nodes()) {
    const int b = be[n];
    if (!is_remote(b)) sg.memory_[size_t(b)]->add_node(n);
  }
  sg.plans_.resize(backends_.size());
  sg.placed_in_.assign(backends_.size(), 0);
  for (size_t b = 0; b < backends_.size(); ++b) {
    if (sg.memory_[b]) sg.plans_[b] = plan_graph_memory(*sg.memory_[b], backends_[b]->alignment());
  }
}

std::unique_ptr<SchedGraph> Scheduler::plan(Graph& graph) const {
  auto sg = std::make_unique<SchedGraph>();
  assign(graph, *sg);
  cut(graph, *sg);
  if (debug_enabled()) {  // asked for: shown at the default level
    log(LogLevel::Warn, "scheduler: %zu nodes in %zu splits\n%s", graph.nodes().size(), sg->splits_.size(),
        sg->describe(backends_).c_str());
  }
  return sg;
}

void Scheduler::place(SchedGraph& sg) {
  bool again = false;
  for (size_t b = 0; b < backends_.size(); ++b) {
    if (!sg.memory_[b]) continue;
    const size_t need = sg.plans_[b].size;
    if (!buffers_[b] || buffers_[b]->size() < need) {
      buffers_[b].reset();  // graphs placed in the old buffer are placed again when used
      Result<std::unique_ptr<Buffer>> buf = backends_[b]->alloc_buffer(need);
      TESSERA_CHECK_MSG(buf.is_ok(), "out of memory for a compute buffer");
      buffers_[b] = std::move(*buf);
      ++generation_[b];
    }
    again = again || sg.placed_in_[b] != generation_[b];
  }
  if (!again) return;
  // Home first: other backends' views of the graph inputs point into its buffer.
  std::vector<size_t> order{size_t(home_)};
  for (size_t b = 0; b < backends_.size(); ++b) {
    if (int(b) != home_) order.push_back(b);
  }
  for (size_t b : order) {
    if (!sg.memory_[b]) continue;
    apply_graph_memory(sg.plans_[b], *sg.memory_[b], *buffers_[b]);
    sg.placed_in_[b] = generation_[b];
  }
}

Status Scheduler::compute(SchedGraph& sg) {
  place(sg);
  for (const SchedSplit& split : sg.splits_) {
    const int b = split.backend;
    for (const SchedCopy& c : split.copies) {
      if (!is_remote(c.from) && !is_remote(b)) {
        backends_[size_t(b)]->copy_tensor_from(c.src, c.dst);
      } else if (!is_remote(c.from)) {
        TESSERA_RETURN_IF_ERROR(backends_[size_t(b)]->send_tensor(c.src));
      } else if (!is_remote(b)) {
        TESSERA_RETURN_IF_ERROR(backends_[size_t(c.from)]->receive_tensor(c.dst));
      }
    }
    if (!is_remote(b)) TESSERA_RETURN_IF_ERROR(backends_[size_t(b)]->compute(*split.graph));
  }
  return Status::ok();
}

// The process that samples is backend 0's (an MPI job's rank 0): an output computed
// elsewhere goes to it, and only it receives outputs.
Status Scheduler::get_output_async(const SchedGraph& sg, const Tensor* t, void* dst, size_t size) {
  const int b = sg.backend_of(t);
  if (!is_remote(b)) {
    backends_[size_t(b)]->get_tensor_async(t, dst, 0, size);
    if (is_remote(0)) {
      backends_[size_t(b)]->synchronize();
      return backends_[0]->send_result(dst, size);
    }
    return Status::ok();
  }
  if (!is_remote(0)) return backends_[size_t(b)]->receive_result_async(dst, size);
  return Status::ok();
}

Status Scheduler::synchronize() {
  for (Backend* b : backends_) {
    if (b->can_hold_tensors()) b->synchronize();
  }
  for (Backend* b : backends_) {
    if (!b->can_hold_tensors()) TESSERA_RETURN_IF_ERROR(b->finish_transfers());
  }
  return Status::ok();
}

}  // namespace tessera
