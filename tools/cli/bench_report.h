// The output of `tessera bench` in each format: md (a table for people, the roofline
// below it), csv (one header line, one line per test, nothing else), json (everything the
// table and the roofline lines show, as one document), jsonl (one object per test per
// line), sql (CREATE TABLE + INSERT statements, as llama-bench's -o sql).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tessera::cli {

/// One object per test: model, size_bytes, params, threads, type_k, type_v (the KV cache
/// types), n_prompt, n_gen, n_depth, test, reps, tokens_per_second, stddev, samples;
/// with --memory kv_cache_bytes; a tg test with paired bandwidth probes
/// also decode_bytes, bandwidth_gbs (per repetition), roofline_tokens_per_second (per
/// repetition), roofline_ratio, roofline_ratio_stddev, roofline_ratio_samples,
/// fits_in_cache.
struct BenchReport {
  nlohmann::json rows = nlohmann::json::array();
  std::optional<double> peak_rss_mib;  // with --memory
  uint64_t cache_bytes = 0;            // the CPU's last-level cache (0: unknown)
};

/// md, csv, json, jsonl, sql.
bool is_report_format(const std::string& format);
void print_report(const std::string& format, const BenchReport& report);
/// `bench --bandwidth` without a model: the measured bandwidth alone, in `format`.
void print_bandwidth(const std::string& format, int threads, double bytes_per_second);

}  // namespace tessera::cli
