// The KV cache: per layer a K and a V tensor with one row per cell, and per cell the
// position stored there, the set of sequences using it (a 64-bit set) and the token
// that produced it. The causal mask of a batch is built from the cells, so the graph
// never needs to know where in the cache a token went, and sequences can share cells
// (seq_cp) without copying data. Position shifts (seq_add) are recorded per cell and
// applied to the cached keys later by a small RoPE graph (runtime/kv_shift.h).
//
// Placement: the cells are split into n_seq equal home regions; a token of sequence s
// takes the lowest free cell of region s (of its lowest sequence id when it has
// several), or the lowest free cell anywhere when its region is full or s >= n_seq
// (sequences without a home region). A sequence's cells
// thus stay close together, and a batch's tokens attend over a window around their own
// sequence (window()) instead of the whole cache.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/blocks.h"
#include "tessera/batch.h"

namespace tessera {

/// A set of sequence ids (bit s = sequence s).
using SeqMask = uint64_t;
constexpr int kMaxSeq = 64;
inline SeqMask seq_bit(SeqId s) { return SeqMask{1} << s; }

struct KvCell {
  Pos pos = -1;         // -1 when free
  Pos shift = 0;        // position delta not yet applied to the cached key
  TokenId token = -1;   // the token whose key/value the cell holds
  SeqMask seqs = 0;     // sequences using the cell; 0 when free
  bool free() const { return seqs == 0; }
};

class KvCache {
 public:
  /// Allocates n_ctx cells for every layer, keys of type_k and values of type_v (one of
  /// kv_cache_types(); a block-quantized type needs the head size a multiple of its
  /// block), layer il on layer_backends[il] (its layer's backend; the tensors of a layer
  /// on another MPI rank get no memory here), placed in n_seq home regions.
  static Result<std::unique_ptr<KvCache>> create(const HParams& h, int64_t n_ctx, int n_seq, DType type_k,
                                                 DType type_v, std::span<Backend* const> layer_backends);
  /// A cache of n_ctx cells with no tensors: cell bookkeeping only (tests).
  static std::unique_ptr<KvCache> cells_only(int64_t n_ctx, int n_seq = 1);

  int64_t n_ctx() const { return int64_t(cells_.size()); }
  DType type_k() const { return type_k_; }
  DType type_v() const { return type_v_; }
  /// Bytes of the keys and values of every layer held here.
  int64_t bytes() const;
  const std::vector<KvLayer>& layers() const { return layers_; }
  const KvCell& cell(int64_t i) const { return cells_[size_t(i)]; }
  /// Number of cells in use.
  int64_t n_used() const;

  /// Free cells for tokens of the sequence sets `seqs`, one each, by the placement rule
  /// above; an error naming the cache size when fewer are free.
  Result<std::vector<int32_t>> find_slots(std::span<const SeqMask> seqs) const;
  /// Records that `cell` now holds `token` at `pos` for the sequences `seqs`.
  void store(int32_t cell, Pos pos, SeqMask seqs, TokenId token);
  /// Cells [0, n) that a batch must attend to: up to the last used cell, rounded up
  /// to kPad so that a graph serves many steps.
  int64_t n_kv() const;
  /// The cells [begin, end) that tokens of the sequences `seqs` at positions up to
  /// `max_pos` may attend to: from the first to the last such cell, widened to multiples
  /// of kPad (so that a graph serves many steps) within the cache.
  std::pair<int64_t, int64_t> window(SeqMask seqs, Pos max_pos) const;
  /// Fills mask [n_kv, n_tokens] for cells [kv_begin, kv_begin + n_kv) (row i for token
  /// i): where the cell is used by one of the token's sequences, holds a position <= the
  /// token's (any position when the mask is not causal) and (sliding window) fewer than n_swa positions back, 0 (ALiBi: minus the
  /// distance in positions, which the attention op scales by each head's slope); -inf
  /// otherwise. `window` false: without the sliding window (the plain layers of a model
  /// whose layers differ, HParams::mixed_swa).
  void fill_mask(std::span<const Pos> positions, std::span<const SeqMask> seqs, int64_t kv_begin,
                 int64_t n_kv, float* mask, bool window = true) const;

  // Sequence operations. `seq` < 0 means every sequence; a position range [p0, p1)
  // with p0 < 0 meaning 0 and p1 < 0 meaning "to the end".
  /// Removes `seq` from the cells in the range; cells left without sequence are freed.
  void seq_rm(SeqId seq, Pos p0, Pos p1);
  /// Adds `dst` to the cells of `src` in the range (shared, not copied).
  void seq_cp(SeqId src, SeqId dst, Pos p0, Pos p1);
  /// Gives `dst` cells of its own (placed by the rule above, as if `dst` decoded them)
  /// holding copies of the keys, values, positions and pending shifts of `src`'s cells in
  /// the range. Error, changing nothing, when too few cells are free.
  Status seq_copy(SeqId src, SeqId dst, Pos p0, Pos p1);
  /// Free cells in the home region of `seq` (0 for a sequence without one).
  int64_t home_free(SeqId seq) const;
  /// Frees every cell not used by `seq` and removes the other sequences from the rest.
  void seq_keep(SeqId seq);
  /// Adds `delta` to the positions of `seq`'s cells in the range (cells pushed below 0
  /// are freed). Error, changing nothing, when such a cell is shared with a sequence
  /// outside the operation (shifting it would move that sequence too).
  Status seq_add(SeqId seq, Pos p0, Pos p1, Pos delta);
  /// Largest (smallest) position of `seq`, or -1 when it has no cells.
  Pos seq_pos_max(SeqId seq) const;
  Pos seq_pos_min(SeqId seq) const;
  /// seq_pos_max of every sequence id, in one pass over the cells.
  std::array<Pos, kMaxSeq> seq_pos_maxes() const;
  /// Tokens of `seq` ordered by position.
  std::vector<TokenId> seq_tokens(SeqId seq) const;

  /// Whether some cell has a shift not yet applied to its key.
  bool has_shift() const { return has_shift_; }
  /// The pending shift of cells [0, n): what the K-shift graph rotates keys by.
  std::vector<int32_t> shifts(int64_t n) const;
  /// Marks every pending shift as applied.
  void clear_shifts();

  /// The mask rule (fill_mask): ALiBi distances, and a sliding window of n_swa positions
  /// (0: none). create() takes them from the model's hyper-parameters.
  void set_mask_rule(bool alibi, int64_t n_swa) {
    alibi_ = alibi;
    n_swa_ = n_swa;
  }

  /// Causal masks (the default): a token sees cells at positions up to its own. False
  /// (encoders): every cell of its sequences. create() takes it from the model.
  void set_causal(bool causal) { causal_ = causal; }

  /// Replaces cell `i` wholesale (state restore).
  void set_cell(int64_t i, const KvCell& c);
  /// Frees every cell (the tensors keep their bytes; freed cells are masked out).
  void clear();

  static constexpr int64_t kPad = 32;

 private:
  KvCache() = default;
  DType type_k_ = DType::F16;
  DType type_v_ = DType::F16;
  TensorArena arena_;
  std::vector<std::unique_ptr<Buffer>> buffers_;  // one per backend
  std::vector<KvLayer> layers_;
  std::vector<KvCell> cells_;
  int n_seq_ = 1;
  bool has_shift_ = false;
  bool alibi_ = false;
  int64_t n_swa_ = 0;
  bool causal_ = true;
};

}  // namespace tessera
