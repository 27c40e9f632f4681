#include "cli/bench_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tessera::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kPairedProbeBytes = size_t(512) << 20;
constexpr int kPairedProbeReps = 3;
// The engine's worker threads spin for a while after a decode before they sleep; the
// probe waits for that so it does not share the cores with them.
constexpr auto kQuiet = std::chrono::milliseconds(300);

/// "32768K" / "1M" / "512" (bytes) as sysfs writes cache sizes; 0 when unreadable.
uint64_t parse_cache_size(const std::string& text) {
  size_t used = 0;
  uint64_t v = 0;
  try {
    v = std::stoull(text, &used);
  } catch (...) {
    return 0;
  }
  const char unit = used < text.size() ? text[used] : ' ';
  if (unit == 'K') return v << 10;
  if (unit == 'M') return v << 20;
  if (unit == 'G') return v << 30;
  return v;
}

/// The sum of the words of [begin, end) (whole cache lines) into 8 independent accumulators
/// (the compiler vectorises the loop). Not instrumented by the sanitizers: the bounds are
/// the probe's own buffer, and a checked load per word made the probe, which `bench
/// --bandwidth` runs after every generation run, take a minute in a sanitizer build.
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize("address", "undefined")))
#endif
uint64_t sum_lines(const uint64_t* p, size_t begin, size_t end) {
  constexpr size_t kLine = 64 / sizeof(uint64_t);  // words per cache line
  uint64_t acc[kLine] = {};
  for (size_t i = begin; i + kLine <= end; i += kLine) {
    for (size_t j = 0; j < kLine; ++j) acc[j] += p[i + j];
  }
  uint64_t total = 0;
  for (uint64_t v : acc) total += v;
  return total;
}

}  // namespace

/// Every word summed into 8 independent accumulators (the compiler vectorises the loop),
/// on 2 MiB pages like the repacked weights. Each run is timed from a common start to the
/// last thread's end (threads are created before the clock starts). Software prefetch did
/// not raise it on the machines we measure.
double measure_read_bandwidth(int threads, size_t bytes, int reps) {
  const size_t huge = size_t(2) << 20;
  std::unique_ptr<uint64_t, void (*)(void*)> buf(static_cast<uint64_t*>(std::aligned_alloc(huge, bytes)),
                                                 std::free);
  if (!buf) return 0;
  ::madvise(buf.get(), bytes, MADV_HUGEPAGE);
  const size_t n = bytes / sizeof(uint64_t);
  std::memset(buf.get(), 1, bytes);
  constexpr size_t kLine = 64 / sizeof(uint64_t);  // words per cache line
  double best = 0;
  for (int rep = 0; rep < reps; ++rep) {
    std::vector<uint64_t> sums(size_t(threads) * 8, 0);
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const uint64_t* p = buf.get();
        const size_t begin = n * size_t(t) / size_t(threads) / kLine * kLine;
        const size_t end = n * size_t(t + 1) / size_t(threads) / kLine * kLine;
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        sums[size_t(t) * 8] = sum_lines(p, begin, end);
      });
    }
    while (ready.load() < threads) {
    }
    const auto t0 = Clock::now();
    go.store(true, std::memory_order_release);
    for (std::thread& th : pool) th.join();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    uint64_t total = 0;
    for (uint64_t v : sums) total += v;
    if (total == 0) return 0;  // keeps the reads from being optimised away
    best = std::max(best, double(bytes) / s);
  }
  return best;
}

double paired_probe(int threads) {
  std::this_thread::sleep_for(kQuiet);
  return measure_read_bandwidth(threads, kPairedProbeBytes, kPairedProbeReps);
}

uint64_t last_level_cache_bytes() {
  int best_level = 0;
  uint64_t best = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_file(dir + "level"), size_file(dir + "size"), type_file(dir + "type");
    int level = 0;
    std::string size, type;
    if (!(level_file >> level) || !(size_file >> size)) continue;
    type_file >> type;
    if (type == "Instruction") continue;
    if (level > best_level) {
      best_level = level;
      best = parse_cache_size(size);
    }
  }
  return best;
}

}  // namespace tessera::cli
