// Applying position shifts to the KV cache: after seq_add moved cells to new positions,
// their cached keys (rotated by RoPE at the old position) are rotated once more by the
// per-cell delta. Rotations compose (rope(rope(k, p), d) = rope(k, p + d)), so the key
// ends up as if it had been computed at the new position, up to rounding (the cache may
// be F16). Values carry no position and stay as they are. With ALiBi positions live in
// the mask alone, so a shift only clears the pending deltas.
#pragma once

#include <memory>

#include "backend/scheduler.h"
#include "runtime/kv_cache.h"

namespace tessera {

class KvShift {
 public:
  /// `freq_factors`: the model's RoPE frequency divisors (rope_factors in blocks.h), or null.
  KvShift(const HParams& h, Tensor* freq_factors, Scheduler& sched);
  ~KvShift();

  /// Rotates the keys of every cell with a pending shift and marks the shifts applied.
  Status apply(KvCache& kv);

 private:
  struct ShiftGraph;
  void build(const KvCache& kv, int64_t n_kv);
  RopeYarn rotation_only() const;

  const HParams& h_;
  Tensor* freq_factors_;
  Scheduler& sched_;
  std::unique_ptr<ShiftGraph> graph_;  // for the last n_kv seen
};

}  // namespace tessera
