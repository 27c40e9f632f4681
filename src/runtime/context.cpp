#include "tessera/context.h"

#include <algorithm>
#include <cmath>

#include "backend/mpi/comm.h"
#include "backend/registry.h"
#include "core/check.h"
#include "model/rope_scaling.h"
#include "runtime/context_impl.h"
#include "runtime/mirrored_ops.h"
#include "runtime/mpi_commands.h"

namespace tessera {

constexpr int64_t kDefaultMaxContext = 4096;

namespace {

/// A backend per backend of the placement: CPU backends share the threads out (each
/// at least one); a GPU's is its own stream on that device; another MPI rank's layers
/// are that rank's.
Result<std::vector<std::unique_ptr<Backend>>> make_backends(const Placement& p, int n_threads) {
  std::vector<std::unique_ptr<Backend>> out;
  int n_local = 0;
  for (size_t b = 0; b < p.backends.size(); ++b) n_local += p.here(int(b)) && p.gpu_of(int(b)) < 0;
  n_local = std::max(n_local, 1);
  const int base = n_threads / n_local, extra = n_threads % n_local;
  int local = 0;
  for (size_t b = 0; b < p.backends.size(); ++b) {
    backends::Options o;
    const char* kind = "CPU";
    if (!p.here(int(b))) {
      kind = "MPI";
      o.rank = int(b);
    } else if (p.gpu_of(int(b)) >= 0) {
      kind = "CUDA";
      o.device = p.gpu_of(int(b));
    } else {
      o.n_threads = std::max(1, base + (local++ < extra ? 1 : 0));
      const bool named = p.backends.size() > 1 && !p.mpi && p.gpu.empty();
      o.label = named ? "CPU " + p.backends[b] : "CPU";
    }
    Result<std::unique_ptr<Backend>> backend = backends::create(kind, o);
    if (!backend) return backend.status().with_context("context");
    out.push_back(std::move(*backend));
  }
  return out;
}

std::vector<Backend*> raw(const std::vector<std::unique_ptr<Backend>>& v) {
  std::vector<Backend*> out;
  for (const auto& b : v) out.push_back(b.get());
  return out;
}

}  // namespace

ContextImpl::ContextImpl(const Model& model, const ContextParams& params, HParams hparams,
                         std::vector<std::unique_ptr<Backend>> backends)
    : model_(model),
      m_(model.impl()),
      params_(params),
      hparams_(std::move(hparams)),
      backends_(std::move(backends)),
      sched_(raw(backends_),
             [this](const Tensor* t) {
               auto w = m_.weight_backend.find(t);
               if (w != m_.weight_backend.end()) return w->second;
               auto c = cache_backend_.find(t);
               return c != cache_backend_.end() ? c->second : kAnyBackend;
             }),
      shift_(hparams_, rope_factors(hparams_, m_.weights, params.n_ctx / params.n_seq_max), sched_),
      graphs_(m_, hparams_, sched_, params.embeddings, params.n_ctx / params.n_seq_max,
              params.matmul_observer != nullptr),
      adapter_scales_(m_.info.adapter_scales) {}

Status ContextImpl::init() {
  std::vector<Backend*> layer_backends;
  for (int b : m_.placement.layer) layer_backends.push_back(backends_[size_t(b)].get());
  Result<std::unique_ptr<KvCache>> kv =
      KvCache::create(m_.hparams, params_.n_ctx, params_.n_seq_regions, params_.type_k, params_.type_v,
                      layer_backends);
  if (!kv) return kv.status();
  kv_ = std::move(*kv);
  for (size_t il = 0; il < kv_->layers().size(); ++il) {
    cache_backend_[kv_->layers()[il].k] = m_.placement.layer[il];
    cache_backend_[kv_->layers()[il].v] = m_.placement.layer[il];
  }
  return Status::ok();
}

int64_t ContextImpl::ubatch_size() const {
  if (params_.n_ubatch > 0) return std::min(params_.n_ubatch, params_.n_batch);
  if (m_.placement.mpi && m_.placement.backends.size() > 1) {
    return std::min(params_.n_batch, std::max<int64_t>(32, params_.n_batch / 16));
  }
  return params_.n_batch;
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
Context::~Context() {
  if (impl_ && impl_->mpi_id_ >= 0) tell_ranks(encode_free_context(impl_->mpi_id_));
}

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
  if (model.info().encoder && !p.embeddings) {
    return Status::error("context: " + model.info().path + " is an encoder (" + model.info().arch +
                         "): it computes embeddings, not logits (ContextParams::embeddings; tessera embed; "
                         "the server's /v1/embeddings)");
  }
  // The reference keeps no cache for an encoder: its attention reads the batch's own
  // keys and values, unrounded. An F32 cache holds them as they are.
  if (model.info().encoder) p.type_k = p.type_v = DType::F32;
  if (p.n_seq_regions == 0) p.n_seq_regions = p.n_seq_max;
  if (p.n_seq_regions < 1 || p.n_seq_regions > p.n_seq_max) {
    return Status::error("context: n_seq_regions " + std::to_string(p.n_seq_regions) +
                         " out of range [1, n_seq_max = " + std::to_string(p.n_seq_max) + "]");
  }
  if (p.matmul_observer && model.impl().mpi_id >= 0) {
    return Status::error("context: the inputs of a model's matrices cannot be observed when its layers are "
                         "split across MPI ranks");
  }
  Result<HParams> hparams = apply_rope_scaling(model.impl().hparams, p.rope);
  if (!hparams) return hparams.status().with_context("context");
  Result<std::vector<std::unique_ptr<Backend>>> backends = make_backends(model.impl().placement, p.n_threads);
  if (!backends) return backends.status();
  const int model_id = model.impl().mpi_id;
  static int next_id = 0;
  const int id = model_id >= 0 ? next_id++ : -1;
  if (model_id >= 0) TESSERA_RETURN_IF_ERROR(mpi::send_command(encode_create_context(model_id, id, p)));
  auto impl = std::make_unique<ContextImpl>(model, p, std::move(*hparams), std::move(*backends));
  Status made = impl->init();
  if (model_id >= 0) {
    impl->mpi_id_ = id;  // freed on every rank with the context
    const Status all = mpi::gather_status(made);
    if (!all.is_ok()) {
      Context dropped(std::move(impl));
      return all;
    }
  }
  TESSERA_RETURN_IF_ERROR(made);
  return std::unique_ptr<Context>(new Context(std::move(impl)));
}

void Context::tell_ranks(const std::vector<uint8_t>& command) const {
  if (impl_->mpi_id_ < 0) return;
  const Status s = mpi::send_command(command);
  if (!s.is_ok()) mpi::abort_job(s.message());
}

Status Context::decode(std::span<const TokenId> tokens) {
  if (tokens.empty()) return Status::error("decode: no tokens");
  Batch batch;
  batch.add_sequence(tokens, Pos(n_past()), 0, impl_->params_.all_logits);
  return decode(batch);
}

Status Context::decode(const Batch& batch) {
  if (impl_->mpi_id_ >= 0) {
    // The other ranks decode it too; a batch they would refuse is refused here first.
    TESSERA_RETURN_IF_ERROR(impl_->validate(batch));
    tell_ranks(mirrored::mirror<mirrored::kDecodeBatch>(impl_->mpi_id_, batch));
  }
  return impl_->decode(batch);
}

std::span<const float> Context::logits() const {
  TESSERA_CHECK_MSG(!impl_->model_.info().encoder, "logits: an encoder has none");
  TESSERA_CHECK_MSG(impl_->n_out_ > 0, "logits: nothing decoded");
  const size_t n_vocab = size_t(impl_->m_.hparams.n_vocab);
  return std::span<const float>(impl_->logits_).subspan(size_t(impl_->n_out_ - 1) * n_vocab, n_vocab);
}

std::span<const float> Context::logits_at(int64_t i) const {
  TESSERA_CHECK(i >= 0 && i < int64_t(impl_->out_row_.size()));
  const int32_t row = impl_->out_row_[size_t(i)];
  TESSERA_CHECK_MSG(row >= 0, "logits_at: the token's logits were not asked for");
  TESSERA_CHECK_MSG(!impl_->model_.info().encoder, "logits_at: an encoder has none");
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
int64_t Context::kv_cache_bytes() const { return impl_->kv_->bytes(); }

void Context::clear() {
  impl_->clear();
  tell_ranks(mirrored::mirror<&Context::clear>(impl_->mpi_id_));
}

std::span<const float> Context::adapter_scales() const { return impl_->adapter_scales_; }

Status Context::set_adapter_scales(std::span<const float> scales) {
  std::vector<float>& current = impl_->adapter_scales_;
  if (scales.size() != current.size()) {
    return Status::error("set_adapter_scales: " + std::to_string(scales.size()) +
                         " scales given, the model has " + std::to_string(current.size()) +
                         " adapters");
  }
  for (size_t i = 0; i < scales.size(); ++i) {
    if (!std::isfinite(scales[i])) {
      return Status::error("set_adapter_scales: the scale of adapter " + std::to_string(i) +
                           " is not a finite number");
    }
  }
  if (std::equal(scales.begin(), scales.end(), current.begin())) return Status::ok();
  current.assign(scales.begin(), scales.end());
  tell_ranks(mirrored::mirror<&Context::set_adapter_scales>(impl_->mpi_id_, std::span<const float>(current)));
  return Status::ok();
}

Status Context::seq_rm(SeqId seq, Pos p0, Pos p1) {
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_rm", seq, true));
  impl_->kv_->seq_rm(seq, p0, p1);
  tell_ranks(mirrored::mirror<&Context::seq_rm>(impl_->mpi_id_, seq, p0, p1));
  return Status::ok();
}

Status Context::seq_copy(SeqId src, SeqId dst, Pos p0, Pos p1) {
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_copy", src, false));
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_copy", dst, false));
  if (src == dst) return Status::error("seq_copy: the source and destination are both sequence " + std::to_string(src));
  TESSERA_RETURN_IF_ERROR(impl_->kv_->seq_copy(src, dst, p0, p1));
  tell_ranks(mirrored::mirror<&Context::seq_copy>(impl_->mpi_id_, src, dst, p0, p1));
  return Status::ok();
}

int64_t Context::seq_home_free(SeqId seq) const { return impl_->kv_->home_free(seq); }

Status Context::seq_cp(SeqId src, SeqId dst, Pos p0, Pos p1) {
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_cp", src, false));
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_cp", dst, false));
  if (src != dst) impl_->kv_->seq_cp(src, dst, p0, p1);
  tell_ranks(mirrored::mirror<&Context::seq_cp>(impl_->mpi_id_, src, dst, p0, p1));
  return Status::ok();
}

Status Context::seq_keep(SeqId seq) {
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_keep", seq, false));
  impl_->kv_->seq_keep(seq);
  tell_ranks(mirrored::mirror<&Context::seq_keep>(impl_->mpi_id_, seq));
  return Status::ok();
}

Status Context::seq_add(SeqId seq, Pos p0, Pos p1, Pos delta) {
  TESSERA_RETURN_IF_ERROR(impl_->check_seq("seq_add", seq, true));
  if (delta != 0) TESSERA_RETURN_IF_ERROR(impl_->check_movable("seq_add"));
  TESSERA_RETURN_IF_ERROR(impl_->kv_->seq_add(seq, p0, p1, delta));
  tell_ranks(mirrored::mirror<&Context::seq_add>(impl_->mpi_id_, seq, p0, p1, delta));
  return Status::ok();
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
  tell_ranks(mirrored::mirror<&Context::context_shift>(impl_->mpi_id_, seq, n_keep));
  return n_discard;
}

}  // namespace tessera
