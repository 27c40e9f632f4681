#include "train/run_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "train/checkpoint.h"

namespace tessera::train {
namespace {

constexpr const char* kLogHeader = "step,loss,val_loss,lr,grad_norm,tokens_per_s\n";

// A resumed run's log: the rows up to `step` (those after it were written past the
// checkpoint and will be run again), rewritten in place; a missing log starts afresh.
Status trim_log(const std::string& path, int64_t step) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::ok();
  std::ostringstream kept;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const int64_t row = line[0] >= '0' && line[0] <= '9' ? std::stoll(line) : -1;
    if (row <= step) kept << line << '\n';
  }
  in.close();
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp, std::ios::binary | std::ios::trunc) << kept.str();
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::error(path + ": cannot rewrite the training log");
  return Status::ok();
}

Status open_log(const LoopOptions& o, int64_t step, std::ofstream& log) {
  if (o.log_path.empty()) return Status::ok();
  bool fresh = o.fresh_log;
  if (!fresh) {
    fresh = !std::ifstream(o.log_path).good();
    TESSERA_RETURN_IF_ERROR(trim_log(o.log_path, step));
  }
  log.open(o.log_path, fresh ? std::ios::trunc : std::ios::app);
  if (!log) return Status::error(o.log_path + ": cannot write the training log");
  if (fresh) log << kLogHeader;
  return Status::ok();
}

bool stop_requested(const LoopOptions& o) { return o.stop != nullptr && o.stop->load(); }

}  // namespace

// The loop from the trainer's step to the last, with progress, validation, log lines
// and checkpoints.
Result<bool> run_loop(Trainer& t, const LoopOptions& o, Backend& backend, TrainProgress p,
                      const std::function<void(const TrainProgress&)>& progress) {
  using Clock = std::chrono::steady_clock;
  std::ofstream log;
  TESSERA_RETURN_IF_ERROR(open_log(o, t.step(), log));
  const RunConfig& c = t.config();
  const auto start = Clock::now();
  auto last_checkpoint = start;
  const int64_t first = t.step();
  const int64_t last = o.stop_at > 0 ? std::min(o.stop_at, c.steps) : c.steps;
  bool saved = true;  // the state at t.step() is in a checkpoint (or there is nothing new)
  while (t.step() < last) {
    if (stop_requested(o)) break;
    Result<Trainer::StepResult> r = t.run_step();
    if (!r) return r.status();
    saved = false;
    const int64_t step = t.step();
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    p.step = step;
    p.loss = r->loss;
    p.grad_norm = r->grad_norm;
    p.lr = r->lr;
    p.tokens_per_s = double((step - first) * t.tokens_per_step()) / std::max(secs, 1e-9);
    p.eta_s = double((c.steps - step) * t.tokens_per_step()) / std::max(p.tokens_per_s, 1e-9);
    p.val_loss = -1;
    if (o.extras.eval_every > 0 && (step % o.extras.eval_every == 0 || step == c.steps)) {
      Result<double> v = t.evaluate();
      if (!v) return v.status();
      p.val_loss = *v;
    }
    if (log) {
      log << step << ',' << p.loss << ',' << (p.val_loss >= 0 ? std::to_string(p.val_loss) : "")
          << ',' << p.lr << ',' << p.grad_norm << ',' << p.tokens_per_s << '\n'
          << std::flush;
    }
    if (progress) progress(p);
    const bool by_time = o.checkpoint_minutes > 0 &&
                         std::chrono::duration<double>(Clock::now() - last_checkpoint).count() >=
                             60 * o.checkpoint_minutes;
    if (!o.checkpoint_path.empty() &&
        ((o.checkpoint_every > 0 && step % o.checkpoint_every == 0) || step == last || by_time)) {
      TESSERA_RETURN_IF_ERROR(write_checkpoint(o.checkpoint_path, t, backend, o.extras));
      last_checkpoint = Clock::now();
      saved = true;
    }
  }
  if (t.step() >= last) return false;
  if (!saved && !o.checkpoint_path.empty())
    TESSERA_RETURN_IF_ERROR(write_checkpoint(o.checkpoint_path, t, backend, o.extras));
  return true;
}

}  // namespace tessera::train
