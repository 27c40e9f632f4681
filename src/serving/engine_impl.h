// The Engine's state: the queue (shared with submitting threads), and the slots and
// running requests (owned by the thread that steps). engine.cpp: creation, submit, the
// loop thread; step.cpp: one step.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "serving/admission_queue.h"
#include "serving/prefix_cache.h"
#include "serving/stop_strings.h"
#include "tessera/context.h"
#include "tessera/serving.h"
#include "tessera/tokenizer.h"

namespace tessera::serving {

/// One completion of a request: a sequence of the context and what produces its text.
struct Choice {
  int index = 0;  // in the request
  SeqId seq = -1;
  SamplerChain sampler;
  std::unique_ptr<StreamDecoder> decoder;
  StopStrings stops;
  int32_t n_generated = 0;
  Pos next_pos = 0;         // where `pending` goes
  TokenId pending = -1;     // sampled, decoded in the next step
  int64_t batch_index = -1; // the batch token whose logits it samples from next; -1: none
  bool done = false;
  Draft draft;              // speculative decoding: the tokens decoded after `pending`
  std::mt19937_64 rng;      // the accept/reject draws of speculative decoding
};

/// A request that submit() accepted: waiting in the queue, then running in its slots.
struct Running {
  std::shared_ptr<Stream> stream;
  GenerationRequest req;
  std::vector<Choice> choices;
  int32_t max_generated = 0;  // per choice (max_tokens, or what fits the sequence)
  int64_t n_prompt_in_cache = 0;  // prompt tokens in the cells (reused + decoded)
  std::vector<float> embd_rows;   // embedding requests: the hidden states so far
  int64_t chunk_begin = 0;        // this step's prompt chunk: its batch indices
  int64_t chunk_len = 0;
  Usage usage;
  bool delivered_first = false;
  std::vector<float> scales;  // the adapter scales it runs with (empty without adapters)
  int64_t last_decoded = 0;   // the decode round it last had tokens in (or was admitted)

  bool prompt_done() const { return n_prompt_in_cache == int64_t(req.prompt.size()); }
  bool all_done() const;
};

/// A slot action waiting for the stepping thread (shared with the caller, under mu_).
struct SlotJob {
  SlotActionKind kind = SlotActionKind::Erase;
  int slot = 0;
  std::string path;
  SlotActionResult result;
  bool done = false;
};

class EngineImpl {
 public:
  EngineImpl(const Model& model, const EngineParams& params, std::unique_ptr<Context> ctx);

  /// With EngineParams::draft_model or lookup: the drafters of the slots (speculate.cpp).
  /// Errors: a draft vocabulary that does not match, a draft context that cannot be made.
  Status start_speculation();
  SubmittedGroup submit_group(std::vector<GenerationRequest> requests);
  bool step();
  void start();
  void loop();
  void shutdown(bool cancel_running);
  EngineStats stats() const;
  std::vector<float> adapter_scales() const;
  Status set_adapter_scales(std::vector<float> scales);
  SlotActionResult slot_action(SlotActionKind kind, int slot, const std::string& path,
                               std::chrono::milliseconds timeout);

  const Model& model_;
  const EngineParams params_;

 private:
  Status validate(const GenerationRequest& r) const;
  /// validate() and the context check of one request: Refusal::None when it may queue.
  Submitted check(const GenerationRequest& r) const;
  Result<std::unique_ptr<Running>> prepare(GenerationRequest r, uint64_t id) const;
  /// Under mu_: None when an admission may enter the queue (cancelled requests are taken
  /// out first when it is full), else why not.
  Submitted room_for_one();

  // step.cpp
  bool drop_cancelled();
  void admit();
  PrefixCache::Match find_prefix(const Running& r);
  void reuse_prefix(Running& r, const PrefixCache::Match& m);
  /// With adapters: the scale set this step decodes, set on the context.
  void choose_scales();
  /// Whether `r` runs with the scale set this step decodes.
  bool in_step(const Running& r) const { return n_adapters_ == 0 || r.scales == step_scales_; }
  void build_batch(Batch& batch);
  void keep_regions_free(const Batch& batch);
  bool make_room(int64_t n_cells);
  void after_decode(const Batch& batch);
  void sample_choice(Running& r, Choice& c);
  /// Delivers token `t` of choice `c`, chosen from `logits` (`from`: the chain's
  /// distribution, for post-sampling probabilities); false when the choice ended.
  bool deliver(Running& r, Choice& c, TokenId t, std::span<const float> logits, const PickedFrom* from);

  // speculate.cpp
  /// Whether the choices of `r` draft (a drafter per slot, and nothing that needs one
  /// token per pass).
  bool speculates(const Running& r) const;
  /// Adds choice `c`'s pending token and its draft to `batch`.
  void add_with_draft(Batch& batch, Running& r, Choice& c);
  /// Verifies the draft of `c` after the decode and delivers what it produced.
  void verify_choice(Running& r, Choice& c);
  void finish_choice(Running& r, Choice& c, FinishReason why, const std::string& message = {});
  void collect_embeddings(Running& r, const Batch& batch);
  void finish_request(Running& r);
  void fail_all(const std::string& message);
  /// Frees the request's slots; its sequences become cached prefixes when `cacheable`.
  void retire(Running& r, bool cacheable);
  void store_prefix(SeqId seq, std::span<const float> scales = {});
  /// Drops the cached prefix of holder `h` (cells still used by others stay).
  void evict(SeqId h);
  void publish_stats();

  // slot_actions.cpp
  /// Runs the pending slot actions whose slot is idle; true when it ran any.
  bool run_slot_jobs();
  SlotActionResult run_slot_job(const SlotJob& job);
  SlotActionResult save_slot(int slot, const std::string& path);
  SlotActionResult restore_slot(int slot, const std::string& path);
  /// Drops every cached prefix slot `slot` left; the tokens they held.
  int64_t erase_slot(int slot);
  /// Answers every pending slot action with ShuttingDown (under mu_).
  void fail_slot_jobs();

  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Context> draft_ctx_;               // with EngineParams::draft_model
  std::vector<std::unique_ptr<Drafter>> drafters_;   // one per slot; empty: no speculation
  int64_t spec_steps_ = 0, spec_tokens_ = 0, draft_tokens_ = 0, draft_accepted_ = 0;
  const Tokenizer& tok_;
  std::vector<TokenId> eog_tokens_;

  // Shared with submitting threads.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  AdmissionQueue queue_;
  std::vector<std::unique_ptr<Running>> cancelled_;  // taken out of the queue, not yet ended
  bool shutting_down_ = false;
  bool stop_loop_ = false;
  std::atomic<bool> cancel_all_{false};
  uint64_t next_id_ = 1;
  std::vector<float> default_scales_;  // adapter scales of requests without their own
  std::vector<std::shared_ptr<SlotJob>> slot_jobs_;  // waiting for the stepping thread
  std::condition_variable slot_jobs_cv_;             // a job was done
  EngineStats stats_;
  std::thread thread_;

  // The stepping thread's.
  std::vector<std::unique_ptr<Running>> running_;  // in admission order
  std::vector<bool> slot_busy_;
  PrefixCache cache_;
  int64_t steps_ = 0;
  int64_t evictions_ = 0;
  const size_t n_adapters_;
  std::vector<float> step_scales_;  // with adapters: the scale set this step decodes
  int64_t decode_round_ = 0;        // build_batch calls so far
};

}  // namespace tessera::serving
