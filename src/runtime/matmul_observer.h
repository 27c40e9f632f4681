// ContextParams::matmul_observer: the products of model weights in a forward graph, their
// inputs kept alive through the pass and read back after it.
//
// A graph built for an observing context marks the second operand of every MulMat /
// MulMatId whose first operand is a model weight (and MulMatId's expert ids) as a graph
// output, so that the allocator does not reuse its memory; after the pass each is read
// from its backend and handed to the observer. Tensors fused at load (fuse_weights.h:
// wqkv, ffn_gate_up) have no name in the file, so their input is reported under the
// names of their parts.
#pragma once

#include <string>
#include <vector>

#include "backend/scheduler.h"
#include "model/weights.h"
#include "tessera/context.h"

namespace tessera {

struct ObservedMatmul {
  const Tensor* node = nullptr;    // the MulMat / MulMatId
  std::vector<std::string> names;  // the weight's name, or its parts' names
};

/// Finds the products of weights in `graph` and flags their inputs as outputs. Call
/// before the graph is planned.
std::vector<ObservedMatmul> observe_weight_matmuls(const Graph& graph, const ModelWeights& w);

/// Reads the inputs of `observed` after `plan` was computed and calls `fn` (with `user`)
/// for each name.
Status report_matmul_inputs(Scheduler& sched, const SchedGraph& plan,
                            const std::vector<ObservedMatmul>& observed, MatmulObserver fn, void* user);

}  // namespace tessera
