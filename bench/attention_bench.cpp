// Decode attention, per instruction-set level: one generated token of a TinyLlama-shape
// model (22 layers x 4 KV heads, 8 query rows per KV head, head size 64) against n cells
// of an F16 cache laid out as the model's (per layer, cell-major: a cell's row holds its
// 4 heads), the whole cache read once per token as decode reads it.
//  - f32: what the op does where a level has no tile_f16: a layer's K and V converted to
//    F32 (one f16_to_f32 call per cell for all its heads), then the row-per-lane tile of
//    each head;
//  - f16: tile_f16 reading the cache directly.
//   build/tessera_bench_kernels --benchmark_filter=attention_decode
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/attn_kernels.h"
#include "core/fp16.h"

namespace tessera::cpu {
namespace {

constexpr int kLayers = 22;
constexpr int kKvHeads = 4;
constexpr int kRows = 8;
constexpr int64_t kHd = 64;

// 64-byte aligned, as the backend's buffers (a heap block's 16-byte offset would put
// every head's 128-byte row across three cache lines).
template <typename T>
struct Aligned {
  using value_type = T;
  Aligned() = default;
  template <typename U>
  explicit Aligned(const Aligned<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64)); }
  void deallocate(T* p, size_t) { std::free(p); }
  bool operator==(const Aligned&) const { return true; }
};

struct Buffers {
  std::vector<uint16_t, Aligned<uint16_t>> k, v;  // kLayers x n x kKvHeads x kHd
  std::vector<float> q, out;    // kRows x kHd
  std::vector<float, Aligned<float>> k32, v32;  // one layer, converted
  float* scratch = nullptr;
  ~Buffers() { std::free(scratch); }
};

void fill(Buffers& b, int64_t n) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const size_t cache = size_t(kLayers) * size_t(n) * size_t(kKvHeads) * size_t(kHd);
  b.k.resize(cache);
  b.v.resize(cache);
  for (size_t i = 0; i < cache; ++i) {
    b.k[i] = f32_to_f16(u(rng));
    b.v[i] = f32_to_f16(u(rng));
  }
  b.q.resize(size_t(kRows * kHd));
  for (float& x : b.q) x = u(rng) * 0.125f;
  b.out.resize(size_t(kRows * kHd));
  b.k32.resize(size_t(n * kKvHeads * kHd));
  b.v32.resize(size_t(n * kKvHeads * kHd));
  b.scratch = static_cast<float*>(std::aligned_alloc(64, attn_scratch_floats(n, kHd) * sizeof(float)));
}

void run(benchmark::State& state, Isa isa, bool direct) {
  const AttnKernels* a = attn_kernels_for(isa);
  const VecKernels* vk = vec_kernels_for(isa);
  if (!a || !vk || (direct && !a->tile_f16)) {
    state.SkipWithError("level not supported here, or without tile_f16");
    return;
  }
  const int64_t n = state.range(0);
  Buffers b;
  fill(b, n);
  AttnTile t;
  t.rows = kRows;
  t.n = n;
  t.hd = kHd;
  t.vd = kHd;
  for (int r = 0; r < kRows; ++r) {
    t.q[r] = b.q.data() + r * kHd;
    t.out[r] = b.out.data() + r * kHd;
  }
  t.k_stride = t.v_stride = size_t(kKvHeads * kHd);
  t.scratch = b.scratch;
  for (auto _ : state) {
    for (int l = 0; l < kLayers; ++l) {
      const size_t layer = size_t(l) * size_t(n) * t.k_stride;
      if (!direct) {
        for (int64_t c = 0; c < n; ++c) {
          const size_t row = size_t(c) * t.k_stride;
          vk->f16_to_f32(b.k.data() + layer + row, b.k32.data() + row, kKvHeads * kHd);
          vk->f16_to_f32(b.v.data() + layer + row, b.v32.data() + row, kKvHeads * kHd);
        }
      }
      for (int h = 0; h < kKvHeads; ++h) {
        const size_t head = size_t(h) * size_t(kHd);
        if (direct) {
          t.k16 = b.k.data() + layer + head;
          t.v16 = b.v.data() + layer + head;
          a->tile_f16(t);
        } else {
          t.k = b.k32.data() + head;
          t.v = b.v32.data() + head;
          a->tile(t);
        }
      }
    }
    benchmark::DoNotOptimize(b.out.data());
  }
  state.counters["tokens/s"] = benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(b.k.size() + b.v.size()) * 2);
}

[[maybe_unused]] const bool kRegistered = [] {
  for (Isa isa : {Isa::Reference, Isa::Avx2, Isa::Avx512}) {
    for (bool direct : {false, true}) {
      const std::string name = "attention_decode/" + std::string(isa_name(isa)) + (direct ? "/f16" : "/f32");
      benchmark::RegisterBenchmark(name.c_str(), [isa, direct](benchmark::State& s) { run(s, isa, direct); })
          ->Arg(512)
          ->Arg(2048)
          ->Arg(16384)
          ->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}();

}  // namespace
}  // namespace tessera::cpu
