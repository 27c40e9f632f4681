// The KV cache: per layer a K and a V tensor with one row per cell, and per cell the
// position stored there (-1 when free). The causal mask of a batch is built from the
// cells, so the graph never needs to know where in the cache a token went.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/blocks.h"

namespace tessera {

class KvCache {
 public:
  /// Allocates n_ctx cells of `type` (F16 or F32) for every layer on `backend`.
  static Result<std::unique_ptr<KvCache>> create(const HParams& h, int64_t n_ctx, DType type,
                                                 Backend& backend);

  int64_t n_ctx() const { return int64_t(cell_pos_.size()); }
  DType type() const { return type_; }
  const std::vector<KvLayer>& layers() const { return layers_; }

  /// Claims one free cell per position (lowest free cells first) and returns them;
  /// an error when fewer than positions.size() cells are free.
  Result<std::vector<int32_t>> claim(std::span<const int32_t> positions);
  /// Cells [0, n) that a batch must attend to: up to the last used cell, rounded up
  /// to kPad so that a graph serves many steps.
  int64_t n_kv() const;
  /// Fills mask [n_kv, positions.size()]: 0 where cell j holds a position <= the
  /// token's position, -inf otherwise.
  void fill_mask(std::span<const int32_t> positions, int64_t n_kv, float* mask) const;
  /// Frees every cell (the tensors keep their bytes; freed cells are masked out).
  void clear();

  static constexpr int64_t kPad = 32;

 private:
  KvCache() = default;
  DType type_ = DType::F16;
  TensorArena arena_;
  std::unique_ptr<Buffer> buffer_;
  std::vector<KvLayer> layers_;
  std::vector<int32_t> cell_pos_;
};

}  // namespace tessera
