// Evaluating a batch: validation, the pending K shift, then one forward pass per
// micro-batch of at most n_batch tokens, the outputs gathered per batch index.
#include <algorithm>
#include <array>
#include <string>

#include "core/check.h"
#include "runtime/context_impl.h"

namespace tessera {
namespace {

std::string token_where(int64_t i) { return "decode: batch token " + std::to_string(i); }

/// Writes a graph input (the scheduler placed it in its home backend's buffer).
void set_input(Tensor* t, const void* data, size_t size) { t->buffer->backend().set_tensor(t, data, 0, size); }

}  // namespace

Status ContextImpl::validate(const Batch& batch) const {
  if (batch.empty()) return Status::error("decode: the batch has no tokens");
  const int64_t n_vocab = m_.hparams.n_vocab;
  // The last position of each sequence so far: a token must come after it, so that a
  // (sequence, position) pair is never cached twice.
  std::array<Pos, kMaxSeq> last = kv_->seq_pos_maxes();
  for (int64_t i = 0; i < batch.size(); ++i) {
    const TokenId t = batch.token(i);
    if (t < 0 || t >= n_vocab) {
      return Status::error(token_where(i) + " has id " + std::to_string(t) +
                           ", outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    }
    const Pos p = batch.pos(i);
    if (p < 0) return Status::error(token_where(i) + " has the negative position " + std::to_string(p));
    if (m_.hparams.positions == PositionKind::Learned && p >= m_.hparams.n_ctx_train) {
      return Status::error(token_where(i) + " has position " + std::to_string(p) + ", but this " +
                           m_.hparams.arch + " model learned positions [0, " +
                           std::to_string(m_.hparams.n_ctx_train) + ") only");
    }
    const std::span<const SeqId> seqs = batch.seqs(i);
    if (seqs.empty()) return Status::error(token_where(i) + " belongs to no sequence");
    SeqMask seen = 0;
    for (SeqId s : seqs) {
      if (s < 0 || s >= params_.n_seq_max) {
        return Status::error(token_where(i) + ": sequence id " + std::to_string(s) +
                             " out of range [0, " + std::to_string(params_.n_seq_max) +
                             ") (raise ContextParams::n_seq_max)");
      }
      if (seen & seq_bit(s)) {
        return Status::error(token_where(i) + " names sequence " + std::to_string(s) + " twice");
      }
      seen |= seq_bit(s);
      if (p <= last[size_t(s)]) {
        return Status::error(token_where(i) + ": position " + std::to_string(p) + " of sequence " +
                             std::to_string(s) + " does not follow its last position " +
                             std::to_string(last[size_t(s)]) + " (remove positions with seq_rm first)");
      }
      last[size_t(s)] = p;
    }
  }
  if (!m_.hparams.causal && batch.size() > ubatch_size()) {
    return Status::error("decode: this " + m_.hparams.arch + " model's attention is not causal, so a batch is one " +
                         "forward pass: its " + std::to_string(batch.size()) + " tokens exceed n_ubatch " +
                         std::to_string(ubatch_size()));
  }
  const int64_t n_free = kv_->n_ctx() - kv_->n_used();
  if (n_free < batch.size()) {
    return Status::error("decode: context full: " + std::to_string(batch.size()) + " tokens need cells, " +
                         std::to_string(n_free) + " of " + std::to_string(kv_->n_ctx()) +
                         " cells are free (remove sequences with seq_rm or shift the context)");
  }
  return Status::ok();
}

Status ContextImpl::decode(const Batch& batch) {
  TESSERA_RETURN_IF_ERROR(validate(batch));
  TESSERA_RETURN_IF_ERROR(shift_.apply(*kv_));
  n_out_ = 0;
  out_row_.assign(size_t(batch.size()), -1);
  for (int64_t i = 0; i < batch.size(); ++i) {
    if (batch.output(i)) out_row_[size_t(i)] = int32_t(n_out_++);
  }
  logits_.resize(m_.weights.variant.logits ? size_t(n_out_ * m_.hparams.n_vocab) : 0);
  if (params_.embeddings) embd_.resize(size_t(n_out_ * m_.hparams.n_embd));
  const int64_t n_ubatch = ubatch_size();
  for (int64_t begin = 0; begin < batch.size(); begin += n_ubatch) {
    const int64_t end = std::min(batch.size(), begin + n_ubatch);
    TESSERA_RETURN_IF_ERROR(decode_ubatch(batch, begin, end));
  }
  // Outputs computed by another MPI rank arrive here.
  return sched_.synchronize();
}

namespace {

/// A micro-batch in graph order: its tokens grouped by sequence set (groups in order of
/// first appearance, tokens in batch order within a group).
struct UBatch {
  std::vector<int64_t> order;  // graph row k holds micro-batch token order[k]
  std::vector<TokenId> tokens;
  std::vector<Pos> pos;
  std::vector<SeqMask> seqs;
  std::vector<std::pair<SeqMask, int64_t>> groups;  // (sequence set, token count)
};

UBatch group_tokens(const Batch& batch, int64_t begin, int64_t end) {
  UBatch u;
  std::vector<SeqMask> mask(static_cast<size_t>(end - begin));
  for (int64_t i = begin; i < end; ++i) {
    for (SeqId s : batch.seqs(i)) mask[size_t(i - begin)] |= seq_bit(s);
  }
  for (int64_t i = 0; i < end - begin; ++i) {
    const SeqMask m = mask[size_t(i)];
    if (std::none_of(u.groups.begin(), u.groups.end(), [&](const auto& gr) { return gr.first == m; })) {
      u.groups.emplace_back(m, 0);
    }
  }
  for (auto& [m, count] : u.groups) {
    for (int64_t i = 0; i < end - begin; ++i) {
      if (mask[size_t(i)] != m) continue;
      u.order.push_back(i);
      u.tokens.push_back(batch.token(begin + i));
      u.pos.push_back(batch.pos(begin + i));
      u.seqs.push_back(m);
      ++count;
    }
  }
  return u;
}

}  // namespace

// Tokens [begin, end) of the batch: claim cells, find each group's window, build the
// masks, compute, and copy the outputs. A micro-batch without outputs still computes
// one (its last token) so that every graph has the same structure; that row is dropped.
Status ContextImpl::decode_ubatch(const Batch& batch, int64_t begin, int64_t end) {
  const int64_t n = end - begin;
  UBatch u = group_tokens(batch, begin, end);
  Result<std::vector<int32_t>> slots = kv_->find_slots(u.seqs);
  if (!slots) return slots.status().with_context("decode");
  for (int64_t k = 0; k < n; ++k) kv_->store((*slots)[size_t(k)], u.pos[size_t(k)], u.seqs[size_t(k)], u.tokens[size_t(k)]);

  ForwardShape shape;
  shape.n_tokens = n;
  std::vector<float> mask;
  std::vector<float> mask_swa;  // models whose layers differ in their window: the window's
  const bool mixed = m_.hparams.mixed_swa();
  int64_t t0 = 0;
  for (const auto& [m, count] : u.groups) {
    const Pos max_pos = *std::max_element(u.pos.begin() + t0, u.pos.begin() + t0 + count);
    const auto [kv_begin, kv_end] = kv_->window(m, max_pos);
    shape.groups.push_back({count, kv_begin, kv_end - kv_begin});
    const size_t at = mask.size();
    mask.resize(at + size_t(count * (kv_end - kv_begin)));
    const std::span<const Pos> pos = std::span<const Pos>(u.pos).subspan(size_t(t0), size_t(count));
    const std::span<const SeqMask> seqs = std::span<const SeqMask>(u.seqs).subspan(size_t(t0), size_t(count));
    kv_->fill_mask(pos, seqs, kv_begin, kv_end - kv_begin, mask.data() + at, !mixed);
    if (mixed) {
      mask_swa.resize(mask.size());
      kv_->fill_mask(pos, seqs, kv_begin, kv_end - kv_begin, mask_swa.data() + at, true);
    }
    t0 += count;
  }
  // Outputs in batch order: the graph row of each output token.
  std::vector<int32_t> row_of(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) row_of[size_t(u.order[size_t(k)])] = int32_t(k);
  std::vector<int32_t> out_ids;
  for (int64_t i = 0; i < n; ++i) {
    if (batch.output(begin + i)) out_ids.push_back(row_of[size_t(i)]);
  }
  const bool keep_outputs = !out_ids.empty();
  if (!keep_outputs) out_ids.push_back(int32_t(n - 1));
  shape.n_outputs = int64_t(out_ids.size());
  shape.adapter_scales = adapter_scales_;
  ForwardGraph& fg = graphs_.get(shape, kv_->layers());

  set_input(fg.in.tokens, u.tokens.data(), u.tokens.size() * sizeof(TokenId));
  set_input(fg.in.positions, u.pos.data(), u.pos.size() * sizeof(Pos));
  set_input(fg.in.kv_slots, slots->data(), slots->size() * sizeof(int32_t));
  set_input(fg.in.kq_mask, mask.data(), mask.size() * sizeof(float));
  if (fg.in.kq_mask_swa) set_input(fg.in.kq_mask_swa, mask_swa.data(), mask_swa.size() * sizeof(float));
  set_input(fg.in.out_ids, out_ids.data(), out_ids.size() * sizeof(int32_t));
  TESSERA_RETURN_IF_ERROR(sched_.compute(*fg.plan));
  if (params_.matmul_observer) {
    TESSERA_RETURN_IF_ERROR(report_matmul_inputs(sched_, *fg.plan, fg.observed, params_.matmul_observer,
                                                 params_.matmul_observer_data));
  }
  if (!keep_outputs) return Status::ok();
  return copy_outputs(fg, batch, begin, end);
}

// The outputs of a micro-batch are consecutive rows, from its first output's row.
Status ContextImpl::copy_outputs(const ForwardGraph& fg, const Batch& batch, int64_t begin, int64_t end) {
  int64_t first = begin;
  while (first < end && !batch.output(first)) ++first;
  const size_t row0 = size_t(out_row_[size_t(first)]);
  const size_t n_outputs = size_t(fg.shape.n_outputs);
  const size_t n_vocab = size_t(m_.hparams.n_vocab);
  if (fg.logits) {
    TESSERA_RETURN_IF_ERROR(sched_.get_output_async(*fg.plan, fg.logits, logits_.data() + row0 * n_vocab,
                                                    n_outputs * n_vocab * sizeof(float)));
  }
  if (params_.embeddings) {
    const size_t n_embd = size_t(m_.hparams.n_embd);
    TESSERA_RETURN_IF_ERROR(sched_.get_output_async(*fg.plan, fg.embeddings, embd_.data() + row0 * n_embd,
                                                    n_outputs * n_embd * sizeof(float)));
  }
  return Status::ok();
}

}  // namespace tessera
