// One step of the Engine (see tessera/serving.h): cancellations, admission, one batch,
// decode, sampling and delivery; finished requests leave their cells as cached prefixes.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>

#include "core/check.h"
#include "serving/engine_impl.h"

namespace tessera::serving {
namespace {

/// Sequence operations on ids the engine owns cannot fail.
void must(const Status& s) { TESSERA_CHECK_MSG(s.is_ok(), s.message().c_str()); }

/// The chosen token's log-probability and the n most likely tokens', from raw logits.
void fill_logprobs(std::span<const float> logits, TokenId chosen, int n_top, Event& e) {
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - max);
  const float lse = max + float(std::log(sum));
  e.logprob = {chosen, logits[size_t(chosen)] - lse};
  std::vector<TokenId> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const size_t n = std::min(size_t(n_top), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + ptrdiff_t(n), ids.end(), [&](TokenId a, TokenId b) {
    return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
  });
  for (size_t i = 0; i < n; ++i) e.top.push_back({ids[i], logits[size_t(ids[i])] - lse});
}

}  // namespace

bool EngineImpl::step() {
  bool did = drop_cancelled();
  did = run_slot_jobs() || did;  // before admit(): a slot just freed is acted on first
  admit();
  if (running_.empty()) {
    publish_stats();
    return did;
  }
  if (n_adapters_ > 0) choose_scales();
  Batch batch;
  build_batch(batch);
  TESSERA_CHECK(!batch.empty());  // a running request always has a token to decode
  keep_regions_free(batch);
  if (!make_room(batch.size())) {
    fail_all("the KV cache has no free cells for this step");
  } else if (Status s = ctx_->decode(batch); !s) {
    fail_all("decode failed: " + s.message());
  } else {
    ++steps_;
    after_decode(batch);
  }
  publish_stats();
  return true;
}

bool EngineImpl::drop_cancelled() {
  const bool all = cancel_all_.load();
  std::vector<std::unique_ptr<Running>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dropped = queue_.take_cancelled(all);
    std::move(cancelled_.begin(), cancelled_.end(), std::back_inserter(dropped));
    cancelled_.clear();
  }
  for (auto& r : dropped) {
    for (Choice& c : r->choices) finish_choice(*r, c, FinishReason::Cancelled);
    finish_request(*r);
  }
  bool any = !dropped.empty();
  for (auto it = running_.begin(); it != running_.end();) {
    Running& r = **it;
    if (all || r.stream->cancelled()) {
      for (Choice& c : r.choices) finish_choice(r, c, FinishReason::Cancelled);
      finish_request(r);
      retire(r, true);  // what was decoded is valid: it may serve later prompts
      it = running_.erase(it);
      any = true;
    } else {
      ++it;
    }
  }
  return any;
}

void EngineImpl::admit() {
  for (;;) {
    std::unique_ptr<Running> r;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) return;
      const int free = int(std::count(slot_busy_.begin(), slot_busy_.end(), false));
      if (free < int(queue_.front()->choices.size())) return;  // first come, first served
      r = queue_.pop_front();
    }
    // The first choice takes the slot whose home region holds the cached prefix, when
    // it is free: the prefix is then shared in place, else copied (see reuse_prefix).
    const PrefixCache::Match m = find_prefix(*r);
    size_t slot = 0;
    for (Choice& c : r->choices) {
      if (&c == &r->choices[0] && m.length > 0 && m.origin >= 0 && !slot_busy_[size_t(m.origin)]) {
        c.seq = m.origin;
      } else {
        while (slot_busy_[slot]) ++slot;
        c.seq = SeqId(slot);
      }
      slot_busy_[size_t(c.seq)] = true;
    }
    r->usage.admitted = Clock::now();
    r->last_decoded = decode_round_;
    reuse_prefix(*r, m);
    running_.push_back(std::move(r));
  }
}

PrefixCache::Match EngineImpl::find_prefix(const Running& r) {
  if (!params_.prefix_cache || !r.req.cache_prompt || r.req.embedding) return {};
  // The last prompt token is always decoded: its logits give the first token.
  const std::span<const TokenId> prompt(r.req.prompt);
  return cache_.longest_prefix(
      prompt.first(prompt.size() - 1), [&](SeqId origin) { return !slot_busy_[size_t(origin)]; },
      r.scales);
}

// Why a copy when the prefix lives in another slot's region: attention reads every cell
// from a sequence's first to its last, so cells shared across regions would make each
// generated token read the regions in between (a whole cache of other sequences' cells),
// every step. Copying the prefix's keys and values once (a memcpy per layer) is far
// cheaper than that, and cheaper still than decoding the prefix again.
void EngineImpl::reuse_prefix(Running& r, const PrefixCache::Match& m) {
  if (m.length == 0) return;
  const SeqId first = r.choices[0].seq;
  if (first == m.origin) {
    must(ctx_->seq_cp(m.holder, first, 0, Pos(m.length)));
  } else {
    // The copy goes to the slot's region: its older cached prefixes make room first.
    while (ctx_->seq_home_free(first) < m.length) {
      const SeqId h = cache_.least_recently_used(first, m.holder);
      if (h < 0) break;
      evict(h);
    }
    if (!ctx_->seq_copy(m.holder, first, 0, Pos(m.length)).is_ok()) return;  // too few free cells:
                                                                              // decode it all
  }
  for (size_t i = 1; i < r.choices.size(); ++i) must(ctx_->seq_cp(first, r.choices[i].seq, 0, Pos(m.length)));
  r.n_prompt_in_cache = m.length;
  r.usage.cached_tokens = m.length;
}

// llama-server never batches slots with different LoRA configurations together; here a
// step decodes the requests of one scale set: the set of the request that has waited
// longest for a decode (the first admitted among equals), so that every set progresses.
void EngineImpl::choose_scales() {
  const Running* oldest = running_.front().get();
  for (const auto& r : running_) {
    if (r->last_decoded < oldest->last_decoded) oldest = r.get();
  }
  step_scales_ = oldest->scales;
  must(ctx_->set_adapter_scales(step_scales_));  // checked at submit()
}

void EngineImpl::build_batch(Batch& batch) {
  ++decode_round_;
  // One token for every generating sequence first ...
  for (auto& r : running_) {
    r->chunk_len = 0;
    if (!r->prompt_done() || !in_step(*r)) continue;
    r->last_decoded = decode_round_;
    for (Choice& c : r->choices) {
      if (c.done) continue;
      if (speculates(*r)) {
        add_with_draft(batch, *r, c);
        continue;
      }
      c.batch_index = batch.size();
      batch.add(c.pending, c.next_pos++, c.seq, true);
    }
  }
  // ... then prompt chunks, in admission order, up to the budget.
  std::vector<SeqId> seqs;
  for (auto& r : running_) {
    const int64_t room = params_.batch_budget - batch.size();
    if (room <= 0) break;
    if (r->prompt_done() || !in_step(*r)) continue;
    const int64_t n_prompt = int64_t(r->req.prompt.size());
    const int64_t chunk = std::min(room, n_prompt - r->n_prompt_in_cache);
    // An encoder's attention is not causal: its prompt goes in whole, at a later step if
    // the room left now is too small (validate keeps it within the budget).
    if (model_.info().encoder && chunk < n_prompt - r->n_prompt_in_cache) continue;
    seqs.clear();
    for (const Choice& c : r->choices) seqs.push_back(c.seq);
    r->chunk_begin = batch.size();
    r->chunk_len = chunk;
    r->last_decoded = decode_round_;
    for (int64_t k = 0; k < chunk; ++k) {
      const int64_t pos = r->n_prompt_in_cache + k;
      const bool last = pos == n_prompt - 1;
      batch.add(r->req.prompt[size_t(pos)], Pos(pos), seqs, r->req.embedding || last);
    }
    r->n_prompt_in_cache += chunk;
    if (r->prompt_done() && !r->req.embedding) {
      for (Choice& c : r->choices) c.batch_index = batch.size() - 1;
    }
  }
}

// A token goes to its sequence's home region (the slot's) unless that is full; then it
// would land anywhere, and the sequence's attention would span the cache. So the slot's
// own cached prefixes make way first.
void EngineImpl::keep_regions_free(const Batch& batch) {
  std::vector<int64_t> need(size_t(params_.n_parallel), 0);
  for (int64_t i = 0; i < batch.size(); ++i) ++need[size_t(batch.seqs(i)[0])];
  for (SeqId s = 0; s < SeqId(need.size()); ++s) {
    while (need[size_t(s)] > 0 && need[size_t(s)] > ctx_->seq_home_free(s)) {
      const SeqId h = cache_.least_recently_used(s);
      if (h < 0) break;
      evict(h);
    }
  }
}

bool EngineImpl::make_room(int64_t n_cells) {
  while (ctx_->n_ctx() - ctx_->n_cells_used() < n_cells) {
    const SeqId h = cache_.least_recently_used();
    if (h < 0) return false;
    evict(h);
  }
  return true;
}

void EngineImpl::after_decode(const Batch& batch) {
  for (auto& rp : running_) {
    Running& r = *rp;
    if (r.req.embedding) {
      collect_embeddings(r, batch);
      continue;
    }
    for (Choice& c : r.choices) {
      if (c.done || c.batch_index < 0) continue;
      if (r.max_generated == 0) {
        c.batch_index = -1;
        finish_choice(r, c, FinishReason::Length);
      } else if (speculates(r) && r.prompt_done() && c.n_generated > 0) {
        verify_choice(r, c);
      } else {
        sample_choice(r, c);
      }
    }
  }
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->all_done()) {
      finish_request(**it);
      retire(**it, true);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
}

void EngineImpl::sample_choice(Running& r, Choice& c) {
  const std::span<const float> logits = ctx_->logits_at(c.batch_index);
  c.batch_index = -1;
  const bool post_sampling = r.req.post_sampling_probs && r.req.n_probs > 0;
  PickedFrom from;
  Result<TokenId> t =
      post_sampling ? c.sampler.sample(logits, size_t(r.req.n_probs), from) : c.sampler.sample(logits);
  if (!t) return finish_choice(r, c, FinishReason::Error, t.status().message());
  if (Status s = c.sampler.accept(*t); !s) return finish_choice(r, c, FinishReason::Error, s.message());
  if (tok_.is_eog(*t)) return finish_choice(r, c, FinishReason::Stop);
  deliver(r, c, *t, logits, post_sampling ? &from : nullptr);
}

bool EngineImpl::deliver(Running& r, Choice& c, TokenId t, std::span<const float> logits, const PickedFrom* from) {
  ++c.n_generated;
  ++r.usage.completion_tokens;
  Event e;
  e.kind = Event::Kind::Token;
  e.choice = c.index;
  e.token = t;
  e.piece = tok_.token_to_piece(t);
  if (from) {
    e.prob = from->p_chosen;
    for (const Candidate& alt : from->top) e.top_probs.push_back({alt.id, alt.p});
  } else if (r.req.logprobs || r.req.n_probs > 0) {
    fill_logprobs(logits, t, r.req.n_probs, e);
  }
  const StopStrings::Released out = c.stops.push(c.decoder->push(t));
  e.text = out.text;
  if (!r.delivered_first) {
    r.delivered_first = true;
    r.usage.first_token = Clock::now();
  }
  r.stream->set_usage(r.usage);  // the usage so far, for timings while the request runs
  r.stream->push(std::move(e));
  if (out.stopped || c.sampler.done()) {
    finish_choice(r, c, FinishReason::Stop);
    return false;
  }
  if (c.n_generated >= r.max_generated) {
    finish_choice(r, c, FinishReason::Length);
    return false;
  }
  c.pending = t;
  c.next_pos = Pos(int64_t(r.req.prompt.size()) + c.n_generated - 1);
  return true;
}

void EngineImpl::finish_choice(Running& r, Choice& c, FinishReason why, const std::string& message) {
  if (c.done) return;
  c.done = true;
  Event e;
  e.kind = Event::Kind::ChoiceDone;
  e.choice = c.index;
  e.finish = why;
  e.message = message;
  if (c.decoder) e.text = c.stops.push(c.decoder->flush()).text + c.stops.flush();
  e.stop_word = c.stops.matched();
  r.stream->push(std::move(e));
}

void EngineImpl::collect_embeddings(Running& r, const Batch& batch) {
  for (int64_t i = r.chunk_begin; i < r.chunk_begin + r.chunk_len; ++i) {
    const std::span<const float> row = ctx_->embeddings_at(i);
    r.embd_rows.insert(r.embd_rows.end(), row.begin(), row.end());
  }
  if (!r.prompt_done() || r.choices[0].done) return;
  const auto n_embd = std::ptrdiff_t(ctx_->n_embd());
  if (r.req.token_embeddings) {
    std::vector<std::vector<float>> rows;
    for (auto it = r.embd_rows.begin(); it != r.embd_rows.end(); it += n_embd) rows.emplace_back(it, it + n_embd);
    r.stream->set_token_embeddings(std::move(rows));
  } else {
    std::vector<float> v = pool_embeddings(r.embd_rows, n_embd, r.req.pooling);
    if (r.req.pooling == Pooling::Rank) v = model_.classify(v);  // scores: never normalised
    if (r.req.normalize && r.req.pooling != Pooling::Rank) normalize_l2(v);
    r.stream->set_embedding(std::move(v));
  }
  r.embd_rows.clear();
  finish_choice(r, r.choices[0], FinishReason::Stop);
}

void EngineImpl::finish_request(Running& r) {
  r.usage.finished = Clock::now();
  if (!r.delivered_first) r.usage.first_token = r.usage.finished;
  if (r.usage.admitted == Clock::time_point{}) r.usage.admitted = r.usage.finished;
  r.stream->set_usage(r.usage);
  Event done;
  done.kind = Event::Kind::Done;
  r.stream->push(std::move(done));
}

void EngineImpl::fail_all(const std::string& message) {
  for (auto& r : running_) {
    Event e;
    e.kind = Event::Kind::Error;
    e.message = message;
    r->stream->push(std::move(e));
    for (Choice& c : r->choices) finish_choice(*r, c, FinishReason::Error, message);
    finish_request(*r);
    retire(*r, false);
  }
  running_.clear();
}

void EngineImpl::retire(Running& r, bool cacheable) {
  const bool keep = cacheable && params_.prefix_cache && r.req.cache_prompt && !r.req.embedding;
  for (Choice& c : r.choices) {
    if (c.seq < 0) continue;
    if (keep) {
      store_prefix(c.seq, r.scales);
    } else {
      must(ctx_->seq_rm(c.seq, -1, -1));
    }
    slot_busy_[size_t(c.seq)] = false;
    c.seq = -1;
  }
}

void EngineImpl::store_prefix(SeqId seq, std::span<const float> scales) {
  std::vector<TokenId> tokens = ctx_->seq_tokens(seq);
  if (tokens.empty() || cache_.covering(tokens, scales) >= 0) {
    must(ctx_->seq_rm(seq, -1, -1));
    return;
  }
  for (SeqId h : cache_.covered_by(tokens, scales)) {  // the new entry holds all their cells
    must(ctx_->seq_rm(h, -1, -1));
    cache_.erase(h);
  }
  SeqId holder = cache_.free_holder();
  if (holder < 0) {
    evict(cache_.least_recently_used());
    holder = cache_.free_holder();
  }
  TESSERA_CHECK(holder >= 0);
  must(ctx_->seq_cp(seq, holder, -1, -1));
  must(ctx_->seq_rm(seq, -1, -1));
  cache_.insert(holder, std::move(tokens), seq, scales);
}

void EngineImpl::evict(SeqId h) {
  TESSERA_CHECK(h >= 0);
  must(ctx_->seq_rm(h, -1, -1));
  cache_.erase(h);
  ++evictions_;
}

void EngineImpl::publish_stats() {
  EngineStats s;
  s.running = int(running_.size());
  s.cells_used = ctx_->n_cells_used();
  s.n_ctx = ctx_->n_ctx();
  s.cached_prefixes = cache_.size();
  s.cached_tokens = cache_.n_tokens();
  s.steps = steps_;
  s.evictions = evictions_;
  s.spec_steps = spec_steps_;
  s.spec_tokens = spec_tokens_;
  s.draft_tokens = draft_tokens_;
  s.draft_accepted = draft_accepted_;
  for (int i = 0; i < params_.n_parallel; ++i) s.slots.push_back({i, false, 0, 0, 0});
  for (const auto& r : running_) {
    for (const Choice& c : r->choices) {
      if (c.seq < 0) continue;
      SlotInfo& info = s.slots[size_t(c.seq)];
      info.busy = true;
      info.request = r->stream->id();
      // Its cells: the prompt in the cache and every generated token but the last sampled
      // one (decoded next step). Counted, not scanned: this runs every step.
      info.n_past = r->n_prompt_in_cache + std::max<int64_t>(0, c.n_generated - 1);
      info.n_generated = c.n_generated;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  s.waiting = int(queue_.size());
  stats_ = std::move(s);
}

}  // namespace tessera::serving
