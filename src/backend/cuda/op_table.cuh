// The CUDA backend's one op table: each entry says whether a node (its types and
// layout) can run on the GPU and launches it, so support and compute never drift apart
// (as the CPU backend's op_table.h). Each op family's .cu file provides its entries'
// functions (ops.cuh).
#pragma once

#include "backend/cuda/common.cuh"

namespace tessera::cuda {

struct OpEntry {
  /// Whether this node can run here. Null: never.
  bool (*supports)(const Tensor* node) = nullptr;
  /// Launches the node's kernels on ctx.stream; all its tensors are in device memory.
  void (*compute)(Tensor* node, Ctx& ctx) = nullptr;
};

const OpEntry& op_entry(Op op);

/// Views always; other nodes as their entry says.
bool supports(const Tensor* node);

}  // namespace tessera::cuda
