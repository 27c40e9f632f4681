#include "backend/cpu/work_queue.h"

#include "core/check.h"

namespace tessera::cpu {
namespace {

// A slot's word: the node tag in the high 32 bits, then the first and the end of the
// unclaimed range in 16 bits each.
uint64_t pack(uint32_t tag, int64_t first, int64_t end) {
  return uint64_t(tag) << 32 | uint64_t(first) << 16 | uint64_t(end);
}
uint32_t tag_of(uint64_t w) { return uint32_t(w >> 32); }
int64_t first_of(uint64_t w) { return int64_t((w >> 16) & 0xFFFF); }
int64_t end_of(uint64_t w) { return int64_t(w & 0xFFFF); }

}  // namespace

WorkQueue::WorkQueue(WorkSlot* slots, int ith, int nth, uint32_t seq, int64_t n_items)
    : slots_(slots), ith_(ith), nth_(nth), seq_(seq), n_items_(n_items) {
  TESSERA_CHECK(seq != 0 && n_items >= 0 && n_items <= kMaxItems);
}

// The first thread to touch a slot during this node (its owner, or a thief that got
// there first) replaces the stale word with the owner's full share.
uint64_t WorkQueue::current(int t) {
  uint64_t w = slots_[t].word.load(std::memory_order_acquire);
  while (tag_of(w) != seq_) {
    const uint64_t fresh = pack(seq_, n_items_ * t / nth_, n_items_ * (t + 1) / nth_);
    if (slots_[t].word.compare_exchange_weak(w, fresh, std::memory_order_acq_rel)) return fresh;
  }
  return w;
}

bool WorkQueue::claim(int t, bool front, int64_t* item) {
  uint64_t w = current(t);
  for (;;) {
    const int64_t first = first_of(w), end = end_of(w);
    if (first >= end) return false;
    const uint64_t next = front ? pack(seq_, first + 1, end) : pack(seq_, first, end - 1);
    if (slots_[t].word.compare_exchange_weak(w, next, std::memory_order_acq_rel)) {
      *item = front ? first : end - 1;
      return true;
    }
    // w now holds the slot's newer word; it still belongs to this node.
  }
}

bool WorkQueue::next(int64_t* item) {
  if (claim(ith_, true, item)) return true;
  for (int k = 1; k < nth_; ++k) {
    if (claim((ith_ + k) % nth_, false, item)) return true;
  }
  return false;
}

}  // namespace tessera::cpu
