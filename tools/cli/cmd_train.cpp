// `tessera train`: a LLaMA trained from scratch on a text file (tessera/train.h): the
// tokenizer first, then the model; a progress line per step on a terminal (every
// --print-every steps otherwise), validation lines, and checkpoints to resume from. Every
// check runs before any work (exit 2); Ctrl-C (SIGINT) or SIGTERM saves a checkpoint,
// prints the command that resumes it, and exits 130.
#include <cstdio>
#include <memory>
#include <unistd.h>

#include "commands.h"
#include "train_interrupt.h"
#include "train_progress.h"
#include "tessera/train.h"

namespace tessera::cli {
namespace {

struct TrainCli {
  TrainOptions o;
  std::string type = "f32";
  int64_t print_every = 10;
  bool checkpoint_given = false;
};

// The command that continues from `checkpoint` as this run would have: the options a
// checkpoint does not keep (the text, the files, the threads, which the losses depend on).
std::string resume_command(const TrainCli& c, const std::string& checkpoint) {
  const TrainOptions& o = c.o;
  std::string cmd = "tessera train -f " + shell_quote(o.text_path) + " -o " + shell_quote(o.output_path) +
                    " --resume " + shell_quote(checkpoint) + " -t " + std::to_string(o.n_threads);
  if (c.checkpoint_given) cmd += " --checkpoint " + shell_quote(o.checkpoint_path);
  if (o.override_steps) cmd += " --steps " + std::to_string(o.steps);
  if (o.checkpoint_every > 0) cmd += " --checkpoint-every " + std::to_string(o.checkpoint_every);
  if (o.checkpoint_minutes != TrainOptions{}.checkpoint_minutes) {
    char minutes[32];
    std::snprintf(minutes, sizeof minutes, "%g", o.checkpoint_minutes);
    cmd += " --checkpoint-minutes " + std::string(minutes);
  }
  if (o.stop_at > 0) cmd += " --stop-at " + std::to_string(o.stop_at);
  if (!o.log_path.empty()) cmd += " --log " + shell_quote(o.log_path);
  if (c.type != "f32") cmd += " --type " + c.type;
  if (o.force) cmd += " --force";
  return cmd;
}

int run_train(TrainCli& c) {
  if (c.type == "f32") c.o.output_type = DType::F32;
  else if (c.type == "f16") c.o.output_type = DType::F16;
  else if (c.type == "bf16") c.o.output_type = DType::BF16;
  else return usage_error("train: --type '" + c.type + "' is not f32, f16 or bf16 (quantize the model afterwards)");
  if (c.print_every <= 0) return usage_error("train: --print-every must be positive");
  if (const Status s = check_train_options(c.o); !s) return usage_error(s.message());
  c.o.stop = &install_stop_handlers();
  const bool tty = isatty(fileno(stderr)) != 0;
  bool interrupted = false;
  std::string saved;
  int64_t step = 0;
  const Status s = train_model(c.o, [&](const TrainProgress& p) {
    if (p.phase == TrainProgress::Phase::Interrupted) {
      interrupted = true;
      saved = p.message;
      step = p.step;
    }
    print_train_progress("train", p, c.print_every, tty);
  });
  if (tty) std::fprintf(stderr, "\n");
  if (!s) return fail(s.message());
  if (interrupted) {
    if (saved.empty()) {
      std::fprintf(stderr, "tessera train: interrupted before the first step; nothing to save\n");
    } else {
      std::fprintf(stderr, "tessera train: interrupted; step %lld is saved in %s\nresume with:\n  %s\n",
                   static_cast<long long>(step), saved.c_str(), resume_command(c, saved).c_str());
    }
    return kExitInterrupted;
  }
  std::fprintf(stderr, "tessera train: wrote %s\n", c.o.output_path.c_str());
  return 0;
}

}  // namespace

Command add_train(CLI::App& app) {
  auto c = std::make_shared<TrainCli>();
  TrainOptions& o = c->o;
  CLI::App* cmd = app.add_subcommand("train", "Train a LLaMA from scratch on a text file (tokenizer included)");
  cmd->add_option("-f,--file", o.text_path, "training text")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", o.output_path, "the trained model (GGUF)")->required();
  cmd->add_option("--vocab-size", o.vocab_size, "tokens of the learned vocabulary (default 4096)");
  cmd->add_option("--n-embd", o.n_embd, "embedding size (default 256)");
  cmd->add_option("--n-layer", o.n_layer, "layers (default 6)");
  cmd->add_option("--n-head", o.n_head, "attention heads (default 8)");
  cmd->add_option("--n-head-kv", o.n_head_kv, "key/value heads (default: --n-head)");
  cmd->add_option("--n-ff", o.n_ff, "feed-forward size (default 768)");
  cmd->add_option("-c,--ctx-size,--ctx", o.n_ctx, "training window and context length (default 256)");
  cmd->add_flag("!--untied-output", o.tied_output, "give the model its own output projection (default: tied to the token embedding)");
  cmd->add_option("--steps", o.steps, "optimizer steps (default 1000)");
  cmd->add_option("--batch", o.batch, "windows per micro-batch (default 8)");
  cmd->add_option("--accum", o.accum, "micro-batches per step (default 1)");
  cmd->add_option("--lr", o.lr, "peak learning rate (default 1e-3)");
  cmd->add_option("--min-lr-ratio", o.min_lr_ratio, "final learning rate as a share of --lr (default 0.1)");
  cmd->add_option("--warmup", o.warmup, "warmup steps (default 100)");
  cmd->add_option("--weight-decay", o.weight_decay, "AdamW weight decay of the matrices (default 0.1)");
  cmd->add_option("--grad-clip", o.grad_clip, "maximum gradient norm, 0 for none (default 1)");
  cmd->add_option("--val-fraction", o.val_fraction, "share of the text held out (default 0.02)");
  cmd->add_option("--eval-every", o.eval_every, "steps between validations, 0 for none (default 100)");
  cmd->add_option("--eval-windows", o.eval_windows, "held-out windows per validation (default 32)");
  cmd->add_option("-t,--threads", o.n_threads, "CPU threads")->default_val(default_threads());
  cmd->add_option("-s,--seed", o.seed, "random seed of the initialisation and the windows (default 1)");
  cmd->add_option("--resume", o.resume_path, "continue from this checkpoint (its model and options)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--force", o.force, "with --resume: continue even when -f is not the checkpoint's text");
  CLI::Option* steps = cmd->get_option("--steps");
  CLI::Option* checkpoint = cmd->add_option("--checkpoint", o.checkpoint_path, "checkpoint file (default: OUTPUT.ckpt)");
  cmd->add_option("--checkpoint-every", o.checkpoint_every, "steps between checkpoints (default: by time only)");
  cmd->add_option("--checkpoint-minutes", o.checkpoint_minutes,
                  "minutes between checkpoints (fractions too), 0 for none (default 10); Ctrl-C also saves one");
  cmd->add_option("--stop-at", o.stop_at, "stop after this step, writing the checkpoint and the model (resume later)");
  cmd->add_option("--log", o.log_path,
                  "write step, loss, val_loss, lr, grad_norm, tokens/s as CSV (with --resume: continued, its rows "
                  "after the checkpoint's step dropped)");
  cmd->add_option("--type", c->type, "matrix type of the written model: f32, f16, bf16 (default f32)");
  cmd->add_option("--print-every", c->print_every, "steps between progress lines when stderr is not a terminal (default 10)");
  return {cmd, [c, steps, checkpoint] {
            c->o.override_steps = steps->count() > 0;
            c->checkpoint_given = checkpoint->count() > 0;
            return run_train(*c);
          }};
}

}  // namespace tessera::cli
