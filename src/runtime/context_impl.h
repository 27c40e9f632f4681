// The state behind a Context: the KV cache, the graph cache, the K-shift graph and the
// outputs of the last decode. decode.cpp evaluates batches, state.cpp saves and
// restores, context.cpp holds the public methods.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "backend/scheduler.h"
#include "model/model_impl.h"
#include "runtime/forward_graph.h"
#include "runtime/kv_cache.h"
#include "runtime/kv_shift.h"
#include "tessera/batch.h"
#include "tessera/context.h"

namespace tessera {

class ContextImpl {
 public:
  /// `hparams`: the model's with the context's RoPE scaling (apply_rope_scaling).
  ContextImpl(const Model& model, const ContextParams& params, HParams hparams,
              std::vector<std::unique_ptr<Backend>> backends);

  Status init();
  /// Checks a batch against the vocabulary, the sequence ids and the cache.
  Status validate(const Batch& batch) const;
  Status decode(const Batch& batch);
  /// Sequence ids accepted by the sequence operations (`allow_all`: -1 = every one).
  Status check_seq(const char* what, SeqId seq, bool allow_all) const;
  /// Whether cached tokens may change position (not with learned absolute positions).
  Status check_movable(const char* what) const;
  /// Forgets the cache and the outputs.
  void clear();

  const Model& model_;
  const detail::ModelImpl& m_;
  ContextParams params_;
  HParams hparams_;  // the model's, rotating as params_.rope says: the graphs' and shifts'
  // One backend per backend of the model's placement: a CPU backend with its share of the
  // threads, a GPU's stream, or (MPI) the rank computing those layers.
  std::vector<std::unique_ptr<Backend>> backends_;
  std::unordered_map<const Tensor*, int> cache_backend_;  // the KV tensors' backends
  Scheduler sched_;
  std::unique_ptr<KvCache> kv_;
  KvShift shift_;
  ForwardGraphCache graphs_;
  std::vector<float> adapter_scales_;  // the adapters' user scales (ModelInfo::adapters order)

  // Outputs of the last decode: row out_row_[i] of logits_/embd_ for batch token i
  // (-1 when its outputs were not asked for).
  std::vector<float> logits_;  // [n_out_][n_vocab]
  std::vector<float> embd_;    // [n_out_][n_embd] when params_.embeddings
  std::vector<int32_t> out_row_;
  int64_t n_out_ = 0;
  int mpi_id_ = -1;  // rank 0 of an MPI job: the id the other ranks know this context by

 private:
  /// Tokens per forward pass: n_ubatch, else n_batch (MPI: a sixteenth of it, at least 32,
  /// so that the ranks work on different micro-batches of a prompt at the same time).
  int64_t ubatch_size() const;
  Status decode_ubatch(const Batch& batch, int64_t begin, int64_t end);
  Status copy_outputs(const ForwardGraph& fg, const Batch& batch, int64_t begin, int64_t end);
};

}  // namespace tessera
