// `tessera run`: generate text from a prompt, printed as it is produced.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "tessera/context.h"
#include "tessera/model.h"
#include "tessera/sampler.h"
#include "tessera/tokenizer.h"

namespace tessera::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  int n_predict = 128;
  int threads = default_threads();
  int64_t ctx = 0;
  int64_t batch = 512;
  SamplerParams sampling;
  bool print_ids = false;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int run_generate(const RunOptions& o) {
  Result<std::unique_ptr<Model>> model = Model::load(o.model);
  if (!model) return fail(model.status().message());
  const Tokenizer* tok = (*model)->tokenizer();
  if (!tok) return fail(o.model + ": the model has no usable tokenizer, so it cannot take text");
  const std::vector<TokenId> prompt = tok->encode(o.prompt, tok->add_bos_token());
  if (prompt.empty()) return fail("run: the prompt is empty and the model adds no BOS token");

  ContextParams cp;
  cp.n_threads = o.threads;
  cp.n_ctx = o.ctx;
  if (cp.n_ctx == 0) {
    // The model's context (at most 4096), grown to hold this prompt and continuation.
    const int64_t needed = int64_t(prompt.size()) + o.n_predict;
    cp.n_ctx = std::max(std::min<int64_t>((*model)->info().n_ctx_train, 4096), needed);
    if (needed > (*model)->info().n_ctx_train) {
      std::fprintf(stderr, "tessera: warning: %lld tokens exceed the model's training context of %lld\n",
                   static_cast<long long>(needed), static_cast<long long>((*model)->info().n_ctx_train));
    }
  }
  cp.n_batch = o.batch;
  Result<std::unique_ptr<Context>> ctx = Context::create(**model, cp);
  if (!ctx) return fail(ctx.status().message());
  Context& c = **ctx;
  const int64_t budget = c.n_ctx() - int64_t(prompt.size());
  if (budget < 0) {
    return fail("run: the prompt has " + std::to_string(prompt.size()) +
                " tokens, more than the context of " + std::to_string(c.n_ctx()));
  }

  if (!o.print_ids) std::printf("%s", o.prompt.c_str());
  std::fflush(stdout);
  const auto t_prompt = Clock::now();
  if (Status s = c.decode(prompt); !s) return fail(s.message());
  const double prompt_s = seconds_since(t_prompt);

  Sampler sampler(o.sampling);
  StreamDecoder stream(*tok);  // holds back characters split across tokens
  const auto t_gen = Clock::now();
  int generated = 0;
  for (; generated < o.n_predict && generated < budget; ++generated) {
    const TokenId next = sampler.sample(c.logits());
    if (tok->is_eog(next)) break;
    if (o.print_ids) {
      std::printf("%s%d", generated ? " " : "", next);
    } else {
      std::printf("%s", stream.push(next).c_str());
    }
    std::fflush(stdout);
    const TokenId one[] = {next};
    if (generated + 1 < o.n_predict) {
      if (Status s = c.decode(one); !s) return fail(s.message());
    }
  }
  const double gen_s = seconds_since(t_gen);
  if (!o.print_ids) std::printf("%s", stream.flush().c_str());
  std::printf("\n");
  std::fflush(stdout);
  std::fprintf(stderr, "tessera: prompt %zu tokens in %.3f s (%.1f tok/s); generated %d tokens in %.3f s (%.1f tok/s)\n",
               prompt.size(), prompt_s, double(prompt.size()) / prompt_s, generated, gen_s,
               gen_s > 0 ? generated / gen_s : 0.0);
  return 0;
}

}  // namespace

Command add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Generate text from a prompt, printed as it is produced");
  cmd->add_option("-m,--model", o->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  cmd->add_option("-p,--prompt", o->prompt, "prompt text")->required();
  cmd->add_option("-n,--n-predict", o->n_predict, "tokens to generate (stops early at end of text)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("-t,--threads", o->threads, "CPU threads")->check(CLI::Range(1, 512));
  cmd->add_option("-c,--ctx-size", o->ctx, "context size in tokens (0: the model's, at most 4096, grown to fit prompt + n-predict)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 24));
  cmd->add_option("-b,--batch", o->batch, "prompt tokens per forward pass")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--temp", o->sampling.temperature, "temperature; 0 = greedy")->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-k", o->sampling.top_k, "keep the k most likely tokens (0 = all)")->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--top-p", o->sampling.top_p, "keep the smallest set of tokens with this probability mass")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", o->sampling.seed, "random seed for sampling");
  cmd->add_flag("--ids", o->print_ids, "print the generated token ids instead of text");
  return {cmd, [o] { return run_generate(*o); }};
}

}  // namespace tessera::cli
