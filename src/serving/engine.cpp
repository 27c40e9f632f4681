// Engine: creation, submit() (checks, the queue), the loop thread and shutdown. The
// step itself is in step.cpp.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <span>

#include "core/check.h"
#include "serving/engine_impl.h"
#include "tessera/model.h"

namespace tessera::serving {
namespace {

constexpr int kMaxParallel = 32;        // leaves >= 32 of the cache's 64 sequence ids for prefixes
constexpr int64_t kDefaultMaxSeqCtx = 4096;

Status check_params(const EngineParams& p) {
  if (p.n_parallel < 1 || p.n_parallel > kMaxParallel) {
    return Status::error("serving: parallel sequences " + std::to_string(p.n_parallel) + " out of range [1, " +
                         std::to_string(kMaxParallel) + "]");
  }
  if (p.n_ctx_per_seq < 0 || p.n_ctx < 0) return Status::error("serving: context sizes must not be negative");
  if (p.batch_budget < p.n_parallel) {
    return Status::error("serving: the token budget (" + std::to_string(p.batch_budget) +
                         ") must be at least the number of parallel sequences (" + std::to_string(p.n_parallel) +
                         ")");
  }
  if (p.max_queue < 0) return Status::error("serving: max queue must not be negative");
  return Status::ok();
}

Status check_scales(std::span<const float> scales, size_t n_adapters) {
  if (scales.size() != n_adapters) {
    return Status::error("adapter scales: " + std::to_string(scales.size()) +
                         " given, the model has " + std::to_string(n_adapters) + " adapters");
  }
  for (size_t i = 0; i < scales.size(); ++i) {
    if (!std::isfinite(scales[i])) {
      return Status::error("adapter scales: the scale of adapter " + std::to_string(i) +
                           " is not a finite number");
    }
  }
  return Status::ok();
}

}  // namespace

bool Running::all_done() const {
  return std::all_of(choices.begin(), choices.end(), [](const Choice& c) { return c.done; });
}

Result<std::unique_ptr<Engine>> Engine::create(const Model& model, const EngineParams& params) {
  TESSERA_RETURN_IF_ERROR(check_params(params));
  if (model.tokenizer() == nullptr) return Status::error(model.info().path + ": the model has no usable tokenizer");
  EngineParams p = params;
  if (model.info().encoder) p.embeddings = true;  // an encoder computes nothing else
  if (p.n_ctx_per_seq == 0) {
    p.n_ctx_per_seq = std::min<int64_t>(model.info().n_ctx_train, kDefaultMaxSeqCtx);
    if (p.n_ctx > 0) p.n_ctx_per_seq = std::min(p.n_ctx_per_seq, p.n_ctx / p.n_parallel);
  }
  if (p.n_ctx == 0) p.n_ctx = p.n_ctx_per_seq * p.n_parallel;
  if (p.n_ctx_per_seq < 2) return Status::error("serving: a sequence needs at least 2 cells");
  // Every running sequence must always find its cells once the cached prefixes are gone.
  if (p.n_ctx < p.n_ctx_per_seq * p.n_parallel) {
    return Status::error("serving: " + std::to_string(p.n_ctx) + " cells cannot hold " +
                         std::to_string(p.n_parallel) + " sequences of " + std::to_string(p.n_ctx_per_seq) +
                         " (the context must be at least parallel x ctx-per-seq)");
  }
  ContextParams cp;
  cp.n_ctx = p.n_ctx;
  cp.n_batch = p.batch_budget;
  cp.n_threads = p.n_threads;
  cp.n_seq_max = 64;  // slots, then one id per cached prefix
  cp.n_seq_regions = p.n_parallel;
  cp.embeddings = p.embeddings;
  cp.type_k = p.type_k;
  cp.type_v = p.type_v;
  cp.rope = p.rope;
  Result<std::unique_ptr<Context>> ctx = Context::create(model, cp);
  if (!ctx) return ctx.status().with_context("serving");
  auto impl = std::make_unique<EngineImpl>(model, p, std::move(*ctx));
  TESSERA_RETURN_IF_ERROR(impl->start_speculation());
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

EngineImpl::EngineImpl(const Model& model, const EngineParams& params, std::unique_ptr<Context> ctx)
    : model_(model),
      params_(params),
      ctx_(std::move(ctx)),
      tok_(*model.tokenizer()),
      default_scales_(model.info().adapter_scales),
      slot_busy_(size_t(params.n_parallel), false),
      cache_(SeqId(params.n_parallel), params.prefix_cache ? 64 - params.n_parallel : 0),
      n_adapters_(model.info().adapters.size()) {
  for (TokenId t = 0; t < tok_.n_vocab(); ++t) {
    if (tok_.is_eog(t)) eog_tokens_.push_back(t);
  }
  publish_stats();
}

Status EngineImpl::validate(const GenerationRequest& r) const {
  if (r.prompt.empty()) return Status::error("prompt: it has no tokens");
  for (size_t i = 0; i < r.prompt.size(); ++i) {
    if (r.prompt[i] < 0 || r.prompt[i] >= tok_.n_vocab()) {
      return Status::error("prompt: token " + std::to_string(i) + " (" + std::to_string(r.prompt[i]) +
                           ") is outside the vocabulary [0, " + std::to_string(tok_.n_vocab()) + ")");
    }
  }
  if (r.n_choices < 1 || r.n_choices > params_.n_parallel) {
    return Status::error("n: " + std::to_string(r.n_choices) + " is outside [1, " +
                         std::to_string(params_.n_parallel) + "] (the server's parallel sequences)");
  }
  if (r.max_tokens < -1) return Status::error("max_tokens: must not be negative");
  if (r.n_probs < 0 || r.n_probs > Engine::kMaxProbs) {
    return Status::error("top_logprobs: " + std::to_string(r.n_probs) + " is outside [0, " +
                         std::to_string(Engine::kMaxProbs) + "]");
  }
  if (r.embedding && !params_.embeddings) {
    return Status::error("embeddings are not enabled on this server (start it with --embeddings)");
  }
  if (r.embedding && r.n_choices != 1) return Status::error("n: an embedding request has one result");
  if (r.embedding && r.pooling == Pooling::Rank && !model_.info().rank_head) {
    return Status::error("pooling: 'rank' needs a reranker (a model with a classification head, cls.weight)");
  }
  if (model_.info().encoder) {
    if (!r.embedding) {
      return Status::error("this model (" + model_.info().arch + ") is an encoder: it computes embeddings, not text");
    }
    // Non-causal attention: a prompt is decoded in one forward pass, never in chunks.
    if (int64_t(r.prompt.size()) > params_.batch_budget) {
      return Status::error("prompt: its " + std::to_string(r.prompt.size()) + " tokens exceed the batch budget " +
                           std::to_string(params_.batch_budget) + ", and an encoder reads a text in one pass");
    }
  }
  if (r.adapter_scales) TESSERA_RETURN_IF_ERROR(check_scales(*r.adapter_scales, n_adapters_));
  return Status::ok();
}

Result<std::unique_ptr<Running>> EngineImpl::prepare(GenerationRequest r, uint64_t id) const {
  auto run = std::make_unique<Running>();
  const int64_t room = params_.n_ctx_per_seq - int64_t(r.prompt.size());
  run->max_generated = int32_t(std::min<int64_t>(r.max_tokens < 0 ? room : r.max_tokens, room));
  if (r.ignore_eos) {
    for (TokenId t : eog_tokens_) r.sampling.logit_bias.push_back({t, -std::numeric_limits<float>::infinity()});
  }
  // An embedding request has one "choice" too: the sequence its prompt is decoded in.
  for (int i = 0; i < r.n_choices; ++i) {
    Choice c;
    c.index = i;
    if (!r.embedding) {
      SamplerParams sp = r.sampling;
      sp.seed = r.sampling.seed + uint64_t(i);
      std::unique_ptr<SamplerStep> grammar;
      if (r.grammar && r.grammar_lazy) {
        grammar = make_lazy_grammar_step(r.grammar, tok_, r.grammar_triggers, r.grammar_start_triggers,
                                         r.render_special);
      } else if (r.grammar) {
        grammar = make_grammar_step(r.grammar, tok_, r.render_special);
      }
      Result<SamplerChain> chain = SamplerChain::create(sp, tok_.n_vocab(), std::move(grammar));
      if (!chain) return chain.status();
      c.sampler = std::move(*chain);
      c.sampler.accept_prompt(r.prompt);
      // Not the draw's own stream (seeded with sp.seed): speculative decoding's draws
      // must be independent of the draw that chose the first token.
      c.rng.seed(sp.seed ^ kSpeculativeSeedMix);
    }
    c.decoder = std::make_unique<StreamDecoder>(tok_, r.render_special);
    c.stops = StopStrings(r.stop);
    run->choices.push_back(std::move(c));
  }
  run->stream = std::make_shared<Stream>(id);
  run->usage.prompt_tokens = int64_t(r.prompt.size());
  if (r.adapter_scales) run->scales = *r.adapter_scales;
  run->req = std::move(r);
  return run;
}

Submitted EngineImpl::check(const GenerationRequest& request) const {
  if (Status s = validate(request); !s) return {nullptr, Refusal::Invalid, s.message()};
  const int64_t n_prompt = int64_t(request.prompt.size());
  const int64_t need = n_prompt + std::max<int64_t>(request.max_tokens, request.embedding ? 0 : 1);
  if (need > params_.n_ctx_per_seq) {
    return {nullptr, Refusal::TooLong,
            "the prompt (" + std::to_string(n_prompt) + " tokens)" +
                (request.max_tokens > 0 ? " plus max_tokens (" + std::to_string(request.max_tokens) + ")" : "") +
                " does not fit a sequence's context of " + std::to_string(params_.n_ctx_per_seq) + " tokens"};
  }
  return {};
}

Submitted EngineImpl::room_for_one() {
  if (shutting_down_) return {nullptr, Refusal::ShuttingDown, "the server is shutting down"};
  if (int(queue_.size()) >= params_.max_queue) {
    // Cancelled requests give their places back now; the next step ends their streams.
    std::vector<std::unique_ptr<Running>> gone = queue_.take_cancelled(false);
    std::move(gone.begin(), gone.end(), std::back_inserter(cancelled_));
    if (!gone.empty()) cv_.notify_all();
  }
  if (int(queue_.size()) >= params_.max_queue) {
    return {nullptr, Refusal::QueueFull,
            "too many requests: " + std::to_string(queue_.size()) + " are waiting (the queue holds " +
                std::to_string(params_.max_queue) + ")"};
  }
  return {};
}

namespace {

/// Names request `i` of a group of `n` in a refusal (nothing for a request alone).
std::string member(size_t i, size_t n) {
  return n > 1 ? "request " + std::to_string(i) + " of " + std::to_string(n) + ": " : std::string();
}

SubmittedGroup refused(const Submitted& s, const std::string& prefix = {}) {
  return {{}, s.refusal, prefix + s.message};
}

}  // namespace

SubmittedGroup EngineImpl::submit_group(std::vector<GenerationRequest> requests) {
  const size_t n = requests.size();
  if (n == 0) return {{}, Refusal::Invalid, "no requests to submit"};
  if (n > size_t(Engine::kMaxGroup)) {
    return {{}, Refusal::Invalid,
            std::to_string(n) + " requests are more than one submission may hold (Engine::kMaxGroup = " +
                std::to_string(Engine::kMaxGroup) + ")"};
  }
  for (size_t i = 0; i < n; ++i) {
    if (Submitted s = check(requests[i]); s.refusal != Refusal::None) return refused(s, member(i, n));
  }
  uint64_t first_id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Submitted s = room_for_one(); s.refusal != Refusal::None) return refused(s);
    first_id = next_id_;
    next_id_ += n;
    // Requests without scales of their own take the defaults of the moment they came.
    for (GenerationRequest& r : requests) {
      if (!r.adapter_scales) r.adapter_scales = default_scales_;
    }
  }
  // Sampler chains (a grammar step decodes the vocabulary) are built outside the lock.
  SubmittedGroup out;
  std::vector<std::unique_ptr<Running>> group;
  for (size_t i = 0; i < n; ++i) {
    Result<std::unique_ptr<Running>> run = prepare(std::move(requests[i]), first_id + i);
    if (!run) return {{}, Refusal::Invalid, member(i, n) + run.status().message()};
    (*run)->usage.queued = Clock::now();
    out.streams.push_back((*run)->stream);
    group.push_back(std::move(*run));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Submitted s = room_for_one(); s.refusal != Refusal::None) return refused(s);
    queue_.push(std::move(group));
    stats_.waiting = int(queue_.size());
  }
  cv_.notify_all();
  return out;
}

void EngineImpl::loop() {
  for (;;) {
    if (step()) continue;
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_loop_ && queue_.empty() && cancelled_.empty() && running_.empty()) break;
    cv_.wait_for(lock, std::chrono::milliseconds(20),
                 [&] { return !queue_.empty() || !cancelled_.empty() || !slot_jobs_.empty() || stop_loop_; });
  }
}

void EngineImpl::start() {
  TESSERA_CHECK(!thread_.joinable());
  thread_ = std::thread([this] { loop(); });
}

void EngineImpl::shutdown(bool cancel_running) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutting_down_ = true;
    stop_loop_ = true;
  }
  // The next step cancels everything, waiting or running (its streams get their events).
  if (cancel_running) cancel_all_ = true;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  fail_slot_jobs();
}

EngineStats EngineImpl::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats s = stats_;
  s.waiting = int(queue_.size());
  return s;
}

std::vector<float> EngineImpl::adapter_scales() const {
  std::lock_guard<std::mutex> lock(mu_);
  return default_scales_;
}

Status EngineImpl::set_adapter_scales(std::vector<float> scales) {
  TESSERA_RETURN_IF_ERROR(check_scales(scales, n_adapters_));
  std::lock_guard<std::mutex> lock(mu_);
  default_scales_ = std::move(scales);
  return Status::ok();
}

// ---- Engine --------------------------------------------------------------------

Engine::Engine(std::unique_ptr<EngineImpl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() { impl_->shutdown(true); }

Submitted Engine::submit(GenerationRequest request) {
  std::vector<GenerationRequest> one;
  one.push_back(std::move(request));
  SubmittedGroup g = impl_->submit_group(std::move(one));
  return {g.streams.empty() ? nullptr : std::move(g.streams[0]), g.refusal, std::move(g.message)};
}
SubmittedGroup Engine::submit_group(std::vector<GenerationRequest> requests) {
  return impl_->submit_group(std::move(requests));
}
bool Engine::step() { return impl_->step(); }
void Engine::start() { impl_->start(); }
void Engine::shutdown(bool cancel_running) { impl_->shutdown(cancel_running); }
EngineStats Engine::stats() const { return impl_->stats(); }
std::vector<float> Engine::adapter_scales() const { return impl_->adapter_scales(); }
Status Engine::set_adapter_scales(std::vector<float> scales) {
  return impl_->set_adapter_scales(std::move(scales));
}
SlotActionResult Engine::slot_action(SlotActionKind kind, int slot, const std::string& path,
                                     std::chrono::milliseconds timeout) {
  return impl_->slot_action(kind, slot, path, timeout);
}
const EngineParams& Engine::params() const { return impl_->params_; }
const Model& Engine::model() const { return impl_->model_; }

}  // namespace tessera::serving
