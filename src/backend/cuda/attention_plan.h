// How the CUDA attention op is cut into blocks: which kernel (decode or flash), its tile
// sizes by head dimension, and how the cells are split over blocks when the heads alone
// cannot fill the GPU. Plain C++, unit-tested on the host
// (tests/unit/cuda_host_parts_test.cpp); attention.cu instantiates the kernels for
// exactly these values.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tessera::cuda {

inline constexpr int kAttnMaxHeadDim = 256;
/// Query rows per KV head (grouped heads x tokens) up to which the decode kernel runs.
inline constexpr int kAttnDecodeMaxRows = 8;
/// ALiBi slopes are kernel arguments: one float per query head.
inline constexpr int kAttnMaxAlibiHeads = 256;
/// A split covers at least this many cells (fewer and the reduce costs more than it saves).
inline constexpr int64_t kAttnMinCellsPerSplit = 256;
inline constexpr int kAttnMaxSplits = 32;

/// The head dimension the kernels are compiled for (64, 128 or 256; the rest padded with
/// zeros), or 0 when the head is too large.
constexpr int attn_head_bucket(int64_t hd) {
  return hd <= 0 ? 0 : hd <= 64 ? 64 : hd <= 128 ? 128 : hd <= kAttnMaxHeadDim ? 256 : 0;
}

/// The flash kernel's query rows (br) and cells (bc) per tile for a head bucket: Q, K, V
/// and the scores of a tile in under 48 KiB of shared memory, with 128 threads.
struct FlashTile {
  int br;
  int bc;
};
constexpr FlashTile flash_tile(int bucket) {
  return bucket == 64 ? FlashTile{16, 64} : bucket == 128 ? FlashTile{16, 32} : FlashTile{8, 16};
}

/// The decode kernel's row capacity (1, 2, 4 or 8) for `rows` query rows.
constexpr int decode_rows_bucket(int64_t rows) {
  return rows <= 1 ? 1 : rows <= 2 ? 2 : rows <= 4 ? 4 : 8;
}

struct AttnPlan {
  bool decode = false;  // the decode kernel (else flash)
  int bucket = 0;       // head dimension compiled for
  int rows_cap = 0;     // decode: rows bucket; flash: br
  int64_t tiles = 1;    // row tiles per KV head (1 for decode)
  int splits = 1;       // cell ranges per row tile; > 1 adds a reduce kernel
  int64_t cells_per_split = 0;
};

/// rows: query rows per KV head (n_head / n_head_kv * n_tokens). Splits the cells when
/// the KV heads' tiles make fewer than two blocks per SM, each split a whole number of
/// the kernel's cell tiles and at least kAttnMinCellsPerSplit cells.
inline AttnPlan plan_attention(int64_t hd, int64_t rows, int64_t n_kv, int64_t n_head_kv,
                               int sm_count) {
  AttnPlan p;
  p.bucket = attn_head_bucket(hd);
  p.decode = rows <= kAttnDecodeMaxRows;
  const int64_t granule = p.decode ? 32 : flash_tile(p.bucket).bc;
  p.rows_cap = p.decode ? decode_rows_bucket(rows) : flash_tile(p.bucket).br;
  p.tiles = p.decode ? 1 : (rows + p.rows_cap - 1) / p.rows_cap;
  const int64_t blocks = std::max<int64_t>(n_head_kv * p.tiles, 1);
  const int64_t target = 2 * int64_t(std::max(sm_count, 1));
  int64_t splits = 1;
  if (blocks < target) {
    splits = std::min<int64_t>(
        {(target + blocks - 1) / blocks, n_kv / kAttnMinCellsPerSplit, kAttnMaxSplits});
    splits = std::max<int64_t>(splits, 1);
  }
  int64_t cells = (n_kv + splits - 1) / splits;
  cells = (cells + granule - 1) / granule * granule;
  p.cells_per_split = cells;
  p.splits = cells == 0 ? 1 : int((n_kv + cells - 1) / cells);
  return p;
}

}  // namespace tessera::cuda
