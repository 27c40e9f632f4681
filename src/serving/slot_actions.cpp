// Slot actions (save, restore, erase a slot's cached prefix; see tessera/serving.h). A
// caller queues a job and waits; the stepping thread runs it between steps once its slot
// is idle, because only that thread touches the Context and an idle slot's cells are all
// in cached prefixes (a running request's are still changing).
#include <algorithm>
#include <filesystem>

#include "core/check.h"
#include "serving/engine_impl.h"

namespace tessera::serving {
namespace {

using Error = SlotActionResult::Error;

SlotActionResult failure(Error e, std::string message) {
  SlotActionResult r;
  r.error = e;
  r.message = std::move(message);
  return r;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

SlotActionResult EngineImpl::slot_action(SlotActionKind kind, int slot, const std::string& path,
                                         std::chrono::milliseconds timeout) {
  if (slot < 0 || slot >= params_.n_parallel) {
    return failure(Error::Invalid, "slot " + std::to_string(slot) + " is outside [0, " +
                                       std::to_string(params_.n_parallel) + ")");
  }
  auto job = std::make_shared<SlotJob>();
  job->kind = kind;
  job->slot = slot;
  job->path = path;
  std::unique_lock<std::mutex> lock(mu_);
  if (shutting_down_) return failure(Error::ShuttingDown, "the server is shutting down");
  slot_jobs_.push_back(job);
  cv_.notify_all();
  if (!slot_jobs_cv_.wait_for(lock, timeout, [&] { return job->done; })) {
    const auto it = std::find(slot_jobs_.begin(), slot_jobs_.end(), job);
    if (it != slot_jobs_.end()) {  // not taken yet: withdrawn
      slot_jobs_.erase(it);
      return failure(Error::Busy, "slot " + std::to_string(slot) + " stayed busy for " +
                                      std::to_string(timeout.count()) + " ms; try again later");
    }
    slot_jobs_cv_.wait(lock, [&] { return job->done; });  // running now: it ends soon
  }
  return job->result;
}

bool EngineImpl::run_slot_jobs() {
  std::vector<std::shared_ptr<SlotJob>> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = slot_jobs_.begin(); it != slot_jobs_.end();) {
      if (slot_busy_[size_t((*it)->slot)]) {
        ++it;
      } else {
        ready.push_back(std::move(*it));
        it = slot_jobs_.erase(it);
      }
    }
  }
  if (ready.empty()) return false;
  for (auto& job : ready) {
    SlotActionResult result = run_slot_job(*job);
    std::lock_guard<std::mutex> lock(mu_);
    job->result = std::move(result);
    job->done = true;
  }
  slot_jobs_cv_.notify_all();
  return true;
}

void EngineImpl::fail_slot_jobs() {
  for (auto& job : slot_jobs_) {
    job->result = failure(Error::ShuttingDown, "the server is shutting down");
    job->done = true;
  }
  slot_jobs_.clear();
  slot_jobs_cv_.notify_all();
}

SlotActionResult EngineImpl::run_slot_job(const SlotJob& job) {
  switch (job.kind) {
    case SlotActionKind::Save:
      return save_slot(job.slot, job.path);
    case SlotActionKind::Restore:
      return restore_slot(job.slot, job.path);
    case SlotActionKind::Erase: {
      SlotActionResult r;
      r.n_tokens = erase_slot(job.slot);
      return r;
    }
  }
  TESSERA_CHECK(false);
  return {};
}

SlotActionResult EngineImpl::save_slot(int slot, const std::string& path) {
  const auto t0 = Clock::now();
  // An idle slot's own sequence is empty: saving it writes a file of 0 tokens.
  const SeqId holder = cache_.most_recently_used(SeqId(slot));
  // A slot file holds keys and values, not the adapter scales they were computed with:
  // with adapters, files are made and read under the server's default scales, so that a
  // restored cache serves exactly the requests whose cells it would have computed.
  if (holder >= 0 && cache_.scales_of(holder) != adapter_scales()) {
    return failure(Error::Invalid, "slot " + std::to_string(slot) +
                                       "'s cache was computed with other LoRA adapter scales than the server's "
                                       "current ones (/lora-adapters); a slot file does not record scales");
  }
  Result<SeqStateInfo> info = ctx_->save_seq_state(holder >= 0 ? holder : SeqId(slot), path);
  if (!info) return failure(Error::Failed, info.status().message());
  SlotActionResult r;
  r.n_tokens = info->n_tokens;
  r.n_bytes = info->n_bytes;
  r.ms = ms_since(t0);
  return r;
}

int64_t EngineImpl::erase_slot(int slot) {
  int64_t n = 0;
  for (SeqId h = cache_.most_recently_used(SeqId(slot)); h >= 0; h = cache_.most_recently_used(SeqId(slot))) {
    n += int64_t(ctx_->seq_pos_max(h)) + 1;
    TESSERA_CHECK(ctx_->seq_rm(h, -1, -1).is_ok());  // a holder id the engine owns
    cache_.erase(h);
  }
  publish_stats();
  return n;
}

// The file goes into the slot's own (idle, empty) sequence first, so that its cells lie in
// the slot's home region, then becomes a cached prefix of origin `slot` as a finished
// request's cells do (store_prefix). As llama-server, a failed restore leaves the slot
// without a cached prefix.
SlotActionResult EngineImpl::restore_slot(int slot, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return failure(Error::NotFound, "no such file: " + path);
  if (!params_.prefix_cache) {
    return failure(Error::Invalid, "the prefix cache is off on this server: a restored slot would not be reused");
  }
  const auto t0 = Clock::now();
  erase_slot(slot);
  const SeqId seq = SeqId(slot);
  Result<SeqStateInfo> info = ctx_->load_seq_state(path, seq);
  if (!info) return failure(Error::Invalid, info.status().message());
  const int64_t n = info->n_tokens;
  if (n > 0 && (ctx_->seq_pos_min(seq) != 0 || ctx_->seq_pos_max(seq) != Pos(n - 1))) {
    TESSERA_CHECK(ctx_->seq_rm(seq, -1, -1).is_ok());
    return failure(Error::Invalid, path + ": the sequence does not hold positions 0 .. n-1 (not a prompt cache)");
  }
  if (n > 0) store_prefix(seq, adapter_scales());  // the scales it was saved under (save_slot)
  publish_stats();
  SlotActionResult r;
  r.n_tokens = n;
  r.n_bytes = info->n_bytes;
  r.ms = ms_since(t0);
  return r;
}

}  // namespace tessera::serving
