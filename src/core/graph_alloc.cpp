#include "core/graph_alloc.h"

#include <algorithm>
#include <unordered_map>

#include "core/check.h"

namespace tessera {
namespace {

size_t align_up(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

/// The tensor whose memory `t` uses.
Tensor* owner_of(Tensor* t) { return t->view_src ? t->view_src : t; }

/// First-fit over free blocks kept sorted by offset, merging neighbours on release.
class FreeList {
 public:
  explicit FreeList(size_t alignment) : alignment_(alignment) {}

  size_t allocate(size_t size) {
    size = align_up(std::max<size_t>(size, 1), alignment_);
    // Best fit: the smallest free block that is large enough.
    auto best = blocks_.end();
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
      if (it->second >= size && (best == blocks_.end() || it->second < best->second)) best = it;
    }
    if (best != blocks_.end()) {
      const size_t offset = best->first;
      best->first += size;
      best->second -= size;
      if (best->second == 0) blocks_.erase(best);
      return offset;
    }
    // Grow at the end, absorbing a free block that touches the end.
    size_t offset = top_;
    if (!blocks_.empty() && blocks_.back().first + blocks_.back().second == top_) {
      offset = blocks_.back().first;
      blocks_.pop_back();
    }
    top_ = offset + size;
    peak_ = std::max(peak_, top_);
    return offset;
  }

  void release(size_t offset, size_t size) {
    size = align_up(std::max<size_t>(size, 1), alignment_);
    auto it = std::lower_bound(blocks_.begin(), blocks_.end(), std::make_pair(offset, size_t{0}));
    it = blocks_.insert(it, {offset, size});
    if (it + 1 != blocks_.end() && it->first + it->second == (it + 1)->first) {
      it->second += (it + 1)->second;
      blocks_.erase(it + 1);
    }
    if (it != blocks_.begin() && (it - 1)->first + (it - 1)->second == it->first) {
      (it - 1)->second += it->second;
      blocks_.erase(it);
    }
  }

  size_t peak() const { return peak_; }

 private:
  size_t alignment_;
  size_t top_ = 0;
  size_t peak_ = 0;
  std::vector<std::pair<size_t, size_t>> blocks_;  // (offset, size), sorted by offset
};

struct Planner {
  const Graph& graph;
  FreeList free_list;
  AllocPlan plan;
  std::unordered_map<const Tensor*, int> consumers;   // non-view nodes still to read it
  std::unordered_map<const Tensor*, size_t> offset_of;
  std::unordered_map<const Tensor*, bool> pinned;     // inputs and outputs: never released

  void count_consumers() {
    for (const Tensor* node : graph.nodes()) {
      if (op_is_view(node->op)) continue;  // views read nothing themselves
      for (Tensor* s : node->src) {
        if (s) ++consumers[owner_of(s)];
      }
    }
  }

  void place(Tensor* t, size_t offset) {
    offset_of[t] = offset;
    plan.offsets.emplace_back(t, offset);
    plan.sum_of_tensors += align_up(t->nbytes(), 64);
  }

  bool owns_planned_memory(const Tensor* t) const { return offset_of.count(t) != 0; }

  bool try_in_place(Tensor* node) {
    Tensor* in = node->src[0];
    if (!op_can_run_in_place(node) || in->view_src != nullptr || !owns_planned_memory(in)) {
      return false;
    }
    if (pinned.count(in) || consumers[in] != 1) return false;
    if (in->type != node->type || in->nbytes() != node->nbytes() || !in->is_contiguous()) {
      return false;
    }
    // The node inherits its input's block; the input will not be released.
    consumers[in] = 0;
    place(node, offset_of[in]);
    return true;
  }

  void release_sources(const Tensor* node) {
    for (Tensor* s : node->src) {
      if (!s) continue;
      Tensor* o = owner_of(s);
      auto it = consumers.find(o);
      if (it == consumers.end() || it->second == 0) continue;  // taken over in place
      if (--it->second == 0 && owns_planned_memory(o) && !pinned.count(o)) {
        free_list.release(offset_of[o], o->nbytes());
      }
    }
  }

  void run() {
    count_consumers();
    for (Tensor* leaf : graph.leafs()) {
      if (leaf->data == nullptr && leaf->view_src == nullptr) {
        pinned[leaf] = true;
        place(leaf, free_list.allocate(leaf->nbytes()));
      }
    }
    for (Tensor* node : graph.nodes()) {
      if (op_is_view(node->op) || node->view_src != nullptr) continue;
      if (node->data == nullptr) {
        if ((node->flags & kFlagOutput) || consumers[node] == 0) pinned[node] = true;
        if (pinned.count(node) || !try_in_place(node)) {
          place(node, free_list.allocate(node->nbytes()));
        }
      }
      release_sources(node);
    }
    plan.size = free_list.peak();
  }
};

}  // namespace

bool op_can_run_in_place(const Tensor* node) {
  switch (node->op) {
    case Op::Add:
    case Op::Mul:
    case Op::Scale:
    case Op::Silu:
    case Op::Gelu:
    case Op::ReluSqr:
    case Op::Clamp:
    case Op::Softcap:
    case Op::Acc:  // src0 is null for acc_zeros: nothing to write over
      return node->src[0] != nullptr && node->src[0]->is_contiguous();
    default:
      return false;
  }
}

AllocPlan plan_graph_memory(const Graph& graph, size_t alignment) {
  Planner p{graph, FreeList(alignment), {}, {}, {}, {}};
  p.run();
  return std::move(p.plan);
}

}  // namespace tessera
