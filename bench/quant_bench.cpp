// Microbenchmarks of the quantized kernels, per weight type and instruction-set level:
//  - quant_dot/<type>/<isa>: one dot over a 4096-element row (in cache); bytes = the
//    weight row, so GB/s is the weight bandwidth a core could sustain.
//  - quant_mul_mat/<type>/<isa>/rows:<n>/threads:<t>: a [4096 x 4096] weight matrix
//    times n = 1 or 32 F32 activation rows through CpuBackend (activation quantization
//    included); GB/s of weight bytes, and GOP/s (2 * 4096 * 4096 * n per run) as a
//    counter.
//   build/tessera_bench_kernels --benchmark_filter=quant_dot
// Weights are random bytes with finite random fp16 scales: the kernels' speed does not
// depend on the values.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/quant_kernels.h"
#include "core/fp16.h"
#include "core/graph.h"
#include "core/ops.h"
#include "quant/blocks.h"

namespace tessera::cpu {
namespace {

constexpr DType kTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                            DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                            DType::IQ4_NL, DType::IQ4_XS, DType::IQ3_XXS, DType::IQ3_S,
                            DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ1_S,
                            DType::IQ1_M, DType::TQ1_0, DType::TQ2_0};
constexpr Isa kIsas[] = {Isa::Reference, Isa::Avx2, Isa::Avx512};
constexpr int64_t kRow = 4096;

using quant::fp16_fields;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Memory = std::unique_ptr<void, FreeDeleter>;

Memory alloc64(size_t size) { return Memory(std::aligned_alloc(64, (size + 63) / 64 * 64)); }

// n_rows rows of n elements of weight type t: random bytes, finite fp16 scales.
Memory random_weights(DType t, int64_t n, int64_t n_rows, uint32_t seed) {
  const size_t bytes = dtype_row_size(t, n) * size_t(n_rows);
  Memory m = alloc64(bytes);
  auto* p = static_cast<uint8_t*>(m.get());
  std::mt19937 rng(seed);
  for (size_t i = 0; i < bytes; i += 4) {
    const uint32_t r = rng();
    std::memcpy(p + i, &r, std::min<size_t>(4, bytes - i));
  }
  const size_t bb = dtype_traits(t).type_size;
  std::uniform_real_distribution<float> scale(-0.01f, 0.01f);
  for (size_t off = 0; off < bytes; off += bb) {
    for (size_t field : fp16_fields(t)) {
      const uint16_t h = f32_to_f16(scale(rng));
      std::memcpy(p + off + field, &h, 2);
    }
  }
  return m;
}

std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

void bench_dot(benchmark::State& state, DType t, Isa isa) {
  const QuantKernels* k = quant_kernels_for(isa);
  if (!k) {
    state.SkipWithError("ISA not supported on this CPU");
    return;
  }
  const QuantMatmul mm = quant_matmul(*k, t);
  const Memory x = random_weights(t, kRow, 1, 1);
  const std::vector<float> act = random_floats(kRow, 2);
  Memory y = alloc64(dtype_row_size(mm.partner, kRow));
  mm.quantize(act.data(), y.get(), kRow);
  for (auto _ : state) benchmark::DoNotOptimize(mm.dot(kRow, x.get(), y.get()));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(dtype_row_size(t, kRow)));
}

void bench_mul_mat(benchmark::State& state, DType t, Isa isa, int64_t n, int threads) {
  const Isa saved = active_isa();
  if (!set_active_isa(isa)) {
    state.SkipWithError("ISA not supported on this CPU");
    return;
  }
  Graph g;
  Tensor* w = g.arena().new_tensor(t, {kRow, kRow, 1, 1});  // [n_embd, n_out]
  Tensor* a = g.arena().new_tensor(DType::F32, {kRow, n, 1, 1});
  Tensor* out = ops::mul_mat(g, w, a);
  g.expand(out);
  const Memory wm = random_weights(t, kRow, kRow, 3);
  const std::vector<float> act = random_floats(kRow * n, 4);
  Memory am = alloc64(act.size() * sizeof(float));
  std::memcpy(am.get(), act.data(), act.size() * sizeof(float));
  Memory om = alloc64(out->nbytes());
  w->data = wm.get();
  a->data = am.get();
  out->data = om.get();
  CpuBackend backend(threads);
  for (auto _ : state) {
    const Status s = backend.compute(g);
    if (!s.is_ok()) {
      state.SkipWithError(s.message().c_str());
      break;
    }
  }
  const double runs = double(state.iterations());
  state.SetBytesProcessed(int64_t(runs * double(w->nbytes())));
  state.counters["GOP/s"] = benchmark::Counter(
      runs * 2.0 * double(kRow) * double(kRow) * double(n) / 1e9, benchmark::Counter::kIsRate);
  set_active_isa(saved);
}

int register_all() {
  for (DType t : kTypes) {
    for (Isa isa : kIsas) {
      const std::string name = std::string(dtype_name(t)) + "/" + std::string(isa_name(isa));
      benchmark::RegisterBenchmark(("quant_dot/" + name).c_str(), bench_dot, t, isa);
    }
  }
  for (DType t : kTypes) {
    for (Isa isa : kIsas) {
      for (int64_t n : {int64_t(1), int64_t(32)}) {
        for (int threads : {1, 2}) {
          const std::string name = "quant_mul_mat/" + std::string(dtype_name(t)) + "/" +
                                   std::string(isa_name(isa)) + "/rows:" + std::to_string(n) +
                                   "/threads:" + std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), bench_mul_mat, t, isa, n, threads)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        }
      }
    }
  }
  return 0;
}

[[maybe_unused]] const int kRegistered = register_all();

}  // namespace
}  // namespace tessera::cpu
