// Running a Job on the engine: submitting its prompts, reading their events as one
// stream of choices (choice index = prompt index x n + choice), the --timeout deadline,
// cancellation, and collecting a non-streaming answer.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/request_decode.h"
#include "server/request_registry.h"
#include "tessera/serving.h"

namespace tessera::server {

struct ServerContext;
class ConnectionWatch;

/// One generated token as the responses report it.
struct TokenInfo {
  TokenId token = 0;
  std::string piece;
  float logprob = 0;
  std::vector<serving::TokenLogprob> top;
  size_t text_offset = 0;  // bytes of the choice's text before this token's
  float prob = 0;          // post_sampling_probs: its probability after the sampler chain
  std::vector<serving::TokenProb> top_probs = {};  // and the candidates the chain left
};

struct ChoiceOutput {
  std::string text;
  serving::FinishReason finish = serving::FinishReason::Length;
  std::string stop_word;  // the stop string that ended it ("" when something else did)
  std::vector<TokenInfo> tokens;
};

/// A submitted Job. Destroying it cancels what is still running.
class JobRun {
 public:
  /// Submits every prompt as one admission (all queued, or none); throws the engine's
  /// refusal as an ApiError (400, 429, 503).
  JobRun(ServerContext& ctx, const Job& job);
  ~JobRun();
  JobRun(const JobRun&) = delete;
  JobRun& operator=(const JobRun&) = delete;

  /// Events of all prompts (Done events are kept back: done() tells), waiting up to
  /// `wait` for the first. Cancels everything once the deadline passes.
  std::vector<serving::Event> poll(std::chrono::milliseconds wait);
  /// True once every prompt delivered Done.
  bool done() const;
  /// True once prompt `i` delivered Done (its usage is then final).
  bool done(size_t i) const { return done_[i]; }
  void cancel();
  /// True when --timeout cancelled the job (its choices then end as "length").
  bool timed_out() const { return timed_out_; }
  int n_choices() const { return int(streams_.size()) * n_per_prompt_; }
  /// The pooled vector of prompt `i` of an embedding job (after done()).
  std::vector<float> embedding(size_t i) const { return streams_[i]->embedding(); }
  /// Every token's vector of prompt `i` of a token_embeddings job (after done()).
  std::vector<std::vector<float>> token_embeddings(size_t i) const { return streams_[i]->token_embeddings(); }
  /// Usage summed over the prompts (timestamps: the earliest start, the latest end).
  serving::Usage usage() const;
  /// Usage of prompt `i` alone.
  serving::Usage usage(size_t i) const { return streams_[i]->usage(); }

 private:
  RequestRegistry& registry_;
  std::vector<std::shared_ptr<serving::Stream>> streams_;
  std::vector<bool> done_;
  int n_per_prompt_ = 1;
  serving::Clock::time_point deadline_;
  bool has_deadline_ = false;
  bool timed_out_ = false;
};

/// The finish reason as the APIs spell it: "stop" or "length" (a timeout is "length").
/// Cancelled (not by the timeout) and Error have no spelling: callers report an error.
const char* finish_name(serving::FinishReason r, bool timed_out);

/// Applies one event to the choices (tokens, text, finish); `tok` gives EOG tokens.
void apply_event(const serving::Event& e, std::vector<ChoiceOutput>& choices, const Tokenizer& tok);

struct JobOutput {
  std::vector<ChoiceOutput> choices;
  serving::Usage usage;
};

/// Waits for a non-streaming job to end and returns its choices. Throws: 500 for an
/// engine error, 503 when the server shut down under it; when the client went away
/// (`watch`), the job is cancelled and a 499-style ApiError is thrown (nobody reads it).
JobOutput collect(JobRun& run, ServerContext& ctx, ConnectionWatch& watch);

/// Records a finished job's usage in the request log line and the metrics.
void record_usage(ServerContext& ctx, const serving::Usage& u);

}  // namespace tessera::server
