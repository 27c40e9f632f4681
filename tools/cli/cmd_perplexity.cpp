// `tessera perplexity`: a model's perplexity over a text file, as llama-perplexity
// computes it (the method is described in tessera/perplexity.h).
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "tessera/model.h"
#include "tessera/perplexity.h"

namespace tessera::cli {
namespace {

struct PerplexityOptions {
  std::string model;
  std::vector<std::string> lora;  // --lora FILE[:SCALE]
  PlacementOptions placement;     // --layers, --mpi, --mpi-layers
  CacheTypeOptions cache_types;  // -ctk, -ctv
  std::string file;
  PerplexityParams params;
};

int run_perplexity(PerplexityOptions o) {
  if (o.params.n_ctx > 0 && o.params.n_ctx < 4) {
    return usage_error("perplexity: -c " + std::to_string(o.params.n_ctx) +
                       " is too small: 0 (the model's context) or at least 4");
  }
  std::ifstream in(o.file, std::ios::binary);
  if (!in) return fail("perplexity: cannot read " + o.file);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();  // as llama.cpp's -f does

  if (Status st = apply_cache_types(o.cache_types, o.params.type_k, o.params.type_v); !st) {
    return usage_error("perplexity: " + st.message());
  }
  Result<ModelParams> mp = model_params(o.lora);
  if (mp) apply_placement(o.placement, *mp);
  if (!mp) return fail(mp.status().message());
  Result<std::unique_ptr<Model>> model = load_model_or_default(o.model, *mp);
  if (!model) return fail(model.status().message());
  const int64_t n_train = (*model)->info().n_ctx_train;
  if (o.params.n_ctx == 0) o.params.n_ctx = n_train >= 4 ? n_train : 512;  // -c 0: the model's, as run's
  if (n_train > 0 && o.params.n_ctx > n_train && !o.params.rope.overrides()) {
    std::fprintf(stderr,
                 "tessera: warning: the model was trained on a context of %lld tokens; -c %lld is "
                 "beyond it\n",
                 static_cast<long long>(n_train), static_cast<long long>(o.params.n_ctx));
  }
  std::fprintf(stderr,
               "perplexity: context %lld, batch %lld, %d threads; scoring the last %lld tokens of "
               "each chunk\n",
               static_cast<long long>(o.params.n_ctx), static_cast<long long>(o.params.n_batch),
               o.params.n_threads, static_cast<long long>(o.params.n_ctx - o.params.n_ctx / 2 - 1));

  // Progress (with the running value) on stderr as each chunk ends; stdout gets the
  // result in llama-perplexity's format once, so the two streams never interleave.
  const auto on_chunk = [](const PerplexityProgress& p) {
    std::fprintf(stderr, "perplexity: chunk %lld/%lld in %.2f s (ETA %.1f s), running PPL %.4f\n",
                 static_cast<long long>(p.chunk), static_cast<long long>(p.n_chunks), p.seconds,
                 p.seconds * double(p.n_chunks - p.chunk), p.running_ppl);
  };
  Result<PerplexityResult> r = perplexity(**model, text, o.params, on_chunk);
  if (!r) return fail(r.status().message());
  for (size_t i = 0; i < r->running_ppl.size(); ++i)
    std::printf("[%zu]%.4f,", i + 1, r->running_ppl[i]);
  std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", r->ppl, r->ppl_error);
  std::fprintf(stderr, "perplexity: %lld tokens in the text, %lld chunks, %lld tokens scored\n",
               static_cast<long long>(r->n_tokens), static_cast<long long>(r->n_chunks),
               static_cast<long long>(r->n_scored));
  return 0;
}

}  // namespace

Command add_perplexity(CLI::App& app) {
  auto o = std::make_shared<PerplexityOptions>();
  o->params.n_threads = default_threads();
  CLI::App* cmd = app.add_subcommand(
      "perplexity",
      "Perplexity of a model over a text file, by llama-perplexity's method: the text is cut\n"
      "into chunks of -c tokens (first token BOS), and the second half of each chunk is scored.\n"
      "Prints the running value after each chunk ([1]x,[2]y,...) and the final estimate on\n"
      "stdout, progress on stderr.");
  cmd->add_option("-m,--model", o->model, model_option_help())->check(CLI::ExistingFile);
  add_lora_option(cmd, o->lora);
  add_placement_options(cmd, o->placement);
  add_cache_type_options(cmd, o->cache_types);
  add_rope_options(cmd, o->params.rope);
  cmd->add_option("-f,--file", o->file,
                  "text file to score (one trailing newline is dropped, as llama.cpp does)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-c,--ctx-size", o->params.n_ctx, "tokens per chunk (the context size; 0: the model's training context)")
      ->capture_default_str()
      ->check(NumberRange(int64_t(0), int64_t(1) << 20));
  cmd->add_option("-b,--batch", o->params.n_batch,
                  "tokens per forward pass (does not change the result)")
      ->capture_default_str()
      ->check(NumberRange(int64_t(1), int64_t(1) << 20));
  cmd->add_option("-t,--threads", o->params.n_threads, "CPU threads (does not change the result)")
      ->check(NumberRange(1, 512));
  cmd->add_option("--chunks", o->params.max_chunks, "score at most this many chunks (default: all)")
      ->check(NumberRange(int64_t(1), int64_t(1) << 40));
  return {cmd, [o] { return run_perplexity(*o); }};
}

}  // namespace tessera::cli
