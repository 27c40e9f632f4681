#include "tessera/context.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "backend/cpu/cpu_backend.h"
#include "core/check.h"
#include "core/graph_alloc.h"
#include "model/model_impl.h"
#include "runtime/kv_cache.h"

namespace tessera {

constexpr int64_t kDefaultMaxContext = 4096;

/// A built and memory-planned forward graph for one batch shape.
struct ForwardGraph {
  std::tuple<int64_t, int64_t, int64_t> shape;  // (n_tokens, n_kv, n_outputs)
  Graph graph;
  BatchInputs in;
  Tensor* logits = nullptr;
};

class ContextImpl {
 public:
  ContextImpl(const Model& model, const ContextParams& params)
      : model_(model), m_(model.impl()), params_(params), backend_(params.n_threads) {}

  Status init() {
    Result<std::unique_ptr<KvCache>> kv =
        KvCache::create(m_.hparams, params_.n_ctx, params_.kv_type, backend_);
    if (!kv) return kv.status();
    kv_ = std::move(*kv);
    return Status::ok();
  }

  Status decode(std::span<const TokenId> tokens);
  Status decode_batch(std::span<const TokenId> tokens, bool last_batch);
  ForwardGraph& graph_for(int64_t n_tokens, int64_t n_kv, int64_t n_outputs);

  const Model& model_;
  const detail::ModelImpl& m_;
  ContextParams params_;
  CpuBackend backend_;
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<ForwardGraph> graph_;
  std::unique_ptr<Buffer> compute_buffer_;
  int64_t n_past_ = 0;
  std::vector<float> logits_;  // [n_outputs of the last batch][n_vocab]
  int64_t n_logits_ = 0;
};

ForwardGraph& ContextImpl::graph_for(int64_t n_tokens, int64_t n_kv, int64_t n_outputs) {
  const auto shape = std::make_tuple(n_tokens, n_kv, n_outputs);
  if (graph_ && graph_->shape == shape) return *graph_;
  graph_.reset();  // tensors of the old graph point into the compute buffer
  auto fg = std::make_unique<ForwardGraph>();
  fg->shape = shape;
  fg->in.n_tokens = n_tokens;
  fg->in.n_kv = n_kv;
  fg->in.n_outputs = n_outputs;
  fg->in.kv = kv_->layers();
  create_batch_inputs(fg->graph, fg->in);
  fg->logits = m_.arch->build(fg->graph, m_.hparams, m_.weights, fg->in);
  fg->logits->flags |= kFlagOutput;
  fg->graph.expand(fg->logits);

  const AllocPlan plan = plan_graph_memory(fg->graph, backend_.alignment());
  if (!compute_buffer_ || compute_buffer_->size() < plan.size) {
    compute_buffer_.reset();
    Result<std::unique_ptr<Buffer>> buf = backend_.alloc_buffer(plan.size);
    TESSERA_CHECK_MSG(buf.is_ok(), "out of memory for the compute buffer");
    compute_buffer_ = std::move(*buf);
  }
  apply_graph_memory(plan, fg->graph, *compute_buffer_);
  graph_ = std::move(fg);
  return *graph_;
}

Status ContextImpl::decode_batch(std::span<const TokenId> tokens, bool last_batch) {
  const int64_t n = int64_t(tokens.size());
  std::vector<int32_t> pos(tokens.size());
  std::iota(pos.begin(), pos.end(), int32_t(n_past_));
  Result<std::vector<int32_t>> slots = kv_->claim(pos);
  if (!slots) return slots.status();

  const int64_t n_outputs = params_.all_logits ? n : 1;
  const int64_t n_kv = kv_->n_kv();
  ForwardGraph& fg = graph_for(n, n_kv, n_outputs);

  std::vector<float> mask(static_cast<size_t>(n * n_kv));
  kv_->fill_mask(pos, n_kv, mask.data());
  std::vector<int32_t> out_ids(static_cast<size_t>(n_outputs));
  std::iota(out_ids.begin(), out_ids.end(), int32_t(n - n_outputs));

  backend_.set_tensor(fg.in.tokens, tokens.data(), 0, tokens.size_bytes());
  backend_.set_tensor(fg.in.positions, pos.data(), 0, pos.size() * sizeof(int32_t));
  backend_.set_tensor(fg.in.kv_slots, slots->data(), 0, slots->size() * sizeof(int32_t));
  backend_.set_tensor(fg.in.kq_mask, mask.data(), 0, mask.size() * sizeof(float));
  backend_.set_tensor(fg.in.out_ids, out_ids.data(), 0, out_ids.size() * sizeof(int32_t));
  TESSERA_RETURN_IF_ERROR(backend_.compute(fg.graph));
  n_past_ += n;

  if (last_batch || params_.all_logits) {
    const size_t count = size_t(n_outputs * m_.hparams.n_vocab);
    logits_.resize(count);
    backend_.get_tensor(fg.logits, logits_.data(), 0, count * sizeof(float));
    n_logits_ = n_outputs;
  }
  return Status::ok();
}

Status ContextImpl::decode(std::span<const TokenId> tokens) {
  if (tokens.empty()) return Status::error("decode: no tokens");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= m_.hparams.n_vocab) {
      return Status::error("decode: token " + std::to_string(i) + " has id " +
                           std::to_string(tokens[i]) + ", outside the vocabulary [0, " +
                           std::to_string(m_.hparams.n_vocab) + ")");
    }
  }
  if (n_past_ + int64_t(tokens.size()) > kv_->n_ctx()) {
    return Status::error("decode: context full: " + std::to_string(n_past_) + " + " +
                         std::to_string(tokens.size()) + " tokens exceed n_ctx " +
                         std::to_string(kv_->n_ctx()));
  }
  for (size_t start = 0; start < tokens.size(); start += size_t(params_.n_batch)) {
    const size_t count = std::min(tokens.size() - start, size_t(params_.n_batch));
    TESSERA_RETURN_IF_ERROR(
        decode_batch(tokens.subspan(start, count), start + count == tokens.size()));
  }
  return Status::ok();
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
  auto impl = std::make_unique<ContextImpl>(model, p);
  TESSERA_RETURN_IF_ERROR(impl->init());
  return std::unique_ptr<Context>(new Context(std::move(impl)));
}

Status Context::decode(std::span<const TokenId> tokens) { return impl_->decode(tokens); }

std::span<const float> Context::logits() const {
  return logits_at(impl_->n_logits_ - 1);
}

std::span<const float> Context::logits_at(int64_t i) const {
  TESSERA_CHECK(i >= 0 && i < impl_->n_logits_);
  const size_t n_vocab = size_t(impl_->m_.hparams.n_vocab);
  return std::span<const float>(impl_->logits_).subspan(size_t(i) * n_vocab, n_vocab);
}

int64_t Context::n_past() const { return impl_->n_past_; }
int64_t Context::n_ctx() const { return impl_->kv_->n_ctx(); }
int64_t Context::n_vocab() const { return impl_->m_.hparams.n_vocab; }

void Context::clear() {
  impl_->kv_->clear();
  impl_->n_past_ = 0;
  impl_->n_logits_ = 0;
}

}  // namespace tessera
