// The scheduler: runs one graph on several backends.
//
// plan() assigns every node of a graph to a backend, cuts the node list into splits
// where the backend changes, and adds a copy of each tensor that one split makes and a
// split of another backend reads. Assignment, in this order:
//   1. a node that reads a placed leaf (a weight, a cache tensor; through views too), or
//      writes into one, runs where that leaf lives;
//   2. any other node runs where the last-made of its inputs was made (the work flows
//      forward through the graph);
//   3. nodes over graph inputs only run where their first consumer runs;
//   4. a weight-less node whose consumers all run on one other backend moves there when
//      each of its inputs is copied there anyway (a layer's input norm goes with its
//      layer: one tensor crosses each cut, not two);
//   5. a node its backend does not support goes to the first backend that does.
// Views live with the tensor they view, and views of graph inputs with their consumer.
// Every backend's share of the graph is planned by the graph allocator as one graph
// (tensors may live from one of its splits to a later one) in that backend's compute
// buffer; graph inputs live on the first local backend, where the runtime sets them;
// leafs placed on no backend (kAnyBackend: inputs, small weights in host memory) are
// read in place by every (host) backend.
//
// A backend that cannot hold tensors here (another MPI rank: backend/mpi/remote_backend.h)
// stands for a split that another process computes: a copy into it is its send_tensor, a
// copy out of it its receive_tensor, an output the sampling process (backend 0's) needs
// its send_result / receive_result_async. Every rank plans the same graph the same way,
// so both ends of each message agree. The scheduler knows nothing of MPI itself.
//
// TESSERA_SCHED_DEBUG=1 prints each plan: the splits, their nodes, and the tensors copied.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "core/graph_alloc.h"

namespace tessera {

/// What LeafPlacement returns for a leaf that every backend reads in place.
constexpr int kAnyBackend = -1;
/// The backend index holding a leaf (a weight, a cache tensor), or kAnyBackend.
using LeafPlacement = std::function<int(const Tensor*)>;

/// A tensor made by one backend's split that a split of another backend reads.
struct SchedCopy {
  Tensor* src = nullptr;  // as made (on backend `from`)
  Tensor* dst = nullptr;  // its copy on the reading split's backend
  int from = 0;
};

struct SchedSplit {
  int backend = 0;
  std::unique_ptr<Graph> graph;  // its nodes in order (views compute nothing and are left out)
  std::vector<SchedCopy> copies;  // made before it runs
};

/// A graph as planned by a Scheduler; built once per graph, computed many times.
class SchedGraph {
 public:
  const std::vector<SchedSplit>& splits() const { return splits_; }
  /// The backend a node of the graph runs on (and an output lives on).
  int backend_of(const Tensor* node) const;
  /// Tensors copied from split to split, and their bytes, per compute.
  int64_t n_copies() const;
  size_t bytes_copied() const;
  /// A few lines per split: backend, nodes, copies (what TESSERA_SCHED_DEBUG prints).
  std::string describe(const std::vector<Backend*>& backends) const;

 private:
  friend class Scheduler;
  TensorArena arena_;  // the copies
  std::vector<SchedSplit> splits_;
  std::unordered_map<const Tensor*, int> backend_of_;
  std::vector<std::unique_ptr<Graph>> memory_;  // per local backend: what it places; null for remote ones
  std::vector<AllocPlan> plans_;
  std::vector<uint64_t> placed_in_;  // per backend: buffer generation its plan was applied to
};

class Scheduler {
 public:
  /// `backends` (not owned) in order of preference; the first local one holds the
  /// graph inputs. `placement` says where each leaf lives.
  Scheduler(std::vector<Backend*> backends, LeafPlacement placement);

  int n_backends() const { return int(backends_.size()); }
  Backend& backend(int i) const { return *backends_[size_t(i)]; }
  const std::vector<Backend*>& backends() const { return backends_; }

  /// Plans `graph` (its nodes' sources are redirected to the copies at each cut, so
  /// the graph is the scheduler's from then on).
  std::unique_ptr<SchedGraph> plan(Graph& graph) const;
  /// Gives the planned tensors memory in the compute buffers (which grow when needed;
  /// graphs planned earlier are placed again when next used). Before setting inputs.
  void place(SchedGraph& sg);
  /// Places the graph (if not yet), then runs the splits in order with their copies.
  Status compute(SchedGraph& sg);
  /// Copies output node `t` (its first `size` bytes) into host memory `dst`. With MPI
  /// ranks, rank 0 receives it from the rank that computes it; it may arrive only at
  /// synchronize(), and `dst` must stay valid until then.
  Status get_output_async(const SchedGraph& sg, const Tensor* t, void* dst, size_t size);
  /// Waits for every copy and message started.
  Status synchronize();

 private:
  /// Whether backend b computes in another process (another MPI rank).
  bool is_remote(int b) const { return !backends_[size_t(b)]->can_hold_tensors(); }
  void assign(Graph& graph, SchedGraph& sg) const;
  void cut(Graph& graph, SchedGraph& sg) const;

  std::vector<Backend*> backends_;
  LeafPlacement placement_;
  int home_ = 0;                  // the first local backend: graph inputs live there
  std::vector<std::unique_ptr<Buffer>> buffers_;  // compute buffer per backend
  std::vector<uint64_t> generation_;              // bumped when a buffer is reallocated
};

}  // namespace tessera
