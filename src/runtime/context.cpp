#include "tessera/context.h"

#include <algorithm>

#include "core/check.h"
#include "runtime/context_impl.h"

namespace tessera {

constexpr int64_t kDefaultMaxContext = 4096;

Status ContextImpl::init() {
  Result<std::unique_ptr<KvCache>> kv =
      KvCache::create(m_.hparams, params_.n_ctx, params_.n_seq_regions, params_.kv_type, backend_);
  if (!kv) return kv.status();
  kv_ = std::move(*kv);
  return Status::ok();
}

Status ContextImpl::check_seq(const char* what, SeqId seq, bool allow_all) const {
  if ((allow_all && seq == -1) || (seq >= 0 && seq < params_.n_seq_max)) return Status::ok();
  return Status::error(std::string(what) + ": sequence id " + std::to_string(seq) +
                       " out of range [" + (allow_all ? "-1" : "0") + ", " +
                       std::to_string(params_.n_seq_max) + ")");
}

Status ContextImpl::check_movable(const char* what) const {
  if (m_.hparams.positions != PositionKind::Learned) return Status::ok();
  return Status::error(std::string(what) + ": this " + m_.hparams.arch +
                       " model adds learned absolute position embeddings to its inputs, so "
                       "cached tokens cannot be moved to other positions");
}

void ContextImpl::clear() {
  kv_->clear();
  n_out_ = 0;
  out_row_.clear();
}

Context::Context(std::unique_ptr<ContextImpl> impl) : impl_(std::move(impl)) {}
Context::~Context() = default;

Result<std::unique_ptr<Context>> Context::create(const Model& model, const ContextParams& params) {
  ContextParams p = params;
  // Default: the training context, capped so that long-context models do not reserve
  // gigabytes of cache nobody asked for.
  if (p.n_ctx <= 0) p.n_ctx = std::min<int64_t>(model.info().n_ctx_train, kDefaultMaxContext);
  if (p.n_batch <= 0) return Status::error("context: n_batch must be positive");
  if (p.n_threads <= 0 || p.n_threads > 512) {
    return Status::error("context: thread count " + std::to_string(p.n_threads) + " out of range");
  }
  if (p.n_seq_max < 1 || p.n_seq_max > kMaxSeq) {
    return Status::error("context: n_seq_max " + std::to_string(p.n_seq_max) +
                         " out of range [1, " + std::to_string(kMaxSeq) + "]");
  }
  if (p.n_seq_regions == 0) p.n_seq_regions = p.n_seq_max;
  if (p.n_seq_regions < 1 || p.n_seq_regions > p.n_seq_max) {
    return Status::error("context: n_seq_regions " + std::to_string(p.n_seq_regions) +
                         " out of range [1, n_seq_max = " + std::to_string(p.n_seq_max) + "]");
  }
  auto impl = std::make_unique<ContextImpl>(model, p);
  TESSERA_RETURN_IF_ERROR(impl->init());
  return std::unique_ptr<Context>(new Context(std::move(impl)));
}

Status Context::decode(std::span<const TokenId> tokens) {
  if (tokens.empty()) return Status::error("decode: no tokens");
  Batch batch;
  batch.add_sequence(tokens, Pos(n_past()), 0, impl_->params_.all_logits);
  return impl_->decode(batch);
}

Status Context::decode(const Batch& batch) { return impl_->decode(batch); }

std::span<const float> Context::logits() const {
  TESSERA_CHECK_MSG(impl_->n_out_ > 0, "logits: nothing decoded");
  const size_t n_vocab = size_t(impl_->m_.hparams.n_vocab);
  return std::span<const float>(impl_->logits_).subspan(size_t(impl_->n_out_ - 1) * n_vocab, n_vocab);
}

std::span<const float> Context::logits_at(int64_t i) const {
  TESSERA_CHECK(i >= 0 && i < int64_t(impl_->out_row_.size()));
  const int32_t row = impl_->out_row_[size_t(i)];
  TESSERA_CHECK_MSG(row >= 0, "logits_at: the token's logits were not asked for");
  const size_t n_vocab = size_t(impl_->m_.hparams.n_vocab);
  return std::span<const float>(impl_->logits_).subspan(size_t(row) * n_vocab, n_vocab);
}

std::span<const float> Context::embeddings_at(int64_t i) const {
  TESSERA_CHECK_MSG(impl_->params_.embeddings, "embeddings_at: the context was created without embeddings");
  TESSERA_CHECK(i >= 0 && i < int64_t(impl_->out_row_.size()));
  const int32_t row = impl_->out_row_[size_t(i)];
  TESSERA_CHECK_MSG(row >= 0, "embeddings_at: the token's outputs were not asked for");
  const size_t n_embd = size_t(impl_->m_.hparams.n_embd);
  return std::span<const float>(impl_->embd_).subspan(size_t(row) * n_embd, n_embd);
}

int64_t Context::n_past() const { return int64_t(impl_->kv_->seq_pos_max(0)) + 1; }
int64_t Context::n_ctx() const { return impl_->kv_->n_ctx(); }
int64_t Context::n_vocab() const { return impl_->m_.hparams.n_vocab; }
int64_t Context::n_embd() const { return impl_->m_.hparams.n_embd; }
int Context::n_seq_max() const { return impl_->params_.n_seq_max; }
int64_t Context::n_cells_used() const { return impl_->kv_->n_used(); }

void Context::clear() { impl_->clear(); }

Status Context::seq_rm(SeqId seq, Pos p0, Pos p1) {
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_rm", seq, true));
  impl_->kv_->seq_rm(seq, p0, p1);
  return Status::ok();
}

Status Context::seq_copy(SeqId src, SeqId dst, Pos p0, Pos p1) {
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_copy", src, false));
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_copy", dst, false));
  if (src == dst) return Status::error("seq_copy: the source and destination are both sequence " + std::to_string(src));
  return impl_->kv_->seq_copy(src, dst, p0, p1);
}

int64_t Context::seq_home_free(SeqId seq) const { return impl_->kv_->home_free(seq); }

Status Context::seq_cp(SeqId src, SeqId dst, Pos p0, Pos p1) {
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_cp", src, false));
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_cp", dst, false));
  if (src != dst) impl_->kv_->seq_cp(src, dst, p0, p1);
  return Status::ok();
}

Status Context::seq_keep(SeqId seq) {
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_keep", seq, false));
  impl_->kv_->seq_keep(seq);
  return Status::ok();
}

Status Context::seq_add(SeqId seq, Pos p0, Pos p1, Pos delta) {
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_add", seq, true));
  if (delta != 0) TESSERA_RETURN_IF_ERROR(impl_->check_movable("seq_add"));
  return impl_->kv_->seq_add(seq, p0, p1, delta);
}

Pos Context::seq_pos_max(SeqId seq) const {
  TESSERA_CHECK(impl_->check_seq("seq_pos_max", seq, false).is_ok());
  return impl_->kv_->seq_pos_max(seq);
}

Pos Context::seq_pos_min(SeqId seq) const {
  TESSERA_CHECK(impl_->check_seq("seq_pos_min", seq, false).is_ok());
  return impl_->kv_->seq_pos_min(seq);
}

std::vector<TokenId> Context::seq_tokens(SeqId seq) const {
  TESSERA_CHECK(impl_->check_seq("seq_tokens", seq, false).is_ok());
  return impl_->kv_->seq_tokens(seq);
}

Result<int64_t> Context::context_shift(SeqId seq, int64_t n_keep) {
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("context_shift", seq, false));
  TESSERA_RETURN_IF_ERROR(impl_->check_movable("context_shift"));
  const int64_t n_past = int64_t(impl_->kv_->seq_pos_max(seq)) + 1;
  if (n_keep < 0 || n_keep >= n_past - 1) {
    return Status::error("context_shift: n_keep " + std::to_string(n_keep) +
                         " leaves nothing to discard in sequence " + std::to_string(seq) +
                         " of " + std::to_string(n_past) + " positions");
  }
  const int64_t n_discard = (n_past - n_keep) / 2;
  const Pos tail = Pos(n_keep + n_discard);
  // Check the shift first (shared cells refuse it), so that a refusal changes nothing.
  TESSERA_RETURN_IF_ERROR(impl_->kv_->seq_add(seq, tail, -1, 0).with_context("context_shift"));
  impl_->kv_->seq_rm(seq, Pos(n_keep), tail);
  TESSERA_RETURN_IF_ERROR(impl_->kv_->seq_add(seq, tail, -1, -Pos(n_discard)));
  return n_discard;
}

}  // namespace tessera
