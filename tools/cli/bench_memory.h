// What `tessera bench --bandwidth` measures of the machine: its memory read bandwidth,
// and how much the CPU's caches hold (a model that fits there is read from cache, so the
// memory roofline does not bound its generation speed).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::cli {

/// Bytes per second of reading `bytes` (far larger than the caches) with `threads`
/// threads; the best of `reps` runs.
double measure_read_bandwidth(int threads, size_t bytes, int reps);

/// The paired probe of a tg repetition (docs/performance.md: this VM's bandwidth moves
/// from second to second, so each repetition is bracketed by probes of its own).
double paired_probe(int threads);

/// Bytes of the largest cache level one core sees (L3 on most CPUs, else L2), from
/// /sys/devices/system/cpu/cpu0/cache; 0 when it cannot be read.
uint64_t last_level_cache_bytes();

}  // namespace tessera::cli
