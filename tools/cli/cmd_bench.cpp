// `tessera bench`: prompt processing (pp: one batch of p tokens) and text generation
// (tg: n tokens one at a time) speed, repeated r times, reported as mean ± std tokens/s
// with the same meaning as the reference engine's llama-bench. `--bandwidth` measures
// the machine's memory read bandwidth and the roofline it implies for generation.
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

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
  int n_prompt = 512;
  int n_gen = 128;
  int threads = default_threads();
  int reps = 5;
  int64_t ctx = 0;
  int depth = 0;
  std::string output = "md";
  bool memory = false;
  bool bandwidth = false;
};

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

/// Bytes per second of reading `bytes` (far larger than the caches) with `threads` threads,
/// on 2 MiB pages like the repacked weights: every word summed into 8 independent
/// accumulators (the compiler vectorises the loop). The best of `reps` runs, each timed
/// from a common start to the last thread's end (threads are created before the clock
/// starts).
/// (Software prefetch did not raise it on the machines we measure.)
double measure_read_bandwidth(int threads, size_t bytes, int reps) {
  const size_t huge = size_t(2) << 20;
  std::unique_ptr<uint64_t, void (*)(void*)> buf(static_cast<uint64_t*>(std::aligned_alloc(huge, bytes)),
                                                 std::free);
  if (!buf) return 0;
  ::madvise(buf.get(), bytes, MADV_HUGEPAGE);
  const size_t n = bytes / sizeof(uint64_t);
  std::fill(buf.get(), buf.get() + n, uint64_t(1));
  constexpr size_t kLine = 64 / sizeof(uint64_t);  // words per cache line
  double best = 0;
  for (int rep = 0; rep < reps; ++rep) {
    std::vector<uint64_t> sums(size_t(threads) * 8, 0);
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const uint64_t* p = buf.get();
        const size_t begin = n * size_t(t) / size_t(threads) / kLine * kLine;
        const size_t end = n * size_t(t + 1) / size_t(threads) / kLine * kLine;
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        uint64_t acc[kLine] = {};
        for (size_t i = begin; i + kLine <= end; i += kLine) {
          for (size_t j = 0; j < kLine; ++j) acc[j] += p[i + j];
        }
        uint64_t total = 0;
        for (uint64_t v : acc) total += v;
        sums[size_t(t) * 8] = total;
      });
    }
    while (ready.load() < threads) {
    }
    const auto t0 = Clock::now();
    go.store(true, std::memory_order_release);
    for (std::thread& th : pool) th.join();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    uint64_t total = 0;
    for (uint64_t v : sums) total += v;
    if (total == 0) return 0;  // keeps the reads from being optimised away
    best = std::max(best, double(bytes) / s);
  }
  return best;
}

/// Tokens per second of one run of a test (pp or tg) on a cleared context that first
/// holds `depth` tokens (decoded before the clock starts, as llama-bench's -d).
Result<double> run_once(Context& ctx, int n_prompt, int n_gen, int depth, int64_t n_vocab,
                        std::mt19937& rng) {
  std::uniform_int_distribution<TokenId> pick(0, TokenId(n_vocab - 1));
  ctx.clear();
  if (depth > 0) {
    std::vector<TokenId> prefix(static_cast<size_t>(depth));
    for (TokenId& t : prefix) t = pick(rng);
    TESSERA_RETURN_IF_ERROR(ctx.decode(prefix));
  }
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

/// The paired probe of a tg repetition: this VM's read bandwidth changes from one second
/// to the next (docs/performance.md), so each repetition's roofline comes from probes
/// taken just before and just after it rather than from one probe at the start.
constexpr size_t kPairedProbeBytes = size_t(512) << 20;
constexpr int kPairedProbeReps = 3;
// The engine's worker threads spin for a while after a decode before they sleep; the
// probe waits for that so it does not share the cores with them.
constexpr auto kQuiet = std::chrono::milliseconds(300);

double paired_probe(int threads) {
  std::this_thread::sleep_for(kQuiet);
  return measure_read_bandwidth(threads, kPairedProbeBytes, kPairedProbeReps);
}

struct Samples {
  std::vector<double> tps;        // tokens/s per repetition
  std::vector<double> bandwidth;  // paired probe per repetition (bytes/s), tg with --bandwidth
};

/// `reps` repetitions after one uncounted warm-up; with `pair`, each is bracketed by probes.
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

/// 1.23 GiB / 45.6 MiB for sizes; 1.10 B / 15.0 M for counts.
std::string human(double v, bool bytes) {
  char buf[32];
  if (bytes) {
    const bool gib = v >= double(1 << 30);
    std::snprintf(buf, sizeof buf, "%.2f %s", v / (gib ? double(1 << 30) : double(1 << 20)), gib ? "GiB" : "MiB");
  } else {
    const bool billions = v >= 1e9;
    std::snprintf(buf, sizeof buf, "%.2f %s", v / (billions ? 1e9 : 1e6), billions ? "B" : "M");
  }
  return buf;
}

/// The roofline lines printed under the table for a tg row measured with paired probes.
void print_roofline(const nlohmann::json& r, bool md) {
  const char* lead = md ? "" : "# ";
  const double bytes = r["decode_bytes"].get<double>();
  std::printf("%sroofline %s (%.1f MB read per token: weights and KV cache; probe before and after each repetition):\n",
              lead, r["test"].get<std::string>().c_str(), bytes / 1e6);
  const auto& tps = r["samples"];
  const auto& bw = r["bandwidth_gbs"];
  for (size_t i = 0; i < tps.size(); ++i) {
    const double roof = bw[i].get<double>() * 1e9 / bytes;
    std::printf("%s  %.1f GB/s -> roofline %.1f t/s; measured %.2f t/s = %.0f%%\n", lead,
                bw[i].get<double>(), roof, tps[i].get<double>(), 100.0 * tps[i].get<double>() / roof);
  }
  std::printf("%s  mean %.0f%% ± %.0f%% of the roofline\n", lead, 100.0 * r["roofline_ratio"].get<double>(),
              100.0 * r["roofline_ratio_stddev"].get<double>());
}

/// The model column: the file name, then " + lora NAME[:SCALE]" per adapter, so that a run
/// with adapters is never mistaken for the base's.
std::string model_label(const BenchOptions& o, const std::vector<AdapterSpec>& adapters) {
  std::string s = std::filesystem::path(o.model).filename().string();
  for (const AdapterSpec& a : adapters) {
    s += " + lora " + std::filesystem::path(a.path).filename().string();
    if (a.scale != 1.0f) s += ":" + nlohmann::json(a.scale).dump();
  }
  return s;
}

int run_bench(const BenchOptions& o) {
  if (o.output != "md" && o.output != "json" && o.output != "csv") {
    return fail("bench: -o must be md, json or csv");
  }
  if (o.model.empty()) {
    if (!o.bandwidth) return fail("bench: give -m MODEL (or --bandwidth alone)");
    const double bw = measure_read_bandwidth(o.threads, size_t(1) << 30, 5);
    std::printf("memory read bandwidth, %d threads: %.1f GB/s\n", o.threads, bw / 1e9);
    return 0;
  }
  if (o.memory && o.bandwidth) {
    return fail("bench: --memory and --bandwidth cannot be combined (the peak would count the "
                "bandwidth probe's buffer); run them separately");
  }
  Result<ModelParams> mp = model_params(o.lora);
  if (mp) apply_placement(o.placement, *mp);
  if (!mp) return fail(mp.status().message());
  Result<std::unique_ptr<Model>> model = Model::load(o.model, *mp);
  if (!model) return fail(model.status().message());
  const ModelInfo& info = (*model)->info();
  ContextParams cp;
  cp.n_threads = o.threads;
  cp.n_ubatch = o.ubatch;
  cp.n_batch = std::max({o.n_prompt, std::min(o.depth, 512), 1});
  const int64_t needed = int64_t(o.depth) + std::max({o.n_prompt, o.n_gen, 1});
  cp.n_ctx = o.ctx > 0 ? o.ctx : needed;
  if (cp.n_ctx < needed) {
    return fail("bench: --ctx-size " + std::to_string(cp.n_ctx) + " is smaller than the test (" +
                std::to_string(needed) + " cells with the depth)");
  }
  Result<std::unique_ptr<Context>> ctx = Context::create(**model, cp);
  if (!ctx) return fail(ctx.status().message());

  nlohmann::json rows = nlohmann::json::array();
  auto add_row = [&](const std::string& test, int n_p, int n_g) -> int {
    const bool pair = o.bandwidth && n_p == 0;
    Result<Samples> r = run_test(**ctx, n_p, n_g, o.depth, o.reps, info.n_vocab, pair, o.threads);
    if (!r) return fail(r.status().message());
    const Stats s = stats_of(r->tps);
    nlohmann::json row = {{"model", model_label(o, mp->adapters)},
                          {"size_bytes", info.weight_bytes}, {"params", info.n_params},
                          {"threads", o.threads}, {"test", test}, {"reps", o.reps},
                          {"tokens_per_second", s.mean}, {"stddev", s.stddev}, {"samples", r->tps}};
    if (o.depth > 0) row["n_depth"] = o.depth;
    if (pair) {
      // Bytes per token: the weights, plus the KV cache cells each token reads (on
      // average the depth and half of the generated tokens).
      const double kv_cell = double(info.n_layer) * 2.0 * double(info.n_embd / info.n_head * info.n_head_kv) *
                             double(dtype_traits(cp.kv_type).type_size);
      const double bytes = double(info.decode_bytes) + kv_cell * (double(o.depth) + n_g / 2.0);
      std::vector<double> gbs, ratio;
      for (size_t i = 0; i < r->tps.size(); ++i) {
        gbs.push_back(r->bandwidth[i] / 1e9);
        ratio.push_back(r->tps[i] * bytes / r->bandwidth[i]);
      }
      const Stats rs = stats_of(ratio);
      row["decode_bytes"] = bytes;
      row["bandwidth_gbs"] = gbs;
      row["roofline_ratio"] = rs.mean;
      row["roofline_ratio_stddev"] = rs.stddev;
      row["roofline_ratio_samples"] = ratio;
    }
    rows.push_back(row);
    return 0;
  };
  const std::string at = o.depth > 0 ? " @ d" + std::to_string(o.depth) : "";
  if (o.n_prompt > 0 && add_row("pp" + std::to_string(o.n_prompt) + at, o.n_prompt, 0) != 0) return 1;
  if (o.n_gen > 0 && add_row("tg" + std::to_string(o.n_gen) + at, 0, o.n_gen) != 0) return 1;

  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double peak_mib = double(usage.ru_maxrss) / 1024.0;
  if (o.output == "json") {
    nlohmann::json out = {{"results", rows}};
    if (o.memory) out["peak_rss_mib"] = peak_mib;
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  const bool md = o.output == "md";
  std::printf(md ? "| model | size | params | threads | test | t/s |\n|---|---:|---:|---:|---:|---:|\n"
                 : "model,size_bytes,params,threads,test,tokens_per_second,stddev\n");
  for (const auto& r : rows) {
    const std::string name = r["model"];
    const double size = double(r["size_bytes"].get<uint64_t>());
    if (md) {
      const double params = double(r["params"].get<uint64_t>());
      std::printf("| %s | %s | %s | %d | %s | %.2f ± %.2f |\n", name.c_str(), human(size, true).c_str(),
                  human(params, false).c_str(), o.threads,
                  r["test"].get<std::string>().c_str(), r["tokens_per_second"].get<double>(),
                  r["stddev"].get<double>());
    } else {
      std::printf("%s,%.0f,%llu,%d,%s,%.3f,%.3f\n", name.c_str(), size,
                  static_cast<unsigned long long>(r["params"].get<uint64_t>()), o.threads,
                  r["test"].get<std::string>().c_str(), r["tokens_per_second"].get<double>(),
                  r["stddev"].get<double>());
    }
  }
  if (o.memory) std::printf("%speak RSS: %.1f MiB\n", md ? "\n" : "# ", peak_mib);
  for (const auto& r : rows) {
    if (r.contains("roofline_ratio")) {
      if (md) std::printf("\n");
      print_roofline(r, md);
    }
  }
  return 0;
}

}  // namespace

Command add_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure prompt processing (pp) and generation (tg) speed in tokens/s, as llama-bench");
  cmd->add_option("-m,--model", o->model, "GGUF model file")->check(CLI::ExistingFile);
  add_lora_option(cmd, o->lora);
  add_placement_options(cmd, o->placement);
  cmd->add_option("-p,--n-prompt", o->n_prompt, "prompt tokens in one batch (0: skip pp)")->check(CLI::Range(0, 1 << 16));
  cmd->add_option("-n,--n-gen", o->n_gen, "tokens generated one by one (0: skip tg)")->check(CLI::Range(0, 1 << 16));
  cmd->add_option("-t,--threads", o->threads, "CPU threads")->check(CLI::Range(1, 512));
  cmd->add_option("--ubatch", o->ubatch,
                  "tokens per forward pass within the pp batch (default: all of it; across MPI ranks a sixteenth, at "
                  "least 32, so that the ranks work on different parts at once)")
      ->check(CLI::Range(0, 65536));
  cmd->add_option("-c,--ctx-size", o->ctx, "KV cache cells (default: the larger of p and n)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 24));
  cmd->add_option("-d,--n-depth", o->depth, "tokens already in the context when each test starts (decoded untimed)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("-r,--repetitions", o->reps, "repetitions of each test (after one warm-up)")->check(CLI::Range(1, 1000));
  cmd->add_option("-o,--output", o->output, "output format: md, json or csv");
  cmd->add_flag("--memory", o->memory, "also report the peak resident memory");
  cmd->add_flag("--bandwidth", o->bandwidth,
                "alone: measure memory read bandwidth; with -m: bracket each tg repetition with "
                "bandwidth probes and report tg against its roofline (bandwidth / weight bytes "
                "read per token); not with --memory");
  return {cmd, [o] { return run_bench(*o); }};
}

}  // namespace tessera::cli
