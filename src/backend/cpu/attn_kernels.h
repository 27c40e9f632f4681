// The inner kernel of the attention op (ops/attention.h): up to 16 query rows that read
// the same KV head, against n cells, start to finish (scores, mask, softmax, weighted
// sum of values). One table per vector level; the reference level (kernels/reference/
// attention.cpp) states the computation, AVX-512 (kernels/x86_avx512/attention.cpp) keeps
// one query row per 512-bit lane, so K and V rows are read in their natural layout as
// broadcast scalars and no transposes are needed. AVX2 (kernels/x86_avx2/attention.cpp)
// keeps lanes over 8 cells (transposed keys) for the scores and over the head dimension
// for the values, all rows of the tile at once. A level may also read an F16
// cache directly (tile_f16) for KV heads whose rows fit one tile, as in decode.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/vec.h"

namespace tessera::cpu {

constexpr int kAttnRows = 16;

struct AttnTile {
  int rows = 0;     // query rows, 1..16
  int64_t n = 0;    // cells
  int64_t hd = 0;   // head dimension of queries and keys
  int64_t vd = 0;   // head dimension of values and outputs (hd but for DeepSeek's MLA)
  const float* q[kAttnRows] = {};  // per row: hd floats, already multiplied by the scale
  const float* mask = nullptr;     // null, or row r's n mask values at mask + mask_off[r]
  int32_t mask_off[kAttnRows] = {};
  const float* k = nullptr;  // cell c's key at k + c * k_stride (hd floats)
  size_t k_stride = 0;
  const float* v = nullptr;  // cell c's value at v + c * v_stride (vd floats)
  size_t v_stride = 0;
  // tile_f16 reads the F16 cache instead of k and v: cell c's key at k16 + c * k_stride
  // and its value at v16 + c * v_stride (strides in elements).
  const uint16_t* k16 = nullptr;
  const uint16_t* v16 = nullptr;
  float* out[kAttnRows] = {};  // per row: vd floats written
  float softcap = 0.0f;        // > 0: each score becomes softcap tanh(score / softcap) before
                               // the mask (the reference level's tile only)
  float* scratch = nullptr;    // attn_scratch_floats(n, max(hd, vd)) floats, 64-byte aligned
};

/// Scratch floats a tile of n cells and head size hd (the larger of the key's and the
/// value's) needs (either kind of tile).
constexpr size_t attn_scratch_floats(int64_t n, int64_t hd) {
  return size_t(n + hd + 32) * size_t(kAttnRows);
}

/// out[r] = sum_c softmax_c(q[r] . k[c] + mask[r][c]) v[c]; a row whose every cell is
/// masked (-inf) gets zeros.
using AttnTileFn = void (*)(const AttnTile& t);

struct AttnKernels {
  Isa isa;
  AttnTileFn tile;
  // The same result from an F16 cache (k16, v16), or null where the level has none (the
  // op then converts the cache to F32 first).
  AttnTileFn tile_f16 = nullptr;
};

/// The kernels of the active vector level, or the reference ones where it has none.
const AttnKernels& attn_kernels();
/// A level's table, or null where the CPU lacks it or the level has no own kernels.
const AttnKernels* attn_kernels_for(Isa isa);

namespace reference {
extern const AttnKernels kAttnKernels;
}
namespace avx2 {
extern const AttnKernels kAttnKernels;
}
namespace avx512 {
extern const AttnKernels kAttnKernels;
}

}  // namespace tessera::cpu
