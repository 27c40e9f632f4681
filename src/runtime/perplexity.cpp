// Perplexity over a text, chunk by chunk, as llama.cpp's llama-perplexity computes it.
#include "tessera/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <span>
#include <string>

#include "tessera/context.h"
#include "tessera/tokenizer.h"

namespace tessera {
namespace {

/// Running sums of the negative log-likelihoods.
struct NllSums {
  double nll = 0;
  double nll2 = 0;
  int64_t count = 0;

  void add(double v) {
    nll += v;
    nll2 += v * v;
    ++count;
  }
  double ppl() const { return std::exp(nll / double(count)); }
};

/// Evaluates one chunk from an empty context and adds the nll of its second half.
Status score_chunk(Context& ctx, std::span<const TokenId> chunk, int64_t n_batch, NllSums& sums) {
  const int64_t n_ctx = int64_t(chunk.size());
  const int64_t first = n_ctx / 2;
  const int64_t n_vocab = ctx.n_vocab();
  ctx.clear();
  // One decode per pass: logits_at() indexes the tokens of the last decode() call.
  for (int64_t start = 0; start < n_ctx; start += n_batch) {
    const int64_t count = std::min(n_batch, n_ctx - start);
    TESSERA_RETURN_IF_ERROR(ctx.decode(chunk.subspan(size_t(start), size_t(count))));
    for (int64_t j = std::max(start, first); j < std::min(start + count, n_ctx - 1); ++j) {
      const std::span<const float> logits = ctx.logits_at(j - start);
      sums.add(token_nll(logits.data(), n_vocab, chunk[size_t(j + 1)]));
    }
  }
  return Status::ok();
}

Status check_params(const PerplexityParams& p) {
  if (p.n_ctx < 4)
    return Status::error("perplexity: n_ctx " + std::to_string(p.n_ctx) + " is below 4");
  if (p.n_batch < 1) return Status::error("perplexity: n_batch must be positive");
  return Status::ok();
}

}  // namespace

double token_nll(const float* logits, int64_t n_vocab, int32_t token) {
  float max_logit = logits[0];
  for (int64_t i = 1; i < n_vocab; ++i) max_logit = std::max(max_logit, logits[i]);
  double sum_exp = 0.0;
  for (int64_t i = 0; i < n_vocab; ++i) sum_exp += std::exp(logits[i] - max_logit);
  return -(double(logits[token] - max_logit) - std::log(sum_exp));
}

Result<PerplexityResult> perplexity(
    const Model& model, std::string_view text, const PerplexityParams& params,
    const std::function<void(const PerplexityProgress&)>& on_chunk) {
  TESSERA_RETURN_IF_ERROR(check_params(params));
  const Tokenizer* tok = model.tokenizer();
  if (!tok) return Status::error("perplexity: " + model.info().path + " has no usable tokenizer");
  if (tok->add_eos_token()) {
    return Status::error(
        "perplexity: the vocabulary appends EOS to every text "
        "(tokenizer.ggml.add_eos_token), which this method does not allow");
  }
  const std::vector<TokenId> tokens = tok->encode(text, /*add_special=*/true);
  const int64_t n_ctx = params.n_ctx;
  PerplexityResult r;
  r.n_tokens = int64_t(tokens.size());
  if (r.n_tokens < n_ctx) {
    return Status::error("perplexity: the text has " + std::to_string(r.n_tokens) +
                         " tokens; one chunk of the context size needs at least " +
                         std::to_string(n_ctx));
  }
  r.n_chunks = r.n_tokens / n_ctx;
  if (params.max_chunks >= 0) r.n_chunks = std::min(r.n_chunks, params.max_chunks);

  ContextParams cp;
  cp.n_ctx = n_ctx;
  cp.n_batch = params.n_batch;
  cp.n_threads = params.n_threads;
  cp.type_k = params.type_k;
  cp.type_v = params.type_v;
  cp.all_logits = true;
  cp.rope = params.rope;
  Result<std::unique_ptr<Context>> ctx = Context::create(model, cp);
  if (!ctx) return ctx.status();

  NllSums sums;
  std::vector<TokenId> chunk(static_cast<size_t>(n_ctx));
  for (int64_t i = 0; i < r.n_chunks; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    std::copy_n(tokens.begin() + i * n_ctx, n_ctx, chunk.begin());
    if (tok->add_bos_token()) chunk[0] = tok->bos();
    TESSERA_RETURN_IF_ERROR(score_chunk(**ctx, chunk, params.n_batch, sums));
    r.running_ppl.push_back(sums.ppl());
    if (on_chunk) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      on_chunk(PerplexityProgress{i + 1, r.n_chunks, r.running_ppl.back(), s});
    }
  }
  r.n_scored = sums.count;
  r.ppl = sums.ppl();
  const double mean = sums.nll / double(sums.count);
  const double var = sums.nll2 / double(sums.count) - mean * mean;
  r.ppl_error = sums.count > 1 && var > 0 ? std::sqrt(var / double(sums.count - 1)) * r.ppl : 0.0;
  return r;
}

}  // namespace tessera
