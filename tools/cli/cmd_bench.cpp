// `tessera bench`: prompt processing (pp: one batch of p tokens) and text generation
// (tg: n tokens one at a time) speed, repeated r times, reported as mean ± std tokens/s
// with the same meaning as the reference engine's llama-bench. `--bandwidth` measures
// the machine's memory read bandwidth and the roofline it implies for generation.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <tuple>

#include "cli/bench_memory.h"
#include "cli/bench_report.h"
#include "cli/value_list.h"
#include "commands.h"
#include "tessera/context.h"
#include "tessera/model.h"

namespace tessera::cli {
namespace {

struct BenchOptions {
  int64_t ubatch = 0;  // --ubatch
  std::string model;
  std::vector<std::string> lora;  // --lora FILE[:SCALE]
  PlacementOptions placement;     // --layers, --mpi, --mpi-layers
  RopeScalingParams rope;         // --rope-scaling, --rope-scale, --rope-freq-*, --yarn-*
  // Lists, as llama-bench takes them (cli/value_list.h): every combination is a test.
  std::vector<std::string> n_prompt{"512"};
  std::vector<std::string> n_gen{"128"};
  std::vector<std::string> threads;  // empty: default_threads()
  std::vector<std::string> depth{"0"};
  std::vector<std::string> type_k{"f16"};  // -ctk, -ctv: cache type names
  std::vector<std::string> type_v{"f16"};
  int reps = 5;
  int64_t ctx = 0;
  std::string output = "md";
  bool memory = false;
  bool bandwidth = false;
};

/// The expanded lists of the options.
struct Grid {
  std::vector<int64_t> prompts, gens, threads, depths;
  std::vector<DType> types_k, types_v;
};

Result<Grid> expand(const BenchOptions& o) {
  Grid g;
  auto list = [](const std::vector<std::string>& v, const char* flag, int64_t min, int64_t max,
                 std::vector<int64_t>& out) -> Status {
    Result<std::vector<int64_t>> r = expand_value_list(v, flag, min, max);
    if (!r) return r.status();
    out = std::move(*r);
    return Status::ok();
  };
  TESSERA_RETURN_IF_ERROR(list(o.n_prompt, "-p/--n-prompt", 0, 1 << 16, g.prompts));
  TESSERA_RETURN_IF_ERROR(list(o.n_gen, "-n/--n-gen", 0, 1 << 16, g.gens));
  TESSERA_RETURN_IF_ERROR(list(o.depth, "-d/--n-depth", 0, 1 << 20, g.depths));
  auto types = [](const std::vector<std::string>& v, const char* flag, std::vector<DType>& out) -> Status {
    for (const std::string& name : v) {
      Result<DType> t = cache_type(name, flag);
      if (!t) return t.status();
      if (std::find(out.begin(), out.end(), *t) == out.end()) out.push_back(*t);
    }
    return Status::ok();
  };
  TESSERA_RETURN_IF_ERROR(types(o.type_k, "-ctk/--cache-type-k", g.types_k));
  TESSERA_RETURN_IF_ERROR(types(o.type_v, "-ctv/--cache-type-v", g.types_v));
  if (o.threads.empty()) {
    g.threads = {default_threads()};
  } else {
    TESSERA_RETURN_IF_ERROR(list(o.threads, "-t/--threads", 1, 512, g.threads));
  }
  return g;
}

using Clock = std::chrono::steady_clock;

struct Stats {
  double mean = 0, stddev = 0;
};

Stats stats_of(const std::vector<double>& v) {
  Stats s;
  for (double x : v) s.mean += x;
  s.mean /= double(v.size());
  for (double x : v) s.stddev += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(s.stddev / double(v.size() - 1)) : 0.0;
  return s;
}

/// Decodes `depth` random tokens into the cleared context, untimed (as llama-bench's -d).
Status fill_depth(Context& ctx, int depth, int64_t n_vocab, std::mt19937& rng) {
  std::uniform_int_distribution<TokenId> pick(0, TokenId(n_vocab - 1));
  ctx.clear();
  if (depth == 0) return Status::ok();
  std::vector<TokenId> prefix(static_cast<size_t>(depth));
  for (TokenId& t : prefix) t = pick(rng);
  return ctx.decode(prefix);
}

/// Tokens per second of one run of a test (pp or tg) on a context that holds exactly
/// `depth` tokens (fill_depth): what an earlier run added after them is removed first, so
/// the depth, whose decoding grows with its square, is decoded once for all the tests at
/// that depth rather than once per repetition.
Result<double> run_once(Context& ctx, int n_prompt, int n_gen, int depth, int64_t n_vocab,
                        std::mt19937& rng) {
  std::uniform_int_distribution<TokenId> pick(0, TokenId(n_vocab - 1));
  TESSERA_RETURN_IF_ERROR(ctx.seq_rm(0, depth, -1));
  std::vector<TokenId> tokens(static_cast<size_t>(std::max(n_prompt, 1)));
  for (TokenId& t : tokens) t = pick(rng);
  const auto t0 = Clock::now();
  if (n_prompt > 0) {
    TESSERA_RETURN_IF_ERROR(ctx.decode(tokens));
  }
  for (int i = 0; i < n_gen; ++i) {
    const TokenId one[] = {pick(rng)};
    TESSERA_RETURN_IF_ERROR(ctx.decode(one));
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return double(n_prompt + n_gen) / s;
}

struct Samples {
  std::vector<double> tps;        // tokens/s per repetition
  std::vector<double> bandwidth;  // paired probe per repetition (bytes/s), tg with --bandwidth
};

/// `reps` repetitions after one uncounted warm-up, on a context filled to `depth`; with
/// `pair`, each is bracketed by probes.
Result<Samples> run_test(Context& ctx, int n_prompt, int n_gen, int depth, int reps,
                         int64_t n_vocab, bool pair, int threads) {
  std::mt19937 rng(1234);
  Samples out;
  TESSERA_RETURN_IF_ERROR(run_once(ctx, n_prompt, n_gen, depth, n_vocab, rng).status());
  for (int rep = 0; rep < reps; ++rep) {
    const double before = pair ? paired_probe(threads) : 0.0;
    Result<double> tps = run_once(ctx, n_prompt, n_gen, depth, n_vocab, rng);
    if (!tps) return tps.status();
    out.tps.push_back(*tps);
    if (pair) out.bandwidth.push_back((before + paired_probe(threads)) / 2);
  }
  return out;
}

/// The model column: the file name (or the built-in model's), then " + lora NAME[:SCALE]"
/// per adapter, so that a run with adapters is never mistaken for the base's.
std::string model_label(const BenchOptions& o, const std::vector<AdapterSpec>& adapters) {
  std::string s = o.model.empty() ? Model::default_model_name() : std::filesystem::path(o.model).filename().string();
  for (const AdapterSpec& a : adapters) {
    s += " + lora " + std::filesystem::path(a.path).filename().string();
    if (a.scale != 1.0f) s += ":" + nlohmann::json(a.scale).dump();
  }
  return s;
}

/// Bytes one generated token reads: the weights, plus the KV cache cells it attends to
/// (on average the depth and half of the generated tokens), a cell being what the
/// cache holds per cell (kv_cache_bytes / n_ctx).
double bytes_per_token(const ModelInfo& info, const Context& ctx, int64_t depth, int64_t n_gen) {
  const double kv_cell = double(ctx.kv_cache_bytes()) / double(ctx.n_ctx());
  return double(info.decode_bytes) + kv_cell * (double(depth) + double(n_gen) / 2.0);
}

/// A tg row's roofline fields from its paired probes.
void add_roofline(nlohmann::json& row, const Samples& r, double bytes, uint64_t cache_bytes) {
  std::vector<double> gbs, roof, ratio;
  for (size_t i = 0; i < r.tps.size(); ++i) {
    gbs.push_back(r.bandwidth[i] / 1e9);
    roof.push_back(r.bandwidth[i] / bytes);
    ratio.push_back(r.tps[i] * bytes / r.bandwidth[i]);
  }
  const Stats rs = stats_of(ratio);
  row["decode_bytes"] = bytes;
  row["bandwidth_gbs"] = gbs;
  row["roofline_tokens_per_second"] = roof;
  row["roofline_ratio"] = rs.mean;
  row["roofline_ratio_stddev"] = rs.stddev;
  row["roofline_ratio_samples"] = ratio;
  row["fits_in_cache"] = cache_bytes > 0 && bytes <= double(cache_bytes);
}

/// The context for one thread count: large enough for every test of the grid.
Result<std::unique_ptr<Context>> bench_context(const Model& model, const BenchOptions& o, const Grid& g,
                                               int64_t threads, DType type_k, DType type_v) {
  int64_t max_p = 1, max_test = 1, max_d = 0;
  for (int64_t p : g.prompts) max_p = std::max(max_p, p);
  for (int64_t n : g.gens) max_test = std::max(max_test, n);
  for (int64_t d : g.depths) max_d = std::max(max_d, d);
  max_test = std::max(max_test, max_p);
  ContextParams cp;
  cp.n_threads = int(threads);
  cp.n_ubatch = o.ubatch;
  cp.type_k = type_k;
  cp.type_v = type_v;
  cp.rope = o.rope;
  cp.n_batch = std::max({max_p, std::min<int64_t>(max_d, 512), int64_t(1)});
  const int64_t needed = max_d + max_test;
  cp.n_ctx = o.ctx > 0 ? o.ctx : needed;
  if (cp.n_ctx < needed) {
    return Status::error("bench: --ctx-size " + std::to_string(cp.n_ctx) + " is smaller than the test (" +
                         std::to_string(needed) + " cells with the depth)");
  }
  return Context::create(model, cp);
}

int run_bench(const BenchOptions& o) {
  if (!is_report_format(o.output)) return fail("bench: -o must be md, csv, json, jsonl or sql, not '" + o.output + "'");
  Result<Grid> grid = expand(o);
  if (!grid) return fail("bench: " + grid.status().message());
  if (o.model.empty() && o.bandwidth) {  // the probe alone
    const int threads = int(grid->threads.front());
    print_bandwidth(o.output, threads, measure_read_bandwidth(threads, size_t(1) << 30, 5));
    return 0;
  }
  if (o.memory && o.bandwidth) {
    return fail("bench: --memory and --bandwidth cannot be combined (the peak would count the "
                "bandwidth probe's buffer); run them separately");
  }
  Result<ModelParams> mp = model_params(o.lora);
  if (mp) apply_placement(o.placement, *mp);
  if (!mp) return fail(mp.status().message());
  Result<std::unique_ptr<Model>> model = load_model_or_default(o.model, *mp);
  if (!model) return fail(model.status().message());
  const ModelInfo& info = (*model)->info();
  BenchReport report;
  report.cache_bytes = last_level_cache_bytes();
  std::vector<std::tuple<int64_t, DType, DType>> contexts;  // every thread count and pair of cache types
  for (const int64_t threads : grid->threads) {
    for (const DType k : grid->types_k) {
      for (const DType v : grid->types_v) contexts.emplace_back(threads, k, v);
    }
  }
  for (const std::tuple<int64_t, DType, DType>& c : contexts) {
    const int64_t threads = std::get<0>(c);
    const DType type_k = std::get<1>(c), type_v = std::get<2>(c);
    Result<std::unique_ptr<Context>> ctx = bench_context(**model, o, *grid, threads, type_k, type_v);
    if (!ctx) return fail(ctx.status().message());
    auto add_row = [&](int64_t n_p, int64_t n_g, int64_t depth) -> Status {
      const bool pair = o.bandwidth && n_p == 0;
      Result<Samples> r = run_test(**ctx, int(n_p), int(n_g), int(depth), o.reps, info.n_vocab, pair, int(threads));
      if (!r) return r.status();
      const Stats s = stats_of(r->tps);
      const std::string at = depth > 0 ? " @ d" + std::to_string(depth) : "";
      nlohmann::json row = {{"model", model_label(o, mp->adapters)},
                            {"size_bytes", info.weight_bytes}, {"params", info.n_params},
                            {"threads", threads}, {"type_k", dtype_name(type_k)}, {"type_v", dtype_name(type_v)},
                            {"n_prompt", n_p}, {"n_gen", n_g}, {"n_depth", depth},
                            {"test", (n_p > 0 ? "pp" + std::to_string(n_p) : "tg" + std::to_string(n_g)) + at},
                            {"reps", o.reps}, {"tokens_per_second", s.mean}, {"stddev", s.stddev},
                            {"samples", r->tps}};
      if (pair) add_roofline(row, *r, bytes_per_token(info, **ctx, depth, n_g), report.cache_bytes);
      if (o.memory) row["kv_cache_bytes"] = (*ctx)->kv_cache_bytes();
      report.rows.push_back(std::move(row));
      return Status::ok();
    };
    for (const int64_t depth : grid->depths) {
      std::mt19937 rng(99);
      if (Status st = fill_depth(**ctx, int(depth), info.n_vocab, rng); !st) return fail(st.message());
      for (const int64_t p : grid->prompts) {
        if (p > 0) {
          if (Status st = add_row(p, 0, depth); !st) return fail(st.message());
        }
      }
      for (const int64_t n : grid->gens) {
        if (n > 0) {
          if (Status st = add_row(0, n, depth); !st) return fail(st.message());
        }
      }
    }
  }
  if (o.memory) {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    report.peak_rss_mib = double(usage.ru_maxrss) / 1024.0;
  }
  print_report(o.output, report);
  return 0;
}

}  // namespace

Command add_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure prompt processing (pp) and generation (tg) speed in tokens/s, as llama-bench");
  cmd->description(cmd->get_description() +
                   ". -p, -n, -t, -d, -ctk and -ctv take lists, as llama-bench: 128,512 (or the flag given again), ranges "
                   "FIRST-LAST, FIRST-LAST+STEP, FIRST-LAST*FACTOR; every combination is a test.");
  cmd->add_option("-m,--model", o->model, model_option_help())->check(CLI::ExistingFile);
  add_lora_option(cmd, o->lora);
  add_placement_options(cmd, o->placement);
  add_rope_options(cmd, o->rope);
  cmd->add_option("-p,--n-prompt", o->n_prompt, "prompt tokens in one batch (0: skip pp)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-n,--n-gen", o->n_gen, "tokens generated one by one (0: skip tg)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "CPU threads (default: the machine's cores)")->delimiter(',');
  cmd->add_option("--ubatch", o->ubatch,
                  "tokens per forward pass within the pp batch (default: all of it; across MPI ranks a sixteenth, at "
                  "least 32, so that the ranks work on different parts at once)")
      ->check(NumberRange(0, 65536));
  cmd->add_option("-c,--ctx-size", o->ctx, "KV cache cells (default: the largest test with its depth)")
      ->check(NumberRange(int64_t(0), int64_t(1) << 24));
  cmd->add_option("-d,--n-depth", o->depth, "tokens already in the context when each test starts (decoded untimed)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--cache-type-k", o->type_k,  // also -ctk (main.cpp)
                  "-ctk T,...: KV cache types of the keys (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl), a list")
      ->delimiter(',')
      ->check(cache_type_validator())
      ->capture_default_str();
  cmd->add_option("--cache-type-v", o->type_v, "-ctv T,...: KV cache types of the values, a list")
      ->delimiter(',')
      ->check(cache_type_validator())
      ->capture_default_str();
  cmd->add_option("-r,--repetitions", o->reps, "repetitions of each test (after one warm-up)")->check(NumberRange(1, 1000));
  cmd->add_option("-o,--output", o->output, "output format: md, csv, json, jsonl or sql")->capture_default_str();
  cmd->add_flag("--memory", o->memory,
                "also report the peak resident memory, and each test's KV cache bytes (its -c cells, keys and values, "
                "in the cache types of the test)");
  cmd->add_flag("--bandwidth", o->bandwidth,
                "without -m: measure memory read bandwidth only; with -m: bracket each tg repetition with "
                "bandwidth probes and report tg against its roofline (bandwidth / bytes read per token), saying "
                "when those bytes fit in the CPU's cache; not with --memory");
  return {cmd, [o] { return run_bench(*o); }};
}

}  // namespace tessera::cli
