#include "server/generation.h"

#include <algorithm>

#include "server/connection_watch.h"
#include "server/context_fit.h"
#include "server/errors.h"
#include "server/request_log.h"
#include "server/server_context.h"

namespace tessera::server {

using serving::Event;
using serving::FinishReason;

namespace {

ApiError refusal_error(serving::Refusal refusal, const std::string& message) {
  switch (refusal) {
    case serving::Refusal::QueueFull:
      return ApiError(429, "too many requests are waiting: " + message, "rate_limit_error", {}, "queue_full");
    case serving::Refusal::ShuttingDown: return unavailable("the server is shutting down", "shutting_down");
    case serving::Refusal::TooLong: return bad_request(message, "context_length_exceeded");
    default: return bad_request(message, "invalid_request");
  }
}

}  // namespace

JobRun::JobRun(ServerContext& ctx, const Job& job) : registry_(ctx.requests), n_per_prompt_(job.request.n_choices) {
  if (ctx.options.timeout_s > 0) {
    has_deadline_ = true;
    deadline_ = serving::Clock::now() + std::chrono::duration_cast<serving::Clock::duration>(
                                            std::chrono::duration<double>(ctx.options.timeout_s));
  }
  // The prompts are one admission: queued together or refused together (nothing left
  // behind in the queue), and one place in it however many they are.
  std::vector<serving::GenerationRequest> requests;
  for (const std::vector<TokenId>& prompt : job.prompts) {
    requests.push_back(job.request);
    requests.back().prompt = prompt;
    // A limit past the context: generate until the sequence is full (as llama-server).
    requests.back().max_tokens = fit_max_tokens(job.request.max_tokens, int64_t(prompt.size()), ctx.seq_ctx());
  }
  if (job.dropped_messages > 0) {
    add_log_note("dropped " + std::to_string(job.dropped_messages) + " old messages");
  } else if (job.truncated()) {
    add_log_note("prompt truncated");
  }
  serving::SubmittedGroup s = ctx.engine->submit_group(std::move(requests));
  if (s.streams.empty()) throw refusal_error(s.refusal, s.message);
  streams_ = std::move(s.streams);
  done_.assign(streams_.size(), false);
  for (const auto& stream : streams_) registry_.add(stream->id(), job.request);
}

JobRun::~JobRun() {
  cancel();
  for (const auto& stream : streams_) registry_.remove(stream->id());
}

void JobRun::cancel() {
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (!done_[i]) streams_[i]->cancel();
  }
}

bool JobRun::done() const { return std::all_of(done_.begin(), done_.end(), [](bool d) { return d; }); }

std::vector<Event> JobRun::poll(std::chrono::milliseconds wait) {
  if (has_deadline_ && !timed_out_ && serving::Clock::now() >= deadline_) {
    timed_out_ = true;
    cancel();
  }
  std::vector<Event> out;
  bool waited = false;
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (done_[i]) continue;
    // Wait on the first open stream only; the others are drained without waiting.
    std::vector<Event> events = streams_[i]->wait(waited ? std::chrono::milliseconds(0) : wait);
    waited = true;
    for (Event& e : events) {
      if (e.kind == Event::Kind::Done) {
        done_[i] = true;
        continue;
      }
      e.choice += int(i) * n_per_prompt_;
      out.push_back(std::move(e));
    }
  }
  return out;
}

serving::Usage JobRun::usage() const {
  serving::Usage total;
  bool first = true;
  for (const auto& s : streams_) {
    const serving::Usage u = s->usage();
    total.prompt_tokens += u.prompt_tokens;
    total.cached_tokens += u.cached_tokens;
    total.completion_tokens += u.completion_tokens;
    total.draft_tokens += u.draft_tokens;
    total.draft_accepted += u.draft_accepted;
    total.queued = first ? u.queued : std::min(total.queued, u.queued);
    total.admitted = first ? u.admitted : std::min(total.admitted, u.admitted);
    total.first_token = first ? u.first_token : std::min(total.first_token, u.first_token);
    total.finished = first ? u.finished : std::max(total.finished, u.finished);
    first = false;
  }
  return total;
}

const char* finish_name(FinishReason r, bool timed_out) {
  if (r == FinishReason::Stop) return "stop";
  if (r == FinishReason::Length || (r == FinishReason::Cancelled && timed_out)) return "length";
  return nullptr;
}

void apply_event(const Event& e, std::vector<ChoiceOutput>& choices, const Tokenizer& tok) {
  if (e.choice < 0 || size_t(e.choice) >= choices.size()) return;
  ChoiceOutput& c = choices[size_t(e.choice)];
  if (e.kind == Event::Kind::Token) {
    c.tokens.push_back({e.token, e.piece, e.logprob.logprob, e.top, c.text.size(), e.prob, e.top_probs});
    c.text += e.text;
  } else if (e.kind == Event::Kind::ChoiceDone) {
    c.text += e.text;
    c.finish = e.finish;
    c.stop_word = e.stop_word;
  }
}

void record_usage(ServerContext& ctx, const serving::Usage& u) {
  RequestLog& log = request_log();
  log.has_tokens = true;
  log.prompt_tokens = u.prompt_tokens;
  log.cached_tokens = u.cached_tokens;
  log.generated_tokens = u.completion_tokens;
  ctx.metrics.observe(u);
}

JobOutput collect(JobRun& run, ServerContext& ctx, ConnectionWatch& watch) {
  JobOutput out;
  out.choices.resize(size_t(run.n_choices()));
  std::string error;
  bool disconnected = false;
  // After a cancel the engine ends the request within a step; the bound only guards
  // against an engine that never answers.
  int polls_after_cancel = 0;
  while (!run.done() && polls_after_cancel < 200) {
    for (const Event& e : run.poll(std::chrono::milliseconds(20))) {
      if (e.kind == Event::Kind::Error && error.empty()) error = e.message.empty() ? "generation failed" : e.message;
      apply_event(e, out.choices, ctx.tokenizer());
    }
    if (!disconnected && watch.closed()) {
      disconnected = true;
      run.cancel();
    }
    if (disconnected || run.timed_out() || ctx.shutting_down()) ++polls_after_cancel;
  }
  out.usage = run.usage();
  record_usage(ctx, out.usage);
  if (disconnected) {
    add_log_note("client disconnected");
    throw ApiError(499, "the client closed the connection", "client_closed_request");
  }
  if (run.timed_out()) add_log_note("timeout");
  if (!error.empty()) throw internal_error(error);
  for (const ChoiceOutput& c : out.choices) {
    if (!finish_name(c.finish, run.timed_out())) {
      if (ctx.shutting_down()) throw unavailable("the server shut down during the request", "shutting_down");
      throw internal_error(std::string("generation ended: ") + serving::finish_reason_name(c.finish));
    }
  }
  return out;
}

}  // namespace tessera::server
