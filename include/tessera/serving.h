// Serving: many requests decoded together over one Context (continuous batching), with a
// prefix cache that every request shares. No HTTP or JSON here: tools/server/ turns
// requests on the wire into GenerationRequests and Events back into responses.
//
// One Engine owns one Context. Any thread may submit() a request and read its Stream;
// the Context is only touched by the thread that calls step() (the Engine's own loop
// thread after start(), or a test calling step() by hand).
//
// A step: (1) drop cancelled requests (their cells are freed); (2) admit waiting
// requests, first come first served (a group submitted together is one admission),
// while enough slots are free (a request with n choices takes n slots), reusing the
// longest cached prefix of each prompt; (3) build one batch: the last sampled token of
// every generating sequence, then chunks of the admitted prompts, up to the token
// budget; (4) decode it; (5) sample, detokenize, apply stop strings and deliver the
// events. A long prompt therefore never holds the others
// back for more than one step.
//
// The prefix cache: when a request ends, its sequence's cells (prompt and generated
// tokens) stay in the KV cache under a sequence id of their own, as a cached prefix. A
// new prompt shares the cells of the longest cached prefix (Context::seq_cp: no copy)
// and computes only the rest; at least its last token is always computed, for logits.
// Least recently used prefixes are evicted when cells or sequence ids run out.
//
// LoRA adapters: each request runs with one set of adapter scales. A step decodes only
// requests with one set (that of the request which has waited longest for a decode, so
// every set progresses), and a cached prefix serves only prompts with the set its cells
// were computed with. Requests that all share one set run exactly as without adapters.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tessera/batch.h"
#include "tessera/dtype.h"
#include "tessera/embedding.h"
#include "tessera/grammar.h"
#include "tessera/rope_scaling.h"
#include "tessera/sampler.h"
#include "tessera/speculative.h"
#include "tessera/status.h"

namespace tessera {
class Model;
}

namespace tessera::serving {

using Clock = std::chrono::steady_clock;

/// What to generate (or embed) for one prompt.
struct GenerationRequest {
  std::vector<TokenId> prompt;  // must not be empty (BOS, if wanted, already in it)
  int n_choices = 1;            // independent completions of the prompt; they share its cells
  int32_t max_tokens = -1;      // per choice; -1: until the sequence's context is full
  SamplerParams sampling;       // choice i draws with seed sampling.seed + i
  std::shared_ptr<const Grammar> grammar;  // optional: every choice follows it
  // A lazy grammar (make_lazy_grammar_step): free until one of these texts appears in
  // the output (`grammar_start_triggers`: only opening it), then `grammar` from there.
  bool grammar_lazy = false;
  std::vector<std::string> grammar_triggers;
  std::vector<std::string> grammar_start_triggers;
  // Control tokens give their text in the output (and to the grammar): tool-call
  // markers such as "[TOOL_CALLS]" or "<|python_tag|>" often are such tokens.
  bool render_special = false;
  std::vector<std::string> stop;           // stop strings: generation ends before them,
                                           // and their text is never delivered
  bool ignore_eos = false;   // end-of-generation tokens are forbidden (logit -inf)
  int n_probs = 0;           // top log-probabilities reported per token, 0 .. kMaxProbs
  bool logprobs = false;     // report each token's log-probability
  // With n_probs > 0: report instead the probabilities after the sampler chain (the
  // candidates it left, renormalised after temperature; llama-server's post_sampling_probs).
  bool post_sampling_probs = false;
  bool cache_prompt = true;  // reuse a cached prefix, and leave this request's cells cached
  // Embedding requests decode the prompt and return one pooled vector; nothing is
  // generated. Needs EngineParams::embeddings.
  bool embedding = false;
  Pooling pooling = Pooling::Mean;
  bool normalize = true;
  // With `embedding`: every prompt token's vector (Stream::token_embeddings), neither
  // pooled nor normalized, instead of the pooled one (llama.cpp's pooling "none").
  bool token_embeddings = false;
  // The user scales of the model's LoRA adapters (one per ModelInfo::adapters, in order)
  // this request runs with; absent: the engine's defaults when it is submitted
  // (Engine::adapter_scales).
  std::optional<std::vector<float>> adapter_scales;
};

/// Why a choice ended.
enum class FinishReason { Stop, Length, Cancelled, Error };
/// "stop", "length", "cancelled", "error".
const char* finish_reason_name(FinishReason r);

struct TokenLogprob {
  TokenId token = 0;
  float logprob = 0.0f;  // log-softmax of the model's logits (before any sampler step)
};

/// A token and its probability after the sampler chain.
struct TokenProb {
  TokenId token = 0;
  float prob = 0.0f;
};

/// One event of a request's stream.
struct Event {
  enum class Kind {
    Token,       // choice `choice` produced `token`
    ChoiceDone,  // choice `choice` ended for `finish`; `text` = held-back text released
    Done,        // every choice ended: the request is over (usage and embedding final)
    Error,       // the request failed: `message`; Done follows
  };
  Kind kind = Kind::Token;
  int choice = 0;
  TokenId token = -1;
  std::string piece;  // the token's own text (render_special off), for logprobs
  std::string text;   // text released now: a token's text may be held back while it could
                      // start a stop string (or is a partial UTF-8 character), then
                      // released with a later event, or dropped when it was the stop
  TokenLogprob logprob;             // with GenerationRequest::logprobs
  std::vector<TokenLogprob> top;    // n_probs most likely tokens, most likely first
  // With GenerationRequest::post_sampling_probs (instead of logprob and top): the chosen
  // token's probability after the sampler chain, and up to n_probs of the candidates the
  // chain left, most likely first (fewer when fewer had a probability above 0).
  float prob = 0.0f;
  std::vector<TokenProb> top_probs;
  FinishReason finish = FinishReason::Stop;
  std::string stop_word;  // ChoiceDone: the stop string that ended it ("" otherwise: an
                          // end-of-generation token, a complete grammar, a limit)
  std::string message;    // ChoiceDone with Error, and Error: what went wrong
};

/// Token counts and timing of a request.
struct Usage {
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;      // prompt tokens whose cells came from the prefix cache
  int64_t completion_tokens = 0;  // all choices together
  Clock::time_point queued;       // submit()
  Clock::time_point admitted;     // took its slots
  Clock::time_point first_token;  // first token delivered (== finished when none)
  Clock::time_point finished;
  int64_t draft_tokens = 0;    // speculative decoding: tokens drafted for its choices
  int64_t draft_accepted = 0;  // and accepted
};

/// The receiving end of one request. Thread-safe.
class Stream {
 public:
  /// Waits until events are pending (or `timeout` passes) and takes them all; empty on a
  /// timeout. After the Done event, returns empty at once.
  std::vector<Event> wait(std::chrono::milliseconds timeout);
  /// Asks the engine to stop this request: its choices end as Cancelled and its cells are
  /// freed at the start of the next step. A waiting request's place in the queue is free
  /// at once: the next submission that finds the queue full takes cancelled requests out
  /// first. Safe to call at any time, more than once.
  void cancel();
  bool cancelled() const;
  /// True once Done was delivered (usage and embedding are then final).
  bool done() const;
  /// The usage so far: with each Token event the counts and timestamps up to it (a
  /// reader may see later tokens counted already); final once Done was delivered.
  Usage usage() const;
  /// The pooled embedding of an embedding request (after Done).
  std::vector<float> embedding() const;
  /// Every prompt token's vector of a GenerationRequest::token_embeddings request, in
  /// prompt order (after Done).
  std::vector<std::vector<float>> token_embeddings() const;
  /// The engine's id for the request (unique, increasing).
  uint64_t id() const { return id_; }

  // ---- the engine's side ----
  explicit Stream(uint64_t id) : id_(id) {}
  void push(Event e);
  void set_usage(const Usage& u);
  void set_embedding(std::vector<float> v);
  void set_token_embeddings(std::vector<std::vector<float>> rows);

 private:
  const uint64_t id_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  bool done_ = false;
  bool delivered_done_ = false;
  bool cancelled_ = false;
  Usage usage_;
  std::vector<float> embedding_;
  std::vector<std::vector<float>> token_embeddings_;
};

struct EngineParams {
  int n_parallel = 4;          // sequences decoded at once (slots), 1 .. 32
  int64_t n_ctx_per_seq = 0;   // cells one sequence may use (prompt + generated); 0: the
                               // model's training context, at most 4096
  int64_t n_ctx = 0;           // cells of the KV cache; 0: n_parallel * n_ctx_per_seq. Must
                               // be at least that (cached prefixes use what is left free)
  int64_t batch_budget = 512;  // tokens per step (generating tokens + prompt chunks)
  int max_queue = 64;          // admissions waiting for a slot (a group submitted together
                               // counts once); more are refused (QueueFull)
  bool prefix_cache = true;
  int n_threads = 2;
  bool embeddings = false;     // accept embedding requests (always, for an encoder model,
                               // which accepts nothing else)
  // Speculative decoding in every slot (tessera/speculative.h): drafts from a draft model
  // (it must outlive the engine and have the model's vocabulary; it drafts greedily, in a
  // context of its own with a sequence per slot), or with `lookup` from n-grams of the
  // slot's own tokens. Neither: off. A request with post_sampling_probs is decoded plainly.
  const Model* draft_model = nullptr;
  bool lookup = false;
  SpeculativeParams speculative;
  DType type_k = DType::F16;   // the KV cache's types (ContextParams::type_k / type_v)
  DType type_v = DType::F16;
  RopeScalingParams rope;      // the context's RoPE scaling (tessera/rope_scaling.h)
};

/// Why submit() refused a request.
enum class Refusal {
  None,
  Invalid,       // bad field (message names it): HTTP 400
  TooLong,       // prompt + max_tokens does not fit a sequence: HTTP 400
  QueueFull,     // HTTP 429
  ShuttingDown,  // HTTP 503
};

struct Submitted {
  std::shared_ptr<Stream> stream;  // null when refused
  Refusal refusal = Refusal::None;
  std::string message;
};

/// What submit_group() answers.
struct SubmittedGroup {
  std::vector<std::shared_ptr<Stream>> streams;  // one per request, in order; empty when refused
  Refusal refusal = Refusal::None;
  std::string message;
};

/// One slot as /slots shows it.
struct SlotInfo {
  int id = 0;
  bool busy = false;
  uint64_t request = 0;     // id of the request it serves (when busy)
  int64_t n_past = 0;       // cells of its sequence
  int64_t n_generated = 0;  // tokens generated for its choice so far
};

struct EngineStats {
  int running = 0;            // requests holding slots
  int waiting = 0;            // admissions in the queue (a group counts once)
  int64_t cells_used = 0;     // KV cells in use, cached prefixes included
  int64_t n_ctx = 0;
  int cached_prefixes = 0;
  int64_t cached_tokens = 0;  // tokens held by cached prefixes (shared cells counted per prefix)
  int64_t steps = 0;          // batches decoded so far
  int64_t evictions = 0;      // cached prefixes evicted so far
  // Speculative decoding so far: the verifications of a sequence (each one target pass
  // for it), the tokens they produced, the tokens drafted and those accepted.
  int64_t spec_steps = 0;
  int64_t spec_tokens = 0;
  int64_t draft_tokens = 0;
  int64_t draft_accepted = 0;
  std::vector<SlotInfo> slots;
};

/// A slot action (llama-server's POST /slots/{id}?action=...). What a slot holds: the
/// most recently used cached prefix that slot N left (its `origin`). Save writes that
/// prefix's cells to a file (0 tokens when the slot has none); Restore loads a file into
/// a new cached prefix of slot N, replacing slot N's prefixes, so that the next prompt
/// starting with its tokens reuses them; Erase drops every cached prefix slot N left.
enum class SlotActionKind { Save, Restore, Erase };

struct SlotActionResult {
  enum class Error {
    None,
    Invalid,       // bad slot id, or a file that cannot be restored (message says why): HTTP 400
    NotFound,      // Restore: no such file: HTTP 404
    Busy,          // the slot stayed busy past the timeout: HTTP 503
    ShuttingDown,  // HTTP 503
    Failed,        // Save: the file could not be written: HTTP 500
  };
  Error error = Error::None;
  std::string message;
  int64_t n_tokens = 0;  // saved, restored or erased
  int64_t n_bytes = 0;   // written (Save) or read (Restore)
  double ms = 0;         // time of the file work
};

class EngineImpl;

class Engine {
 public:
  static constexpr int kMaxProbs = 20;
  /// Requests of one submit_group(): bounds what one place in the queue holds.
  static constexpr int kMaxGroup = 1024;

  /// An engine over `model` (which must outlive it). Errors: parameters out of range, no
  /// tokenizer, the context cannot be created.
  static Result<std::unique_ptr<Engine>> create(const Model& model, const EngineParams& params);
  ~Engine();

  /// Checks and enqueues a request. Refused (nothing queued) when a field is invalid, the
  /// prompt plus max_tokens exceeds n_ctx_per_seq, n_choices exceeds n_parallel, the queue
  /// is full, or the engine is shutting down.
  Submitted submit(GenerationRequest request);
  /// Checks and enqueues requests as one admission: all of them are queued or none is.
  /// The group takes one place in the queue however many requests it has; they are
  /// admitted in order as slots free up, before anything submitted later. Refused whole
  /// for the reasons of submit() (the message names the first bad request's index), and as
  /// Invalid when the group is empty or has more than kMaxGroup requests.
  SubmittedGroup submit_group(std::vector<GenerationRequest> requests);

  /// Runs one step (see the top of this file). Returns false when there was nothing to do.
  /// Call from one thread only, and not after start().
  bool step();
  /// Starts the loop thread: it runs step() while there is work, and sleeps otherwise.
  void start();
  /// Stops taking requests; `cancel_running`: also cancels the running and waiting ones,
  /// else lets them finish. Then waits for the loop thread to end (if started).
  void shutdown(bool cancel_running);

  /// Runs a slot action on the stepping thread, between steps, once `slot` is idle (a
  /// busy slot is waited for, up to `timeout`; then Busy, and the action is dropped).
  /// `path` is the file of Save and Restore. Needs start(): it blocks until the loop
  /// thread has run it. Pending actions are answered ShuttingDown at shutdown().
  SlotActionResult slot_action(SlotActionKind kind, int slot, const std::string& path,
                               std::chrono::milliseconds timeout);

  EngineStats stats() const;
  /// The adapter scales of requests submitted without their own (at first the scales
  /// given at load; empty without adapters).
  std::vector<float> adapter_scales() const;
  /// Sets those defaults for the requests submitted from now on (running ones keep
  /// theirs). Thread-safe. Errors (nothing changes): not one scale per adapter, a scale
  /// that is not finite.
  Status set_adapter_scales(std::vector<float> scales);
  const EngineParams& params() const;
  const Model& model() const;

 private:
  explicit Engine(std::unique_ptr<EngineImpl> impl);
  std::unique_ptr<EngineImpl> impl_;
};

}  // namespace tessera::serving
