#include "train/run_loop.h"

#include <algorithm>
#include <chrono>
#include <fstream>

#include "train/checkpoint.h"

namespace tessera::train {

// The loop from the trainer's step to the last, with progress, validation, log lines
// and checkpoints.
Status run_loop(Trainer& t, const LoopOptions& o, const RunExtras& extras, Backend& backend, TrainProgress p,
                const std::function<void(const TrainProgress&)>& progress) {
  std::ofstream log;
  if (!o.log_path.empty()) {
    const bool fresh = o.fresh_log;
    log.open(o.log_path, fresh ? std::ios::trunc : std::ios::app);
    if (!log) return Status::error(o.log_path + ": cannot write the training log");
    if (fresh) log << "step,loss,val_loss,lr,grad_norm,tokens_per_s\n";
  }
  const RunConfig& c = t.config();
  const auto start = std::chrono::steady_clock::now();
  const int64_t first = t.step();
  const int64_t last = o.stop_at > 0 ? std::min(o.stop_at, c.steps) : c.steps;
  while (t.step() < last) {
    Result<Trainer::StepResult> r = t.run_step();
    if (!r) return r.status();
    const int64_t step = t.step();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    p.step = step;
    p.loss = r->loss;
    p.grad_norm = r->grad_norm;
    p.lr = r->lr;
    p.tokens_per_s = double((step - first) * t.tokens_per_step()) / std::max(secs, 1e-9);
    p.eta_s = double((c.steps - step) * t.tokens_per_step()) / std::max(p.tokens_per_s, 1e-9);
    p.val_loss = -1;
    if (extras.eval_every > 0 && (step % extras.eval_every == 0 || step == c.steps)) {
      Result<double> v = t.evaluate();
      if (!v) return v.status();
      p.val_loss = *v;
    }
    if (log) {
      log << step << ',' << p.loss << ',' << (p.val_loss >= 0 ? std::to_string(p.val_loss) : "") << ',' << p.lr << ','
          << p.grad_norm << ',' << p.tokens_per_s << '\n' << std::flush;
    }
    if (progress) progress(p);
    if (!o.checkpoint_path.empty() && ((o.checkpoint_every > 0 && step % o.checkpoint_every == 0) || step == last)) {
      TESSERA_RETURN_IF_ERROR(write_checkpoint(o.checkpoint_path, t, backend, extras));
    }
  }
  return Status::ok();
}

}  // namespace tessera::train
