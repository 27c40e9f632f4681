// Pieces the x86 kernel files (kernels/x86_avx2, kernels/x86_avx512) share: for the
// _X16 GEMMs the loop over register tiles, the software prefetch of the weight stream,
// the L1 round trip for decode and the activation quantizers; for the attention tiles
// (tile_f16) the loop over row chunks and the prefetch of cache rows. Everything here has internal linkage (an
// unnamed namespace), so each kernel file compiles its own copy with its own target
// flags: with ordinary inline functions the linker would keep one copy for both levels,
// possibly the AVX-512 one, which an AVX2-only CPU cannot run.
#pragma once

#include <cpuid.h>
#include <xmmintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "backend/cpu/quant_kernels.h"
#include "backend/cpu/repack.h"

namespace tessera::cpu::x86 {
namespace {

// Software prefetch of the weight stream into L2. With the hardware prefetchers alone
// (which stop at 4 KiB pages) decode waits on memory latency. The whole stream is
// prefetched, not the quants alone (which leaves the scales and part of each group to
// demand misses); 64 KiB ahead brings one core's stream near a plain read loop's
// (docs/performance.md, "Kernel history").
constexpr size_t kAhead = 65536;

// The block at [pos, pos + bytes) of a group asks for the same bytes kAhead further on,
// so the prefetch sweeps the weights in memory order. F16 groups are plain rows, read
// in that order. Q4_0 and Q8_0 decode keep it too: their metadata is a ninth and a
// seventeenth of a block, and in block order (BlockPrefetch) they stream slower.
// Always inlined, as BlockPrefetch::part below, and for its reason.
[[gnu::always_inline]] inline void prefetch_stream(const uint8_t* group, size_t pos, size_t bytes) {
  const uint8_t* p = group + pos + kAhead;
  for (size_t l = 0; l < (bytes + 63) / 64; ++l) _mm_prefetch(reinterpret_cast<const char*>(p + l * 64), _MM_HINT_T1);
}

// The Q4_0 and Q8_0 decode tiles' prefetch: the same memory-order sweep kAhead ahead as
// prefetch_stream, one line at a time between the lines the tile reads (a step per line,
// and one more per block, so the sweep keeps up with blocks that are not whole lines),
// rather than all of a block's lines at its start or a computed share of them at each
// step (a division and a loop, which cost more than the line); this streams fastest of
// the three (docs/performance.md, "Kernel history"). Always inlined, as
// BlockPrefetch::part below, and for its reason.
class LineCursor {
 public:
  explicit LineCursor(const uint8_t* group)
      : next_(reinterpret_cast<const uint8_t*>((reinterpret_cast<uintptr_t>(group) + kAhead) & ~uintptr_t(63))) {}
  // The next line, unless the sweep has reached `upto` (kAhead past the end of what the
  // tile has read once the current block is done).
  [[gnu::always_inline]] void step(const uint8_t* upto) {
    if (next_ < upto) {
      _mm_prefetch(reinterpret_cast<const char*>(next_), _MM_HINT_T1);
      next_ += 64;
    }
  }

 private:
  const uint8_t* next_;
};

// A quantized group (repack.h) holds its blocks' quants, then their metadata (scales,
// mins): block b's quants at b * Q bytes, its metadata at nb * Q + b * M. The kernels
// read block after block, so the prefetch runs in that order: at block b it asks for the
// block `ahead` bytes of this order further on, in this group or, past its end, in the
// next group the kernel will read (next_group bytes on: the next group, or for decode
// in pairs the one after the partner).
//
// Why not the memory-order sweep of prefetch_stream: that is the same while a group is
// shorter than kAhead, but in longer groups (ffn_down, k = 5632) its front reaches a
// group's metadata only halfway through the group, and in pairs it reads the partner
// group as that is being read.
//
// part(i, parts) is step i of a block of `parts` steps: a share of the quants' lines,
// and at step 0 the metadata. A k-quant block is 36-53 lines; asked for all at once at
// the block's start, one core's decode stream is what it would be with no overlap of
// memory and compute at all; spread over the block it overlaps some (measured, with
// what did not help: docs/performance.md, "Kernel history").
template <size_t Q, size_t M>
class BlockPrefetch {
 public:
  BlockPrefetch(const uint8_t* group, size_t next_group, int64_t nb, size_t ahead)
      : group_(group), next_group_(next_group), nb_(nb), t_(int64_t(ahead / (Q + M))) {
    while (t_ >= nb_) t_ -= nb_, group_ += next_group_;
  }

  // Always inlined: GCC counts a prefetch as no side effect, so a call to a function
  // that only prefetches is a call to a pure function whose result is unused, and it
  // deletes the call unless the function was inlined first.
  [[gnu::always_inline]] void part(int i, int parts) const {
    constexpr size_t kLines = Q / 64;
    const uint8_t* q = group_ + size_t(t_) * Q;
    for (size_t l = kLines * size_t(i) / size_t(parts); l < kLines * size_t(i + 1) / size_t(parts); ++l)
      _mm_prefetch(reinterpret_cast<const char*>(q + l * 64), _MM_HINT_T1);
    if (i == 0) {  // the lines that start in this block's metadata (the line it starts in came with the last)
      const uintptr_t m = reinterpret_cast<uintptr_t>(group_ + size_t(nb_) * Q + size_t(t_) * M);
      for (uintptr_t a = (m + 63) & ~uintptr_t(63); a < m + M; a += 64)
        _mm_prefetch(reinterpret_cast<const char*>(a), _MM_HINT_T1);
    }
  }
  [[gnu::always_inline]] void all() const { part(0, 1); }

  // On to the next block.
  void advance() {
    if (++t_ == nb_) t_ = 0, group_ += next_group_;
  }

 private:
  const uint8_t* group_;
  size_t next_group_;
  int64_t nb_, t_;
};

// The prefetch of decode in pairs (groups g and g + 1 read side by side, then g + 2 and
// g + 3): each group's stream goes on two groups further, and each is prefetched half of
// kAhead ahead, so the pair has kAhead in flight as one group at a time does.
template <size_t Q, size_t M>
struct PairPrefetch {
  PairPrefetch(const uint8_t* w, size_t group_bytes, int64_t nb)
      : group{{w, 2 * group_bytes, nb, kAhead / 2}, {w + group_bytes, 2 * group_bytes, nb, kAhead / 2}} {}
  BlockPrefetch<Q, M> group[2];
};

// Calls tile(std::integral_constant<int, N>, c) for columns [c, c + N): full tiles of
// kMax columns, then one tile of the remaining width (register tiles need N at compile
// time).
template <int N, typename Tile>
void tail_tile(int64_t left, int64_t c, Tile tile) {
  if constexpr (N > 0) {
    if (left == N) return tile(std::integral_constant<int, N>{}, c);
    tail_tile<N - 1>(left, c, tile);
  }
}

template <int kMax, typename Tile>
void for_each_tile(int64_t n_cols, Tile tile) {
  int64_t c = 0;
  for (; c + kMax <= n_cols; c += kMax) tile(std::integral_constant<int, kMax>{}, c);
  tail_tile<kMax - 1>(n_cols - c, c, tile);
}

// The AVX-512 F16 and BF16 GEMMs over a run of n_groups groups of 16-bit weights,
// group_elems each: when `pairs` (prompts), two groups at a time in tiles of up to kPair
// columns (pair(std::integral_constant<int, N>, w, v, c, g): groups g and g + 1 at w and v,
// columns [c, c + N)), then what is left (decode, an odd last group) one group at a time
// in tiles of up to kOne (one(N, w, c, g)).
template <int kPair, int kOne, typename Pair, typename One>
void pairs_of_groups(const uint16_t* w, int64_t n_groups, int64_t group_elems, int64_t n_cols, bool pairs,
                     Pair pair, One one) {
  int64_t g = 0;
  for (; pairs && g + 2 <= n_groups; g += 2) {
    for_each_tile<kPair>(n_cols, [&](auto n, int64_t c) { pair(n, w + g * group_elems, w + (g + 1) * group_elems, c, g); });
  }
  for (; g < n_groups; ++g) for_each_tile<kOne>(n_cols, [&](auto n, int64_t c) { one(n, w + g * group_elems, c, g); });
}

// A k-quant GemmX16Fn over a run of n_groups groups of group_bytes: one column two
// groups at a time (pair(w, group_bytes, nb, act, dst): decode reads them side by side,
// kernels/x86_avx2/gemm_x16.cpp, "Decode in pairs"), everything else (other widths, an
// odd last group) one group at a time (one(w, nb, act, act_stride, n_cols, dst,
// dst_stride)).
template <typename Pair, typename One>
void pairs_then_groups(const void* w, size_t group_bytes, int64_t n_groups, int64_t nb, const void* act,
                       size_t act_stride, int64_t n_cols, float* dst, size_t dst_stride, Pair pair, One one) {
  const auto* groups = static_cast<const uint8_t*>(w);
  int64_t g = 0;
  if (n_cols == 1) {
    for (; g + 2 <= n_groups; g += 2)
      pair(groups + size_t(g) * group_bytes, group_bytes, nb, static_cast<const BlockQ8KX*>(act), dst + g * kGroupRows);
  }
  for (; g < n_groups; ++g)
    one(groups + size_t(g) * group_bytes, nb, act, act_stride, n_cols, dst + g * kGroupRows, dst_stride);
}

// Decode (one column) streams the weights from memory. Making the compiler store the
// block's unpacked weight registers to the stack and load them back before the dot
// products lets one core stream more on AMD (Zen 4) for Q4_0, the k-quants and F16;
// Q8_0, whose registers are the stream's loads themselves, gains nothing. Measured, not
// derived; our reading is that the dot products then wait on L1 loads in the load queue
// rather than in the vector scheduler, so the core runs further ahead and keeps more
// misses in flight.
//
// Not on Intel: there the round trip costs Q4_0 decode a fifth to a third of its stream.
// So the Q4_0 decode tiles take it where the CPU is AMD's (where it was measured to pay)
// and leave it out elsewhere; TESSERA_DECODE_L1=0|1 forces either, to measure a new
// machine. The F16 tiles keep it (their streams did not move either way on Intel). The
// AVX2 Q6_K decode pairs take it on AMD only too; the AVX-512 k-quant tiles keep it.
// The figures, per CPU: docs/performance.md, "Kernel history".
template <typename V, size_t M>
inline void through_l1(V (&w)[M]) {
  asm volatile("" : : "m"(w) : "memory");
}

inline bool decode_through_l1() {
  static const bool yes = [] {
    if (const char* env = std::getenv("TESSERA_DECODE_L1")) return std::strcmp(env, "0") != 0;
    unsigned a = 0, b = 0, c = 0, d = 0;
    __cpuid(0, a, b, c, d);
    return b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "AuthenticAMD"
  }();
  return yes;
}

// The activation quantizers of a level, over its quantizer table K.
template <const QuantKernels& K>
void quantize_q8x(const float* x, void* y, int64_t n, int32_t zero_point) {
  quantize_row_q8x(K.quantize_q8_0, x, static_cast<BlockQ8X*>(y), n, zero_point);
}

template <const QuantKernels& K>
void quantize_q8kx(const float* x, void* y, int64_t n) {
  quantize_row_q8kx(K.quantize_q8_K, x, static_cast<BlockQ8KX*>(y), n);
}

// Calls f(std::integral_constant<int, R>{}, r0) for rows [0, rows) in chunks of up to 8.
template <typename F>
void for_row_chunks(int rows, F f) {
  for (int r0 = 0; r0 < rows; r0 += 8) {
    switch (rows - r0 < 8 ? rows - r0 : 8) {
      case 1: f(std::integral_constant<int, 1>{}, r0); break;
      case 2: f(std::integral_constant<int, 2>{}, r0); break;
      case 3: f(std::integral_constant<int, 3>{}, r0); break;
      case 4: f(std::integral_constant<int, 4>{}, r0); break;
      case 5: f(std::integral_constant<int, 5>{}, r0); break;
      case 6: f(std::integral_constant<int, 6>{}, r0); break;
      case 7: f(std::integral_constant<int, 7>{}, r0); break;
      default: f(std::integral_constant<int, 8>{}, r0); break;
    }
  }
}

// Software prefetch (into L2) of an F16 cache row's hd elements, kAheadCells cells ahead
// of the one a tile is on: in a cache row every KV head has its part, so one head's rows
// are a stride the hardware prefetchers follow poorly. One core, the TinyLlama decode at
// 2048 cells (bench/attention_bench.cpp, AVX-512, during development): into L1 48 cells
// ahead ~12.5 ms per token, 16 ahead ~10.6; into L2 48-256 ahead ~8.6-8.8.
constexpr int64_t kAheadCells = 64;

inline void prefetch_row(const uint16_t* row, int64_t hd) {
  const char* p = reinterpret_cast<const char*>(row);
  for (int64_t off = 0; off < hd * 2; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
}

}  // namespace
}  // namespace tessera::cpu::x86
