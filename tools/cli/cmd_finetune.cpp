// `tessera finetune`: a LoRA adapter trained on a frozen base model (tessera/train.h),
// written as a GGUF adapter that run, chat, serve, perplexity and bench apply with --lora.
// Without -m the base is the built-in model. Every check runs before any work (exit 2);
// Ctrl-C (SIGINT) or SIGTERM writes the adapter trained so far and exits 130.
#include <cstdio>
#include <memory>
#include <unistd.h>

#include "commands.h"
#include "tessera/train.h"
#include "train_interrupt.h"
#include "train_progress.h"

namespace tessera::cli {
namespace {

struct FinetuneCli {
  FinetuneOptions o;
  int64_t print_every = 10;
};

int run_finetune(FinetuneCli& c) {
  if (c.print_every <= 0) return usage_error("finetune: --print-every must be positive");
  if (const Status s = check_finetune_options(c.o); !s) return usage_error(s.message());
  c.o.stop = &install_stop_handlers();
  if (c.o.base_path.empty()) std::fprintf(stderr, "tessera finetune: base: the built-in %s\n", Model::default_model_name().c_str());
  const bool tty = isatty(fileno(stderr)) != 0;
  bool interrupted = false;
  int64_t step = 0;
  const Status s = finetune_model(c.o, [&](const TrainProgress& p) {
    if (p.phase == TrainProgress::Phase::Interrupted) {
      interrupted = true;
      step = p.step;
    }
    print_train_progress("finetune", p, c.print_every, tty);
  });
  if (tty) std::fprintf(stderr, "\n");
  if (!s) return fail(s.message());
  if (interrupted) {
    std::fprintf(stderr,
                 "tessera finetune: interrupted; wrote %s, the adapter after %lld of %lld steps (a finetune cannot be "
                 "resumed; apply it with --lora %s)\n",
                 c.o.output_path.c_str(), static_cast<long long>(step), static_cast<long long>(c.o.steps),
                 c.o.output_path.c_str());
    return kExitInterrupted;
  }
  std::fprintf(stderr, "tessera finetune: wrote %s (apply it with --lora %s)\n", c.o.output_path.c_str(),
               c.o.output_path.c_str());
  return 0;
}

}  // namespace

Command add_finetune(CLI::App& app) {
  auto c = std::make_shared<FinetuneCli>();
  FinetuneOptions& o = c->o;
  CLI::App* cmd = app.add_subcommand("finetune", "Train a LoRA adapter on a frozen base model (which may be quantized)");
  cmd->add_option("-m,--model", o.base_path, "the base " + model_option_help())->check(CLI::ExistingFile);
  cmd->add_option("-f,--file", o.text_path, "training text")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", o.output_path, "the adapter (GGUF)")->required();
  cmd->add_option("--lora-r", o.lora_r, "rank of the updates (default 8)");
  cmd->add_option("--lora-alpha", o.lora_alpha, "alpha: the updates are scaled by alpha / r (default 16)");
  cmd->add_option("--targets", o.targets, "projections to adapt: all (default: every projection the architecture has), or a comma list of q,k,v,qkv,o,gate,up,down");
  cmd->add_option("-c,--ctx-size,--ctx", o.n_ctx, "training window (default: the model's context, at most 256)");
  cmd->add_option("--steps", o.steps, "optimizer steps (default 200)");
  cmd->add_option("--batch", o.batch, "windows per micro-batch (default 8)");
  cmd->add_option("--accum", o.accum, "micro-batches per step (default 1)");
  cmd->add_option("--lr", o.lr, "peak learning rate (default 1e-3)");
  cmd->add_option("--min-lr-ratio", o.min_lr_ratio, "final learning rate as a share of --lr (default 0.1)");
  cmd->add_option("--warmup", o.warmup, "warmup steps (default 20)");
  cmd->add_option("--weight-decay", o.weight_decay, "AdamW weight decay of a and b (default 0)");
  cmd->add_option("--grad-clip", o.grad_clip, "maximum gradient norm, 0 for none (default 1)");
  cmd->add_option("--val-fraction", o.val_fraction, "share of the text held out (default 0.05)");
  cmd->add_option("--eval-every", o.eval_every, "steps between validations, 0 for none (default 50)");
  cmd->add_option("--eval-windows", o.eval_windows, "held-out windows per validation (default 16)");
  cmd->add_option("-t,--threads", o.n_threads, "CPU threads")->default_val(default_threads());
  cmd->add_option("-s,--seed", o.seed, "random seed of a's initialisation and the windows (default 1)");
  cmd->add_option("--log", o.log_path, "write step, loss, val_loss, lr, grad_norm, tokens/s as CSV");
  cmd->add_option("--print-every", c->print_every, "steps between progress lines when stderr is not a terminal (default 10)");
  return {cmd, [c] { return run_finetune(*c); }};
}

}  // namespace tessera::cli
