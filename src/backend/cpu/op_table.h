// The CPU backend's one op table: the same entry says whether an op is supported
// (types, layout) and computes it, so the two can never drift apart.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/work_queue.h"
#include "core/tensor.h"

namespace tessera::cpu {

/// What a kernel invocation gets: its thread index, the thread count, scratch, and what
/// it needs to share work items dynamically (work_queue.h).
struct KernelParams {
  int ith = 0;
  int nth = 1;
  char* work = nullptr;  // shared scratch of the size work_size() asked for, 64-byte aligned
  size_t work_size = 0;
  WorkSlot* slots = nullptr;  // nth slots; null: the kernel splits its work statically
  uint32_t seq = 0;           // this node's number for WorkQueue (nonzero when slots is set)
};

struct OpEntry {
  /// Whether this node (its types and layout) can be computed. Null: never.
  bool (*supports)(const Tensor* node) = nullptr;
  /// Computes the share `p.ith` of `p.nth` of the node. Every thread calls it.
  void (*compute)(Tensor* node, const KernelParams& p) = nullptr;
  /// Optional: scratch bytes the op needs for nth threads.
  size_t (*work_size)(const Tensor* node, int nth) = nullptr;
  /// Optional: a first phase run by every thread before compute (e.g. converting the
  /// activations of a mul_mat once for all threads). Returns whether it wrote anything
  /// compute depends on, in which case a barrier follows; the answer must depend on the
  /// node only, so that every thread agrees.
  bool (*prepare)(Tensor* node, const KernelParams& p) = nullptr;
};

/// The entry of an op; ops with no CPU kernel have an entry with null functions.
const OpEntry& op_entry(Op op);

/// True if the CPU backend computes this node (views are always supported).
bool supports(const Tensor* node);

/// Splits [0, n) into nth near-equal chunks; returns chunk ith as [begin, end).
inline void split_range(int64_t n, int ith, int nth, int64_t* begin, int64_t* end) {
  const int64_t per = (n + nth - 1) / nth;
  *begin = per * ith < n ? per * ith : n;
  *end = *begin + per < n ? *begin + per : n;
}

}  // namespace tessera::cpu
