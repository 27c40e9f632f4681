// Microbenchmarks of the CPU vector kernels, per instruction-set level: bytes of
// operands streamed per second (GB/s) for the dot products the matmuls are made of.
//   build/tessera_bench_kernels --benchmark_filter=dot
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "backend/cpu/vec.h"
#include "core/fp16.h"

namespace tessera::cpu {
namespace {

void bench_dot_f32(benchmark::State& state, Isa isa) {
  const VecKernels* k = vec_kernels_for(isa);
  if (!k) {
    state.SkipWithError("ISA not supported on this CPU");
    return;
  }
  const int64_t n = state.range(0);
  std::vector<float> a(size_t(n), 0.5f), b(size_t(n), 0.25f);
  for (auto _ : state) benchmark::DoNotOptimize(k->dot_f32(a.data(), b.data(), n));
  state.SetBytesProcessed(int64_t(state.iterations()) * n * 8);
}

void bench_dot_f16_f32(benchmark::State& state, Isa isa) {
  const VecKernels* k = vec_kernels_for(isa);
  if (!k) {
    state.SkipWithError("ISA not supported on this CPU");
    return;
  }
  const int64_t n = state.range(0);
  std::vector<uint16_t> a(size_t(n), f32_to_f16(0.5f));
  std::vector<float> b(size_t(n), 0.25f);
  for (auto _ : state) benchmark::DoNotOptimize(k->dot_f16_f32(a.data(), b.data(), n));
  state.SetBytesProcessed(int64_t(state.iterations()) * n * 6);
}

void bench_f16_to_f32(benchmark::State& state, Isa isa) {
  const VecKernels* k = vec_kernels_for(isa);
  if (!k) {
    state.SkipWithError("ISA not supported on this CPU");
    return;
  }
  const int64_t n = state.range(0);
  std::vector<uint16_t> a(size_t(n), f32_to_f16(0.5f));
  std::vector<float> y(static_cast<size_t>(n));
  for (auto _ : state) {
    k->f16_to_f32(a.data(), y.data(), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n * 6);
}

BENCHMARK_CAPTURE(bench_dot_f32, reference, Isa::Reference)->Arg(4096)->Arg(65536);
BENCHMARK_CAPTURE(bench_dot_f32, avx2, Isa::Avx2)->Arg(4096)->Arg(65536);
BENCHMARK_CAPTURE(bench_dot_f32, avx512, Isa::Avx512)->Arg(4096)->Arg(65536);
BENCHMARK_CAPTURE(bench_dot_f16_f32, reference, Isa::Reference)->Arg(4096)->Arg(65536);
BENCHMARK_CAPTURE(bench_dot_f16_f32, avx2, Isa::Avx2)->Arg(4096)->Arg(65536);
BENCHMARK_CAPTURE(bench_dot_f16_f32, avx512, Isa::Avx512)->Arg(4096)->Arg(65536);
BENCHMARK_CAPTURE(bench_f16_to_f32, reference, Isa::Reference)->Arg(4096);
BENCHMARK_CAPTURE(bench_f16_to_f32, avx2, Isa::Avx2)->Arg(4096);
BENCHMARK_CAPTURE(bench_f16_to_f32, avx512, Isa::Avx512)->Arg(4096);

}  // namespace
}  // namespace tessera::cpu
