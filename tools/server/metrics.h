// Prometheus metrics (GET /metrics with --metrics): requests by endpoint and status,
// token counters, engine gauges, and latency histograms from each request's Usage.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tessera/serving.h"

namespace tessera::server {

/// A cumulative histogram with fixed bucket bounds (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  /// The `_bucket`, `_sum` and `_count` lines of metric `name`.
  std::string render(const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); last: +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  /// One answered HTTP request (`endpoint` is a route path, or "other").
  void count_request(const std::string& endpoint, int status);
  /// A finished generation or embedding request: tokens and timings.
  void observe(const serving::Usage& usage);
  /// The whole text exposition; `stats` null while the model loads.
  std::string render(const serving::EngineStats* stats) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0;
  uint64_t cached_tokens_ = 0;
  uint64_t generated_tokens_ = 0;
  Histogram ttft_;
  Histogram tpot_;
  Histogram duration_;
};

}  // namespace tessera::server
