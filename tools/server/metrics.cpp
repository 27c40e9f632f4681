#include "server/metrics.h"

#include <algorithm>
#include <cstdio>

namespace tessera::server {
namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

double seconds(serving::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

void add_header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void add_value(std::string& out, const char* name, const char* type, const char* help, double v) {
  add_header(out, name, type, help);
  out += std::string(name) + " " + number(v) + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
  std::string out = "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  cumulative += counts_.back();
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  out += name + "_sum " + number(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
  return out;
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      tpot_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}),
      duration_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}) {}

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
}

void Metrics::observe(const serving::Usage& u) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += uint64_t(std::max<int64_t>(0, u.prompt_tokens));
  cached_tokens_ += uint64_t(std::max<int64_t>(0, u.cached_tokens));
  generated_tokens_ += uint64_t(std::max<int64_t>(0, u.completion_tokens));
  if (u.finished < u.queued) return;  // timestamps not set (a refused or failed request)
  duration_.observe(seconds(u.finished - u.queued));
  if (u.completion_tokens > 0 && u.first_token >= u.queued) {
    ttft_.observe(seconds(u.first_token - u.queued));
    if (u.completion_tokens > 1 && u.finished >= u.first_token) {
      tpot_.observe(seconds(u.finished - u.first_token) / double(u.completion_tokens - 1));
    }
  }
}

std::string Metrics::render(const serving::EngineStats* stats) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  add_header(out, "tessera_requests_total", "counter", "HTTP requests answered, by endpoint and status");
  for (const auto& [key, n] : requests_) {
    out += "tessera_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
           "\"} " + std::to_string(n) + "\n";
  }
  add_value(out, "tessera_prompt_tokens_total", "counter", "prompt tokens of finished requests",
            double(prompt_tokens_));
  add_value(out, "tessera_cached_tokens_total", "counter",
            "prompt tokens whose cells came from the prefix cache", double(cached_tokens_));
  add_value(out, "tessera_generated_tokens_total", "counter", "tokens generated", double(generated_tokens_));
  const serving::EngineStats empty;
  const serving::EngineStats& s = stats ? *stats : empty;
  add_value(out, "tessera_requests_running", "gauge", "requests holding slots", s.running);
  add_value(out, "tessera_requests_waiting", "gauge", "requests waiting for a slot", s.waiting);
  add_value(out, "tessera_kv_cells_used", "gauge", "KV cache cells in use, cached prefixes included",
            double(s.cells_used));
  add_value(out, "tessera_kv_cells_total", "gauge", "KV cache cells", double(s.n_ctx));
  add_value(out, "tessera_cached_prefixes", "gauge", "cached prefixes held in the KV cache",
            s.cached_prefixes);
  add_value(out, "tessera_decode_steps_total", "counter", "batches decoded", double(s.steps));
  add_value(out, "tessera_prefix_evictions_total", "counter", "cached prefixes evicted",
            double(s.evictions));
  // Speculative decoding (-md / --lookup): all 0 without it.
  add_value(out, "tessera_draft_tokens_total", "counter", "tokens drafted for speculative decoding",
            double(s.draft_tokens));
  add_value(out, "tessera_draft_accepted_total", "counter", "drafted tokens the model accepted",
            double(s.draft_accepted));
  add_value(out, "tessera_draft_acceptance_ratio", "gauge", "drafted tokens accepted / drafted",
            s.draft_tokens > 0 ? double(s.draft_accepted) / double(s.draft_tokens) : 0.0);
  add_value(out, "tessera_speculative_steps_total", "counter",
            "speculative verifications (one target pass of one sequence each)", double(s.spec_steps));
  add_value(out, "tessera_speculative_tokens_total", "counter", "tokens those verifications produced",
            double(s.spec_tokens));
  add_value(out, "tessera_speculative_tokens_per_step", "gauge",
            "tokens per target pass of a speculating sequence (1 without speculation; the speed-up if "
            "drafting and a longer pass were free)",
            s.spec_steps > 0 ? double(s.spec_tokens) / double(s.spec_steps) : 0.0);
  out += ttft_.render("tessera_time_to_first_token_seconds", "from submission to the first token");
  out += tpot_.render("tessera_time_per_output_token_seconds", "between output tokens after the first");
  out += duration_.render("tessera_request_duration_seconds", "from submission to the last event");
  return out;
}

}  // namespace tessera::server
