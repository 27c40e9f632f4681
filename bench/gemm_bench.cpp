// Microbenchmark of the GEMM kernels over repacked weights (backend/cpu/gemm_kernels.h),
// one thread. Names end in /columns/k.
// - gemm_x16: data in cache, 8 groups of 16 rows x k = 2048 against n activation
//   columns (1 = decode, 64 = prompt). The counter GMAC/s is 16 * 8 * 2048 * n
//   multiply-adds per run; compare with the machine's peak (vpdpbusd zmm: 64 MACs per
//   instruction, vdpbf16ps zmm: 32, FMA zmm: 16; AVX2: vpmaddubsw ymm 32, with a vpmaddwd
//   to widen).
// - gemm_x16_stream: a ~256 MB matrix on 2 MiB pages, as a model streams its weights
//   from memory: decode (1 column; k = 2048, and an ffn_down row's 5632, whose groups
//   are longer than the prefetch distance; bytes_per_second is the weight bytes read,
//   compare with a plain read loop on one core) and prompt chunks of 24 and 120 columns
//   (what mul_mat hands a thread per group; GMAC/s against the in-cache 64).
//   build/tessera_bench_kernels --benchmark_filter=gemm_x16
// Weights are random bytes with fp16 scales of 1: speed does not depend on the values.
#include <benchmark/benchmark.h>

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/repack.h"
#include "core/fp16.h"
#include "quant/blocks.h"

namespace tessera::cpu {
namespace {

constexpr int64_t kRows = 8 * kGroupRows;
constexpr double kStreamBytes = 256e6;
constexpr size_t kHugePage = size_t(2) << 20;

struct Case {
  DType type;
  size_t block_bytes;    // file bytes per block
  int64_t block_elems;   // elements per block
  size_t scale_offset;   // offset of the block's fp16 d (set to 1.0)
};

const Case kCases[] = {
    {DType::Q4_0, sizeof(quant::BlockQ4_0), 32, offsetof(quant::BlockQ4_0, d)},
    {DType::Q8_0, sizeof(quant::BlockQ8_0), 32, offsetof(quant::BlockQ8_0, d)},
    {DType::Q4_K, sizeof(quant::BlockQ4_K), 256, offsetof(quant::BlockQ4_K, d)},
    {DType::Q6_K, sizeof(quant::BlockQ6_K), 256, offsetof(quant::BlockQ6_K, d)},
    {DType::F16, 2, 1, 0},
    {DType::BF16, 2, 1, 0},
};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// `rows` repacked rows (a multiple of 16) of k random weights, on 2 MiB pages.
std::unique_ptr<uint8_t, FreeDeleter> packed_weights(const Case& c, int64_t rows, int64_t kK) {
  const int64_t nb = kK / c.block_elems;
  const size_t group_bytes = size_t(kGroupRows * nb) * c.block_bytes;
  const size_t bytes = group_bytes * size_t(rows / kGroupRows);
  const size_t reserved = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  std::unique_ptr<uint8_t, FreeDeleter> packed(static_cast<uint8_t*>(std::aligned_alloc(kHugePage, reserved)));
  ::madvise(packed.get(), reserved, MADV_HUGEPAGE);
  std::mt19937 rng(1);
  std::vector<uint8_t> w(group_bytes);  // one group at a time, repacked into place
  for (int64_t g0 = 0; g0 < rows; g0 += kGroupRows) {
    for (uint8_t& b : w) b = uint8_t(rng());
    for (int64_t i = 0; i < kGroupRows * nb; ++i) {  // fp16 1.0 (F16 / BF16: every element, 1.0 / 2^-7)
      w[size_t(i) * c.block_bytes + c.scale_offset] = 0x00;
      w[size_t(i) * c.block_bytes + c.scale_offset + 1] = 0x3c;
    }
    repack_rows(c.type, w.data(), packed.get() + size_t(g0 / kGroupRows) * group_bytes, kGroupRows, kK);
  }
  return packed;
}

// Args: columns, and k (the row length). In cache: kRows rows; streamed: ~kStreamBytes.
void run(benchmark::State& state, const Case& c, const GemmKernels& g, bool stream) {
  const int64_t n_cols = state.range(0), kK = state.range(1);
  const int64_t rows = stream ? int64_t(kStreamBytes / double(kK / c.block_elems) / double(c.block_bytes)) /
                                    kGroupRows * kGroupRows
                              : kRows;
  const int64_t nb = kK / c.block_elems;
  std::mt19937 rng(2);
  const std::unique_ptr<uint8_t, FreeDeleter> packed = packed_weights(c, rows, kK);
  std::vector<float> x(size_t(n_cols * kK));
  for (float& v : x) v = float(rng() % 2001) / 1000.0f - 1.0f;
  const bool k_quant = c.block_elems == 256;
  const size_t act_row = c.type == DType::F16    ? size_t(kK) * 4
                         : c.type == DType::BF16 ? size_t(kK) * 2
                         : k_quant               ? size_t(nb) * sizeof(BlockQ8KX)
                                                 : size_t(nb) * sizeof(BlockQ8X);
  std::vector<uint8_t> act(act_row * size_t(n_cols));
  for (int64_t col = 0; col < n_cols; ++col) {
    if (k_quant) {
      g.quantize_q8kx(x.data() + col * kK, act.data() + col * act_row, kK);
    } else if (c.type == DType::BF16) {
      for (int64_t e = 0; e < kK; ++e) {
        const uint16_t h = f32_to_bf16(x[size_t(col * kK + e)]);
        std::memcpy(act.data() + col * act_row + size_t(e) * 2, &h, 2);
      }
    } else if (c.type != DType::F16) {
      g.quantize_q8x(x.data() + col * kK, act.data() + col * act_row, kK, x16_zero_point(repacked_type(c.type)));
    }
  }
  std::vector<float> out(static_cast<size_t>(rows * n_cols));
  const size_t group_bytes = size_t(kGroupRows * nb) * c.block_bytes;
  for (auto _ : state) {
    if (c.type == DType::BF16) {  // in runs of 8 groups, as mul_mat hands them to a thread
      for (int64_t grp = 0; grp < rows / kGroupRows; grp += 8) {
        g.gemm_bf16_x16(packed.get() + size_t(grp) * group_bytes, std::min<int64_t>(8, rows / kGroupRows - grp), kK,
                        reinterpret_cast<const uint16_t*>(act.data()), size_t(kK), n_cols,
                        out.data() + grp * kGroupRows, size_t(rows));
      }
    } else if (c.type == DType::F16) {  // in runs of 8 groups, likewise
      for (int64_t grp = 0; grp < rows / kGroupRows; grp += 8) {
        g.gemm_f16_x16(packed.get() + size_t(grp) * group_bytes, std::min<int64_t>(8, rows / kGroupRows - grp), kK,
                       x.data(), size_t(kK), n_cols, out.data() + grp * kGroupRows, size_t(rows));
      }
    } else {  // in runs of 8 groups, as mul_mat hands them to a thread
      for (int64_t grp = 0; grp < rows / kGroupRows; grp += 8) {
        gemm_x16(g, repacked_type(c.type))(packed.get() + size_t(grp) * group_bytes,
                                           std::min<int64_t>(8, rows / kGroupRows - grp), nb, act.data(),
                                           act_row, n_cols, out.data() + grp * kGroupRows, size_t(rows));
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GMAC/s"] = benchmark::Counter(double(rows * kK * n_cols) * 1e-9 * double(state.iterations()),
                                                benchmark::Counter::kIsRate);
  state.SetBytesProcessed(int64_t(group_bytes) * (rows / kGroupRows) * int64_t(state.iterations()));
}

[[maybe_unused]] const bool kRegistered = [] {
  const std::pair<const GemmKernels*, std::string> tables[] = {
      {gemm_kernels_for(Isa::Reference), "reference"},
      {gemm_kernels_avx2(false), "avx2"},
      {gemm_kernels_avx2(true), "avx2vnni"},
      {gemm_kernels_for(Isa::Avx512), "avx512"}};
  for (const auto& table : tables) {
    const GemmKernels* g = table.first;  // not a structured binding: clang 14 cannot capture those
    const std::string& level = table.second;
    if (g == nullptr) continue;
    const Isa isa = g->isa;
    for (const Case& c : kCases) {
      const std::string name = "gemm_x16/" + std::string(dtype_name(c.type)) + "/" + level;
      benchmark::RegisterBenchmark(name.c_str(), [&c, g](benchmark::State& s) { run(s, c, *g, false); })
          ->Args({1, 2048})
          ->Args({64, 2048});
      if (isa == Isa::Reference) continue;
      const std::string stream = "gemm_x16_stream/" + std::string(dtype_name(c.type)) + "/" + level;
      benchmark::RegisterBenchmark(stream.c_str(), [&c, g](benchmark::State& s) { run(s, c, *g, true); })
          ->Args({1, 2048})
          ->Args({1, 5632})
          ->Args({24, 2048})
          ->Args({120, 2048})
          ->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}();

}  // namespace
}  // namespace tessera::cpu
