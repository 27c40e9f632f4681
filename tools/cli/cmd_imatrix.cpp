// `tessera imatrix`: the importance matrix of a model over a calibration text (the mean
// square of each input column of every weight matrix), in llama-imatrix's file format,
// for `tessera quantize --imatrix` (or the reference's llama-quantize). The method is
// described in tessera/imatrix.h.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "tessera/imatrix.h"
#include "tessera/model.h"

namespace tessera::cli {
namespace {

struct ImatrixOptions {
  std::string model;
  std::string file;
  std::string out = "imatrix.dat";
  ImatrixParams params;
  CacheTypeOptions cache_types;  // -ctk, -ctv
  bool no_ppl = false;
};

int run_imatrix(ImatrixOptions o) {
  std::ifstream in(o.file, std::ios::binary);
  if (!in) return fail("imatrix: cannot read " + o.file);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();  // as llama.cpp's -f does

  if (Status st = apply_cache_types(o.cache_types, o.params.type_k, o.params.type_v); !st) {
    return usage_error("imatrix: " + st.message());
  }
  Result<std::unique_ptr<Model>> model = load_model_or_default(o.model, ModelParams{});
  if (!model) return fail(model.status().message());
  const int64_t n_train = (*model)->info().n_ctx_train;
  if (n_train > 0 && o.params.n_ctx > n_train && !o.params.rope.overrides()) {
    std::fprintf(stderr, "tessera: warning: the model was trained on a context of %lld tokens; -c %lld is beyond it\n",
                 static_cast<long long>(n_train), static_cast<long long>(o.params.n_ctx));
  }
  o.params.compute_ppl = !o.no_ppl;
  o.params.dataset = o.file;
  // Progress on stderr; the running perplexity on stdout as llama-imatrix prints it
  // ([1]x,[2]y,...), then the final estimate.
  const bool ppl = o.params.compute_ppl;
  const ImatrixParams& params = o.params;
  bool printed = false;  // a [i]x, line was started on stdout
  const auto on_chunk = [ppl, &params, &printed](const ImatrixProgress& p) {
    if (p.chunk == 1) {
      std::fprintf(stderr, "imatrix: %lld chunks of %lld tokens, batch %lld, %d threads%s\n",
                   static_cast<long long>(p.n_chunks), static_cast<long long>(params.n_ctx),
                   static_cast<long long>(std::min(params.n_batch, params.n_ctx)), params.n_threads,
                   params.process_output ? ", output.weight included" : "");
      std::fprintf(stderr, "imatrix: %.2f seconds per chunk - ETA %.2f minutes\n", p.seconds,
                   p.seconds * double(p.n_chunks) / 60.0);
    }
    if (ppl) {
      std::printf("[%lld]%.4f,", static_cast<long long>(p.chunk), p.running_ppl);
      std::fflush(stdout);
      printed = true;
    }
  };
  Result<ImatrixResult> r = compute_imatrix(**model, text, o.params, o.out, on_chunk);
  if (printed) std::printf("\n");
  if (!r) return fail(r.status().message());
  if (ppl) std::printf("Final estimate: PPL = %.4f +/- %.5f\n", r->ppl, r->ppl_error);
  for (const std::string& s : r->skipped) std::fprintf(stderr, "imatrix: warning: left out %s\n", s.c_str());
  std::fprintf(stderr, "imatrix: %lld tokens in the text, %lld chunks; stored %lld matrices (%d calls) in %s\n",
               static_cast<long long>(r->n_tokens), static_cast<long long>(r->n_chunks),
               static_cast<long long>(r->n_entries), r->n_calls, o.out.c_str());
  return 0;
}

}  // namespace

Command add_imatrix(CLI::App& app) {
  auto o = std::make_shared<ImatrixOptions>();
  o->params.n_threads = default_threads();
  CLI::App* cmd = app.add_subcommand(
      "imatrix",
      "Importance matrix of a model over a calibration text, in llama-imatrix's file format:\n"
      "the mean square of every input column of each weight matrix of the layers, for\n"
      "`tessera quantize --imatrix` (and the reference's llama-quantize). The text is cut into\n"
      "chunks of -c tokens (at least two chunks); the running perplexity of each chunk's second\n"
      "half is printed on stdout as [1]x,[2]y,..., progress on stderr.");
  cmd->add_option("-m,--model", o->model, model_option_help())->check(CLI::ExistingFile);
  add_rope_options(cmd, o->params.rope);
  cmd->add_option("-f,--file", o->file, "calibration text (one trailing newline is dropped, as llama.cpp does)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", o->out, "importance matrix file to write")->capture_default_str();
  cmd->add_option("-c,--ctx-size", o->params.n_ctx, "tokens per chunk")
      ->capture_default_str()
      ->check(NumberRange(int64_t(4), int64_t(1) << 20));
  cmd->add_option("-b,--batch", o->params.n_batch,
                  "tokens per forward pass (at most -c; each pass is one call of every matrix)")
      ->capture_default_str()
      ->check(NumberRange(int64_t(1), int64_t(1) << 20));
  add_cache_type_options(cmd, o->cache_types);
  cmd->add_option("-t,--threads", o->params.n_threads, "CPU threads (does not change the result)")
      ->check(NumberRange(1, 512));
  cmd->add_option("--chunks", o->params.max_chunks, "evaluate at most this many chunks (default: all)")
      ->check(NumberRange(int64_t(1), int64_t(1) << 40));
  cmd->add_flag("--process-output", o->params.process_output, "also collect output.weight");
  cmd->add_flag("--no-ppl", o->no_ppl, "do not compute the perplexity");
  return {cmd, [o] { return run_imatrix(*o); }};
}

}  // namespace tessera::cli
