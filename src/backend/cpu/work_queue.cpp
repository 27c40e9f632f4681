#include "backend/cpu/work_queue.h"

#include <algorithm>

#include "core/check.h"

namespace tessera::cpu {
namespace {

// A slot's word: the node tag in the high 32 bits, then the first and the end of the
// unclaimed range in 16 bits each. The word is the slot's whole state: a compare-exchange
// that succeeds acts on the range as it is at that moment, even if the slot held other
// ranges in between (a refilled slot can hold a range it held before), so ABA is harmless.
uint64_t pack(uint32_t tag, int64_t first, int64_t end) {
  return uint64_t(tag) << 32 | uint64_t(first) << 16 | uint64_t(end);
}
uint32_t tag_of(uint64_t w) { return uint32_t(w >> 32); }
int64_t first_of(uint64_t w) { return int64_t((w >> 16) & 0xFFFF); }
int64_t end_of(uint64_t w) { return int64_t(w & 0xFFFF); }

// Front claims take this fraction of what is left: long streams while much is left, and
// ranges of a grain or two at the end, so that threads finish within a grain of each
// other.
constexpr int64_t kFrontDivisor = 4;

int64_t round_up(int64_t n, int64_t grain) { return (n + grain - 1) / grain * grain; }

}  // namespace

WorkQueue::WorkQueue(WorkSlot* slots, int ith, int nth, uint32_t seq, int64_t n_items, int64_t grain)
    : slots_(slots), ith_(ith), nth_(nth), seq_(seq), n_items_(n_items), grain_(grain) {
  TESSERA_CHECK(seq != 0 && n_items >= 0 && n_items <= kMaxItems && grain >= 1);
}

// The first thread to touch a slot during this node (its owner, or a thief that got
// there first) replaces the stale word with the owner's full share.
uint64_t WorkQueue::current(int t) {
  uint64_t w = slots_[t].word.load(std::memory_order_acquire);
  while (tag_of(w) != seq_) {
    auto bound = [&](int i) { return i == nth_ ? n_items_ : n_items_ * i / nth_ / grain_ * grain_; };
    const uint64_t fresh = pack(seq_, bound(t), bound(t + 1));
    if (slots_[t].word.compare_exchange_weak(w, fresh, std::memory_order_acq_rel)) return fresh;
  }
  return w;
}

bool WorkQueue::claim_front(int64_t* first, int64_t* end) {
  uint64_t w = current(ith_);
  for (;;) {
    const int64_t f = first_of(w), e = end_of(w);
    if (f >= e) return false;
    const int64_t n = std::min(e - f, std::max(grain_, round_up((e - f) / kFrontDivisor, grain_)));
    if (slots_[ith_].word.compare_exchange_weak(w, pack(seq_, f + n, e), std::memory_order_acq_rel)) {
      *first = f;
      *end = f + n;
      return true;
    }
    // w now holds the slot's newer word (a thief took the back of the range).
  }
}

bool WorkQueue::steal() {
  for (;;) {
    int victim = -1;
    uint64_t best = 0;
    for (int k = 1; k < nth_; ++k) {
      const int t = (ith_ + k) % nth_;
      const uint64_t w = current(t);
      if (victim < 0 || end_of(w) - first_of(w) > end_of(best) - first_of(best)) victim = t, best = w;
    }
    if (victim < 0) return false;
    const int64_t f = first_of(best), e = end_of(best);
    if (f >= e) return false;
    // The back half (rounded up, in whole grains).
    const int64_t take = std::min(e - f, round_up((e - f + 1) / 2, grain_));
    if (slots_[victim].word.compare_exchange_strong(best, pack(seq_, f, e - take), std::memory_order_acq_rel)) {
      // Only this thread writes its own slot while the slot is empty (thieves leave
      // empty ranges alone), so a plain store hands the items over.
      slots_[ith_].word.store(pack(seq_, e - take, e), std::memory_order_release);
      return true;
    }
    // The victim or another thief changed that range: look again.
  }
}

bool WorkQueue::next(int64_t* first, int64_t* end) {
  do {
    if (claim_front(first, end)) return true;
  } while (steal());
  return false;
}

}  // namespace tessera::cpu
