// tessera_serve_load: concurrent streaming clients against an OpenAI-compatible server
// (`tessera serve`, or llama.cpp's llama-server), measuring time to first token, time per
// output token and aggregate throughput. See bench/serve_load/README.md.
//
// Each round runs C clients at once (C from --clients); each client sends
// --requests-per-client streaming POST /v1/completions requests, one after another, with
// `ignore_eos: true` so every request generates --max-tokens tokens. Every prompt is
// distinct (its first words name the round, client and request), so no two share a prefix.
// The last round is the shared-prefix case: the prompts of all clients begin with the same
// ~N-token text (--shared-prefix N; 0 skips it), then a distinct question.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string base_path;  // a path prefix of --url, without the trailing '/'
  std::vector<int> clients = {1, 4, 8, 16};
  int requests_per_client = 4;
  int max_tokens = 128;
  int prompt_tokens = 64;
  int shared_prefix = 1000;
  std::string api_key;
  std::string model;
  bool json_out = false;
  int timeout_s = 600;
  // Mixed into every prompt, so that a second run does not find the first one's prompts
  // in the server's prefix cache. --seed fixes it; by default it comes from the clock.
  uint64_t seed = 0;
};

// What one request measured.
struct Sample {
  bool ok = false;
  std::string error;
  double ttft_ms = 0;          // send -> first content chunk
  double tpot_ms = 0;          // (last chunk - first chunk) / (tokens - 1); 0 when tokens < 2
  int64_t tokens = 0;          // usage.completion_tokens, else the content chunks counted
  int64_t chunks = 0;          // content chunks seen
  int64_t prompt_tokens = -1;  // from usage (or llama-server's timings), -1 when absent
  int64_t cached_tokens = -1;
  bool usage_seen = false;
};

// The summary of one round.
struct Round {
  std::string name;
  int clients = 0;
  int requests = 0;
  int failed = 0;
  double wall_s = 0;
  int64_t tokens = 0;
  double tok_per_s = 0;
  double ttft_p50 = 0, ttft_p99 = 0, tpot_p50 = 0, tpot_p99 = 0;
  double prompt_tokens_mean = -1, cached_tokens_mean = -1;
  bool usage_everywhere = true;  // every request reported usage (else tokens were counted)
  std::string first_error;
};

void usage_and_exit(const char* argv0, const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "%s: %s\n", argv0, why.c_str());
  std::fprintf(
      stderr,
      "usage: %s --url http://HOST:PORT [--clients 1,4,8,16] [--requests-per-client N]\n"
      "         [--max-tokens 128] [--prompt-tokens 64] [--shared-prefix 1000] [--api-key K]\n"
      "         [--model NAME] [--timeout SECONDS] [--seed N] [--json]\n",
      argv0);
  std::exit(2);
}

// "http://host:port[/prefix]" -> host, port, prefix; false when it is not such a URL.
bool parse_url(const std::string& url, Options& o) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return false;
  std::string rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    o.base_path = rest.substr(slash);
    while (!o.base_path.empty() && o.base_path.back() == '/') o.base_path.pop_back();
    rest = rest.substr(0, slash);
  }
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) {
    o.host = rest;
    o.port = 80;
  } else {
    o.host = rest.substr(0, colon);
    o.port = std::atoi(rest.c_str() + colon + 1);
  }
  return !o.host.empty() && o.port > 0 && o.port < 65536;
}

std::optional<int> parse_int(const std::string& s, int lo) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < lo || v > 1000000) return std::nullopt;
  return static_cast<int>(v);
}

Options parse_args(int argc, char** argv) {
  Options o;
  bool have_url = false;
  bool have_seed = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_and_exit(argv[0], a + " needs a value");
      return argv[++i];
    };
    auto number = [&](int lo) {
      const std::string v = value();
      const auto n = parse_int(v, lo);
      if (!n) usage_and_exit(argv[0], a + ": not a number >= " + std::to_string(lo) + ": " + v);
      return *n;
    };
    if (a == "--url") {
      if (!parse_url(value(), o)) usage_and_exit(argv[0], "--url: expected http://HOST:PORT");
      have_url = true;
    } else if (a == "--clients") {
      o.clients.clear();
      std::stringstream ss(value());
      for (std::string item; std::getline(ss, item, ',');) {
        const auto n = parse_int(item, 1);
        if (!n || *n > 1024) usage_and_exit(argv[0], "--clients: expected a list like 1,4,8,16");
        o.clients.push_back(*n);
      }
      if (o.clients.empty()) usage_and_exit(argv[0], "--clients: empty list");
    } else if (a == "--requests-per-client") {
      o.requests_per_client = number(1);
    } else if (a == "--max-tokens") {
      o.max_tokens = number(1);
    } else if (a == "--prompt-tokens") {
      o.prompt_tokens = number(1);
    } else if (a == "--shared-prefix") {
      o.shared_prefix = number(0);
    } else if (a == "--api-key") {
      o.api_key = value();
    } else if (a == "--model") {
      o.model = value();
    } else if (a == "--timeout") {
      o.timeout_s = number(1);
    } else if (a == "--seed") {
      o.seed = static_cast<uint64_t>(number(0));
      have_seed = true;
    } else if (a == "--json") {
      o.json_out = true;
    } else if (a == "-h" || a == "--help") {
      usage_and_exit(argv[0], "");
    } else {
      usage_and_exit(argv[0], "unknown argument " + a);
    }
  }
  if (!have_url) usage_and_exit(argv[0], "--url is required");
  if (!have_seed) {
    o.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) %
             1000000;
  }
  return o;
}

// ---- prompts ------------------------------------------------------------------------

// Deterministic text of `n_words` common short words drawn by a linear congruential
// generator (one token each in large vocabularies, two or three in the smallest: main()
// measures the ratio with its warm-up request).
std::string words(int n_words, uint64_t seed) {
  static const char* const kWords[] = {
      "the",  "cat",   "sat",  "on",    "a",     "mat",    "and",   "dog",  "ran",
      "to",   "park",  "with", "ball",  "sun",   "was",    "warm",  "bird", "sang",
      "in",   "tree",  "girl", "boy",   "saw",   "big",    "red",   "box",  "under",
      "old",  "house", "near", "river", "they",  "played", "all",   "day",  "then",
      "went", "home",  "for",  "food",  "happy", "little", "friend"};
  constexpr size_t kCount = sizeof kWords / sizeof kWords[0];
  std::string out;
  uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int i = 0; i < n_words; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    if (i) out += ' ';
    out += kWords[(x >> 33) % kCount];
  }
  return out;
}

// A prompt no other request shares beyond a token or two: its words are drawn from a
// seed that names the round, the client and the request.
std::string distinct_prompt(const Options& o, int n_words, int round, int client, int request) {
  const uint64_t seed = (o.seed << 44) ^ (static_cast<uint64_t>(round) << 32) ^
                        (static_cast<uint64_t>(client) << 16) ^ static_cast<uint64_t>(request);
  return words(n_words, seed) + " (story " + std::to_string(round) + "." + std::to_string(client) +
         "." + std::to_string(request) + ")";
}

// ---- one streaming request ------------------------------------------------------------

// Reads the SSE body as it arrives: one callback per complete `data:` payload.
class SseReader {
 public:
  template <typename F>
  void feed(const char* data, size_t n, F&& on_payload) {
    buf_.append(data, n);
    for (;;) {
      const size_t end = buf_.find("\n\n");
      if (end == std::string::npos) return;
      std::string frame = buf_.substr(0, end);
      buf_.erase(0, end + 2);
      std::stringstream lines(frame);
      for (std::string line; std::getline(lines, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.rfind("data:", 0) != 0) continue;
        size_t at = 5;
        while (at < line.size() && line[at] == ' ') ++at;
        on_payload(line.substr(at));
      }
    }
  }
  const std::string& rest() const { return buf_; }

 private:
  std::string buf_;
};

// The text of a /v1/completions chunk ("" when none).
std::string chunk_text(const json& j) {
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return "";
  const json& c = j["choices"][0];
  if (c.contains("text") && c["text"].is_string()) return c["text"].get<std::string>();
  return "";
}

// Token counts from a chunk: OpenAI `usage`, or llama-server's `timings`.
void read_usage(const json& j, Sample& s) {
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& u = j["usage"];
    s.usage_seen = true;
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number()) {
      s.tokens = u["completion_tokens"].get<int64_t>();
    }
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number())
      s.prompt_tokens = u["prompt_tokens"];
    if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object() &&
        u["prompt_tokens_details"].contains("cached_tokens") &&
        u["prompt_tokens_details"]["cached_tokens"].is_number()) {
      s.cached_tokens = u["prompt_tokens_details"]["cached_tokens"];
    }
  }
  if (j.contains("timings") && j["timings"].is_object()) {  // llama-server
    const json& t = j["timings"];
    if (s.cached_tokens < 0 && t.contains("cache_n") && t["cache_n"].is_number())
      s.cached_tokens = t["cache_n"];
    if (s.prompt_tokens < 0 && t.contains("prompt_n") && t["prompt_n"].is_number()) {
      s.prompt_tokens = t["prompt_n"].get<int64_t>() + std::max<int64_t>(s.cached_tokens, 0);
    }
  }
}

json request_body(const Options& o, const std::string& prompt) {
  json b = {{"prompt", prompt},
            {"max_tokens", o.max_tokens},
            {"temperature", 0.0},
            {"stream", true},
            {"stream_options", {{"include_usage", true}}},
            {"ignore_eos", true}};
  if (!o.model.empty()) b["model"] = o.model;
  return b;
}

Sample run_request(const Options& o, const std::string& prompt) {
  httplib::Client client(o.host, o.port);
  client.set_connection_timeout(std::chrono::seconds(10));
  client.set_read_timeout(std::chrono::seconds(o.timeout_s));
  client.set_write_timeout(std::chrono::seconds(30));
  httplib::Request req;
  req.method = "POST";
  req.path = o.base_path + "/v1/completions";
  req.body = request_body(o, prompt).dump();
  req.set_header("Content-Type", "application/json");
  if (!o.api_key.empty()) req.set_header("Authorization", "Bearer " + o.api_key);

  Sample s;
  SseReader sse;
  std::string error_body;
  int status = 0;
  Clock::time_point first, last;
  const Clock::time_point sent = Clock::now();
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status != 200) {
      error_body.append(data, std::min<size_t>(n, 2000));
      return true;
    }
    const Clock::time_point now = Clock::now();
    sse.feed(data, n, [&](const std::string& payload) {
      if (payload == "[DONE]") return;
      const json j = json::parse(payload, nullptr, false);
      if (j.is_discarded()) return;
      if (!chunk_text(j).empty()) {
        if (s.chunks++ == 0) first = now;
        last = now;
      }
      read_usage(j, s);
    });
    return true;
  };
  const auto res = client.send(req);
  if (!res) {
    s.error = "no response: " + httplib::to_string(res.error());
    return s;
  }
  if (status != 200) {
    s.error = "status " + std::to_string(status) + ": " + error_body.substr(0, 300);
    return s;
  }
  if (!s.usage_seen || s.tokens <= 0) s.tokens = s.chunks;
  if (s.chunks == 0) {
    s.error = "no content chunk";
    return s;
  }
  s.ok = true;
  s.ttft_ms = std::chrono::duration<double, std::milli>(first - sent).count();
  if (s.tokens > 1)
    s.tpot_ms =
        std::chrono::duration<double, std::milli>(last - first).count() / double(s.tokens - 1);
  return s;
}

// ---- rounds -----------------------------------------------------------------------

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // nearest rank: the smallest value with at least p% of the samples at or below it
  size_t rank = static_cast<size_t>(p / 100.0 * double(v.size()) + 0.999999);
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

Round summarize(const std::string& name, int clients, const std::vector<Sample>& samples,
                double wall_s) {
  Round r;
  r.name = name;
  r.clients = clients;
  r.requests = static_cast<int>(samples.size());
  r.wall_s = wall_s;
  std::vector<double> ttft, tpot;
  double prompt_sum = 0, cached_sum = 0;
  int prompt_n = 0, cached_n = 0;
  for (const Sample& s : samples) {
    if (!s.ok) {
      if (r.failed++ == 0) r.first_error = s.error;
      continue;
    }
    r.tokens += s.tokens;
    ttft.push_back(s.ttft_ms);
    if (s.tokens > 1) tpot.push_back(s.tpot_ms);
    if (!s.usage_seen) r.usage_everywhere = false;
    if (s.prompt_tokens >= 0) prompt_sum += double(s.prompt_tokens), ++prompt_n;
    if (s.cached_tokens >= 0) cached_sum += double(s.cached_tokens), ++cached_n;
  }
  r.tok_per_s = wall_s > 0 ? double(r.tokens) / wall_s : 0;
  r.ttft_p50 = percentile(ttft, 50);
  r.ttft_p99 = percentile(ttft, 99);
  r.tpot_p50 = percentile(tpot, 50);
  r.tpot_p99 = percentile(tpot, 99);
  if (prompt_n) r.prompt_tokens_mean = prompt_sum / prompt_n;
  if (cached_n) r.cached_tokens_mean = cached_sum / cached_n;
  return r;
}

// Runs `clients` threads; client c sends requests_per_client prompts made by prompt(c, k).
template <typename PromptFn>
Round run_round(const Options& o, const std::string& name, int clients, PromptFn prompt) {
  std::vector<Sample> samples(static_cast<size_t>(clients) * size_t(o.requests_per_client));
  std::vector<std::thread> threads;
  const Clock::time_point start = Clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      for (int k = 0; k < o.requests_per_client; ++k) {
        samples[size_t(c) * size_t(o.requests_per_client) + size_t(k)] =
            run_request(o, prompt(c, k));
      }
    });
  }
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  return summarize(name, clients, samples, wall);
}

// ---- output -----------------------------------------------------------------------

void print_header() {
  std::printf("%-8s %8s %9s %10s %10s %10s %10s %10s %9s %9s\n", "case", "clients", "requests",
              "tok/s", "ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "prompt", "cached");
  std::printf("%-8s %8s %9s %10s %10s %10s %10s %10s %9s %9s\n", "", "", "(failed)", "(all)", "ms",
              "ms", "ms", "ms", "tokens", "tokens");
}

void print_row(const Round& r) {
  char req[32], prompt[32], cached[32];
  std::snprintf(req, sizeof req, "%d(%d)", r.requests, r.failed);
  std::snprintf(prompt, sizeof prompt, r.prompt_tokens_mean < 0 ? "-" : "%.0f",
                r.prompt_tokens_mean);
  std::snprintf(cached, sizeof cached, r.cached_tokens_mean < 0 ? "-" : "%.0f",
                r.cached_tokens_mean);
  std::printf("%-8s %8d %9s %10.1f %10.1f %10.1f %10.2f %10.2f %9s %9s\n", r.name.c_str(),
              r.clients, req, r.tok_per_s, r.ttft_p50, r.ttft_p99, r.tpot_p50, r.tpot_p99, prompt,
              cached);
  if (r.failed) std::printf("         first error: %s\n", r.first_error.c_str());
  std::fflush(stdout);
}

json round_json(const Round& r) {
  return {{"case", r.name},
          {"clients", r.clients},
          {"requests", r.requests},
          {"failed", r.failed},
          {"wall_s", r.wall_s},
          {"tokens", r.tokens},
          {"tok_per_s", r.tok_per_s},
          {"ttft_ms_p50", r.ttft_p50},
          {"ttft_ms_p99", r.ttft_p99},
          {"tpot_ms_p50", r.tpot_p50},
          {"tpot_ms_p99", r.tpot_p99},
          {"prompt_tokens_mean", r.prompt_tokens_mean},
          {"cached_tokens_mean", r.cached_tokens_mean},
          {"usage_reported", r.usage_everywhere},
          {"first_error", r.first_error}};
}

// The warm-up: one short request checks that the server answers, and its prompt_tokens
// tells how many tokens a word of words() takes (1 when the server does not say).
double tokens_per_word(const Options& o) {
  constexpr int kWords = 20;
  Options warm = o;
  warm.max_tokens = 2;
  const Sample s = run_request(warm, words(kWords, 999));
  if (!s.ok) {
    std::fprintf(stderr, "tessera_serve_load: warm-up request to %s:%d failed: %s\n",
                 o.host.c_str(), o.port, s.error.c_str());
    std::exit(1);
  }
  // One token for BOS, if any: the ratio is an estimate anyway.
  return s.prompt_tokens > kWords / 2 ? double(s.prompt_tokens - 1) / kWords : 1.0;
}

int words_for(int tokens, double per_word) {
  return std::max(1, static_cast<int>(tokens / per_word + 0.5));
}

// The shared-prefix case: one cold request, then the largest client count, all prompts
// beginning with the same text.
void run_shared(const Options& o, double per_word, std::vector<Round>& rounds) {
  // Its first words come from the run's seed: nothing of it is cached before the cold request.
  const std::string prefix = words(3, o.seed) + ". You are a storyteller. " +
                             words(words_for(o.shared_prefix, per_word), 4242) + "\n";
  // The first request computes the prefix (cold); the round then may reuse it.
  Options one = o;
  one.requests_per_client = 1;
  rounds.push_back(
      run_round(one, "cold", 1, [&](int, int) { return prefix + "Question 0: tell a story."; }));
  if (!o.json_out) print_row(rounds.back());
  const int clients = *std::max_element(o.clients.begin(), o.clients.end());
  rounds.push_back(run_round(o, "shared", clients, [&](int c, int k) {
    return prefix + "Question " + std::to_string(1 + c * o.requests_per_client + k) + ": " +
           words(12, 7000 + uint64_t(c) * 100 + uint64_t(k));
  }));
  if (!o.json_out) print_row(rounds.back());
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  const double per_word = tokens_per_word(o);
  if (!o.json_out) {
    std::printf(
        "server %s:%d, %d requests per client, max_tokens %d, prompt ~%d tokens (%.2f tokens a "
        "word), "
        "seed %llu\n",
        o.host.c_str(), o.port, o.requests_per_client, o.max_tokens, o.prompt_tokens, per_word,
        static_cast<unsigned long long>(o.seed));
    print_header();
  }
  std::vector<Round> rounds;
  for (size_t i = 0; i < o.clients.size(); ++i) {
    const int round_id = static_cast<int>(i);
    const int n_words = words_for(o.prompt_tokens, per_word);
    rounds.push_back(run_round(o, "distinct", o.clients[i], [&](int c, int k) {
      return distinct_prompt(o, n_words, round_id, c, k);
    }));
    if (!o.json_out) print_row(rounds.back());
  }
  if (o.shared_prefix > 0) run_shared(o, per_word, rounds);
  int failed = 0;
  for (const Round& r : rounds) failed += r.failed;
  if (o.json_out) {
    json out = {{"server", o.host + ":" + std::to_string(o.port)},
                {"requests_per_client", o.requests_per_client},
                {"max_tokens", o.max_tokens},
                {"prompt_tokens", o.prompt_tokens},
                {"shared_prefix", o.shared_prefix},
                {"tokens_per_word", per_word},
                {"seed", o.seed},
                {"rounds", json::array()}};
    for (const Round& r : rounds) out["rounds"].push_back(round_json(r));
    std::printf("%s\n", out.dump(2).c_str());
  }
  return failed ? 1 : 0;
}
