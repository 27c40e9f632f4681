// Hands out a node's work items so that each thread streams its own contiguous share,
// and a thread that runs out takes over half of what another has left instead of
// waiting at the barrier. Generation streams the weights from memory, and on a shared
// machine one core can be slower for a while (or descheduled): with a fixed split the
// others wait for it after every matrix.
#pragma once

#include <atomic>
#include <cstdint>

namespace tessera::cpu {

/// One per thread, shared by the threads of a compute (CpuBackend owns them): the range
/// of items its thread has not claimed yet, tagged with the node it belongs to.
struct alignas(64) WorkSlot {
  std::atomic<uint64_t> word{0};
};

class WorkQueue {
 public:
  /// Most items a node can hand out this way.
  static constexpr int64_t kMaxItems = 0xFFFF;

  /// Items [0, n_items) of the node numbered `seq` (nonzero, the same on every thread,
  /// different for consecutive nodes), handed out in ranges whose sizes are multiples of
  /// `grain` (but for a last, shorter one). Thread t's share is [t n / nth, (t + 1) n / nth),
  /// each bound rounded down to a multiple of grain.
  WorkQueue(WorkSlot* slots, int ith, int nth, uint32_t seq, int64_t n_items, int64_t grain = 1);

  /// The next range [*first, *end) for this thread: from the front of what is left of
  /// its own share, a quarter of that (at least a grain), so that the ranges shrink
  /// towards the end of the share; once its share is empty, the back half of the largest
  /// range another thread has left becomes its share. False when every item is claimed.
  bool next(int64_t* first, int64_t* end);

 private:
  uint64_t current(int t);  // slot t's word, set to t's full share if it is from an older node
  bool claim_front(int64_t* first, int64_t* end);
  bool steal();  // moves the back half of the largest other range into this thread's slot

  WorkSlot* slots_;
  int ith_, nth_;
  uint32_t seq_;
  int64_t n_items_, grain_;
};

}  // namespace tessera::cpu
