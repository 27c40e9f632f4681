// The importance matrix of a model over a text, as llama.cpp's llama-imatrix computes it
// (the method is described in tessera/imatrix.h).
#include "tessera/imatrix.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <span>
#include <unordered_map>

#include "quant/imatrix_file.h"
#include "tessera/context.h"
#include "tessera/perplexity.h"
#include "tessera/tokenizer.h"

namespace tessera {
namespace {

// The reference leaves out products of fewer rows (small batches, e.g. generation).
constexpr int64_t kMinRows = 16;

/// Sums of x^2 per column of each matrix, in the order the matrices were first seen.
class Collector {
 public:
  explicit Collector(bool process_output) : process_output_(process_output) {}

  void observe(const MatmulInput& in) {
    if (!error_.is_ok()) return;
    if (in.n_expert == 0) {
      // Plain products: the layers' matrices (and the output's when asked), 16 rows or more.
      const bool wanted = in.weight.substr(0, 4) == "blk." || (process_output_ && in.weight == "output.weight");
      if (!wanted || in.n_rows < kMinRows) return;
    }
    Stats& s = stats_for(in.weight);
    const int64_t n_expert = std::max<int64_t>(in.n_expert, 1);
    const size_t size = size_t(in.n_in * n_expert);
    if (s.sums.empty()) {
      s.sums.assign(size, 0.0);
      s.counts.assign(size, 0);
    } else if (s.sums.size() != size) {
      error_ = Status::error("imatrix: matrix '" + std::string(in.weight) + "' was seen with " +
                             std::to_string(s.sums.size()) + " and then " + std::to_string(size) + " columns");
      return;
    }
    ++s.ncall;
    n_calls_ = std::max(n_calls_, s.ncall);
    for (int64_t r = 0; r < in.n_rows; ++r) {
      const size_t at = in.n_expert > 0 ? size_t(in.expert[r]) * size_t(in.n_in) : 0;
      if (in.n_expert > 0 && (in.expert[r] < 0 || in.expert[r] >= in.n_expert)) continue;
      const float* x = in.rows + r * in.n_in;
      for (int64_t j = 0; j < in.n_in; ++j) {
        s.sums[at + size_t(j)] += double(x[j]) * double(x[j]);
        ++s.counts[at + size_t(j)];
      }
    }
    for (double v : s.sums) {
      if (!std::isfinite(v)) {
        error_ = Status::error("imatrix: a non-finite activation reached matrix '" + std::string(in.weight) + "'");
        return;
      }
    }
  }

  const Status& error() const { return error_; }

  /// The file's contents; matrices with columns no row reached go to `skipped`.
  quant::Imatrix result(std::vector<std::string>& skipped) const {
    quant::Imatrix m;
    m.chunks = n_calls_;
    for (const auto& [name, s] : order_) {
      const int64_t zeros = std::count(s->counts.begin(), s->counts.end(), int64_t(0));
      if (zeros > 0) {
        const double pct = 100.0 * double(int64_t(s->counts.size()) - zeros) / double(s->counts.size());
        char why[64];
        std::snprintf(why, sizeof why, zeros == int64_t(s->counts.size()) ? ": no data" : ": partial data (%.2f%%)",
                      pct);
        skipped.push_back(name + why);
        continue;
      }
      quant::ImatrixEntry e;
      e.name = name;
      e.ncall = s->ncall;
      e.values.resize(s->sums.size());
      for (size_t i = 0; i < s->sums.size(); ++i) {
        e.values[i] = float(s->sums[i] / double(s->counts[i])) * float(s->ncall);
      }
      m.entries.push_back(std::move(e));
    }
    return m;
  }

 private:
  struct Stats {
    std::vector<double> sums;
    std::vector<int64_t> counts;
    int32_t ncall = 0;
  };

  Stats& stats_for(std::string_view name) {
    auto it = index_.find(std::string(name));
    if (it != index_.end()) return *it->second;
    auto s = std::make_unique<Stats>();
    Stats* raw = s.get();
    index_.emplace(std::string(name), raw);
    order_.emplace_back(std::string(name), std::move(s));
    return *raw;
  }

  bool process_output_;
  std::vector<std::pair<std::string, std::unique_ptr<Stats>>> order_;
  std::unordered_map<std::string, Stats*> index_;
  int32_t n_calls_ = 0;
  Status error_;
};

struct NllSums {
  double nll = 0;
  double nll2 = 0;
  int64_t count = 0;
};

/// Evaluates one chunk from an empty context; with `sums`, scores its second half.
Status run_chunk(Context& ctx, std::span<const TokenId> chunk, int64_t n_batch, NllSums* sums) {
  const int64_t n_ctx = int64_t(chunk.size());
  const int64_t first = n_ctx / 2;
  ctx.clear();
  for (int64_t start = 0; start < n_ctx; start += n_batch) {
    const int64_t count = std::min(n_batch, n_ctx - start);
    TESSERA_RETURN_IF_ERROR(ctx.decode(chunk.subspan(size_t(start), size_t(count))));
    if (!sums) continue;
    for (int64_t j = std::max(start, first); j < std::min(start + count, n_ctx - 1); ++j) {
      const double v = token_nll(ctx.logits_at(j - start).data(), ctx.n_vocab(), chunk[size_t(j + 1)]);
      sums->nll += v;
      sums->nll2 += v * v;
      ++sums->count;
    }
  }
  return Status::ok();
}

Result<std::vector<TokenId>> tokenize(const Model& model, std::string_view text, int64_t n_ctx) {
  const Tokenizer* tok = model.tokenizer();
  if (!tok) return Status::error("imatrix: " + model.info().path + " has no usable tokenizer");
  if (tok->add_eos_token()) {
    return Status::error(
        "imatrix: the vocabulary appends EOS to every text (tokenizer.ggml.add_eos_token), which "
        "this method does not allow");
  }
  std::vector<TokenId> tokens = tok->encode(text, /*add_special=*/true);
  if (int64_t(tokens.size()) < 2 * n_ctx) {
    return Status::error("imatrix: the text has " + std::to_string(tokens.size()) +
                         " tokens; a context of " + std::to_string(n_ctx) + " needs at least " +
                         std::to_string(2 * n_ctx) + " (two chunks), as the reference requires");
  }
  return tokens;
}

}  // namespace

Result<ImatrixResult> compute_imatrix(const Model& model, std::string_view text, const ImatrixParams& params,
                                      const std::string& out_path,
                                      const std::function<void(const ImatrixProgress&)>& on_chunk) {
  if (params.n_ctx < 4) return Status::error("imatrix: n_ctx " + std::to_string(params.n_ctx) + " is below 4");
  if (params.n_batch < 1) return Status::error("imatrix: n_batch must be positive");
  Result<std::vector<TokenId>> tokens = tokenize(model, text, params.n_ctx);
  if (!tokens) return tokens.status();
  const Tokenizer& tok = *model.tokenizer();
  const int64_t n_ctx = params.n_ctx;
  const int64_t n_batch = std::min(params.n_batch, n_ctx);
  ImatrixResult r;
  r.n_tokens = int64_t(tokens->size());
  r.n_chunks = r.n_tokens / n_ctx;
  if (params.max_chunks >= 0) r.n_chunks = std::min(r.n_chunks, params.max_chunks);

  Collector collector(params.process_output);
  ContextParams cp;
  cp.n_ctx = n_ctx;
  cp.n_batch = n_batch;
  cp.n_threads = params.n_threads;
  cp.type_k = params.type_k;
  cp.type_v = params.type_v;
  cp.all_logits = true;
  cp.rope = params.rope;
  cp.matmul_observer = [](const MatmulInput& in, void* c) { static_cast<Collector*>(c)->observe(in); };
  cp.matmul_observer_data = &collector;
  Result<std::unique_ptr<Context>> ctx = Context::create(model, cp);
  if (!ctx) return ctx.status();

  NllSums sums;
  std::vector<TokenId> chunk(static_cast<size_t>(n_ctx));
  for (int64_t i = 0; i < r.n_chunks; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    std::copy_n(tokens->begin() + i * n_ctx, n_ctx, chunk.begin());
    if (tok.add_bos_token()) chunk[0] = tok.bos();
    TESSERA_RETURN_IF_ERROR(run_chunk(**ctx, chunk, n_batch, params.compute_ppl ? &sums : nullptr));
    TESSERA_RETURN_IF_ERROR(collector.error());
    if (on_chunk) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double ppl = sums.count > 0 ? std::exp(sums.nll / double(sums.count)) : 0.0;
      on_chunk(ImatrixProgress{i + 1, r.n_chunks, ppl, s});
    }
  }
  if (sums.count > 0) {
    const double mean = sums.nll / double(sums.count);
    r.ppl = std::exp(mean);
    const double var = sums.nll2 / double(sums.count) - mean * mean;
    r.ppl_error = sums.count > 1 && var > 0 ? std::sqrt(var / double(sums.count - 1)) * r.ppl : 0.0;
  }
  quant::Imatrix m = collector.result(r.skipped);
  if (m.entries.empty()) {
    return Status::error("imatrix: no matrix of " + model.info().path + " was reached by a batch of " +
                         std::to_string(kMinRows) + " tokens or more (raise -c / -b)");
  }
  m.dataset = params.dataset;
  r.n_entries = int64_t(m.entries.size());
  r.n_calls = m.chunks;
  TESSERA_RETURN_IF_ERROR(quant::write_imatrix(out_path, m));
  return r;
}

}  // namespace tessera
