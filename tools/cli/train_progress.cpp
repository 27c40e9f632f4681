#include "train_progress.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace tessera::cli {
namespace {

std::string duration(double s) {
  if (!(s >= 0) || s > 1e7) return "?";
  const long t = std::lround(s);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  return buf;
}

}  // namespace

void print_train_progress(const char* tool, const TrainProgress& p, int64_t print_every, bool tty) {
  using Phase = TrainProgress::Phase;
  if (p.phase == Phase::Tokenizer || p.phase == Phase::Tokenizing) {
    std::fprintf(stderr, "tessera %s: %s\n", tool, p.message.c_str());
    return;
  }
  if (p.phase == Phase::Done || p.phase == Phase::Interrupted) return;  // the tool says what it wrote
  if (p.phase == Phase::Start) {
    std::fprintf(stderr, "tessera %s: %.2fM parameters, %lld training tokens, %lld held out; from step %lld of %lld\n",
                 tool, double(p.n_params) / 1e6, static_cast<long long>(p.n_train_tokens),
                 static_cast<long long>(p.n_val_tokens), static_cast<long long>(p.step), static_cast<long long>(p.steps));
    return;
  }
  const bool val = p.val_loss >= 0;
  if (!val && !tty && p.step % print_every != 0 && p.step != p.steps) return;
  char line[256];
  std::snprintf(line, sizeof line, "step %lld/%lld  loss %.4f%s  lr %.2e  |g| %.3f  %.0f tok/s  ETA %s",
                static_cast<long long>(p.step), static_cast<long long>(p.steps), p.loss,
                val ? ("  val " + std::to_string(p.val_loss).substr(0, 6)).c_str() : "", double(p.lr), p.grad_norm,
                p.tokens_per_s, duration(p.eta_s).c_str());
  if (tty && !val) {
    std::fprintf(stderr, "\r%-100s", line);
  } else {
    std::fprintf(stderr, "%s%s\n", tty ? "\r" : "", line);
  }
}

}  // namespace tessera::cli
