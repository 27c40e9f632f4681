// tessera_serve_soak: a bounded soak of a running `tessera serve` over loopback (issue
// 30): N clients for M minutes, a share of them malformed (garbage, impossible lengths,
// bodies past the limit, bad JSON, trickled headers) and a share leaving in the middle
// of a request; the rest chat, complete (streamed or not), tokenize and embed. It
// watches the server's process: it must stay up, answer no 5xx, and its resident memory
// after the warm-up must not grow by 5% or more. scripts/serve_soak.sh starts the
// server and runs it; bench/serve_soak/README.md has the figures.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/raw_http.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using tessera::test::RawSocket;

struct Options {
  int port = 0;
  int pid = 0;
  double minutes = 30;
  int clients = 64;
  double malformed = 0.10;
  double disconnects = 0.10;
  unsigned seed = 1;
};

struct Tally {
  std::mutex mu;
  std::map<int, long> statuses;  // -1: no complete answer (expected for the malformed and the leavers)
  std::map<std::string, long> kinds;
  long five_xx = 0;
  std::string first_5xx;

  void add(const std::string& kind, int status, const std::string& reply) {
    std::lock_guard<std::mutex> lock(mu);
    ++statuses[status];
    ++kinds[kind];
    if (status >= 500) {
      if (five_xx++ == 0) first_5xx = kind + ": " + reply.substr(0, 400);
    }
  }
};

long rss_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

std::string post(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

/// The well-formed requests, by kind.
std::pair<std::string, std::string> valid_request(std::mt19937& rng) {
  // Prompt and answer fit the 128 cells a slot of stories260K gets with -np 8.
  const int words = int(rng() % 3);
  std::string text = "Once upon a time";
  for (int i = 0; i < words; ++i) text += " there was a dog " + std::to_string(rng() % 100);
  const int max_tokens = 1 + int(rng() % 24);
  switch (rng() % 6) {
    case 0:
      return {"chat", post("/v1/chat/completions", R"({"messages":[{"role":"user","content":")" + text +
                                                       R"("}],"max_tokens":)" + std::to_string(max_tokens) + "}")};
    case 1:
      return {"completion-stream", post("/v1/completions", R"({"prompt":")" + text + R"(","stream":true,"max_tokens":)" +
                                                             std::to_string(max_tokens) + "}")};
    case 2:
      return {"llama-completion", post("/completion", R"({"prompt":")" + text + R"(","n_predict":)" +
                                                         std::to_string(max_tokens) + "}")};
    case 3: return {"tokenize", post("/tokenize", R"({"content":")" + text + R"("})")};
    case 4: return {"embeddings", post("/v1/embeddings", R"({"input":[")" + text + R"(","a b c"]})")};
    default: return {"health", "GET /health HTTP/1.1\r\nHost: soak\r\n\r\n"};
  }
}

/// The malformed ones: each must get a 4xx (or be closed), never a 5xx.
std::pair<std::string, std::string> malformed_request(std::mt19937& rng) {
  switch (rng() % 7) {
    case 0: {
      std::string junk(1 + rng() % 2000, ' ');
      for (char& c : junk) c = char(rng() % 256);
      return {"garbage", junk + "\r\n\r\n"};
    }
    case 1: return {"bad-length", "POST /v1/completions HTTP/1.1\r\nHost: soak\r\nContent-Length: -7\r\n\r\n"};
    case 2: return {"bad-chunk", "POST /completion HTTP/1.1\r\nHost: soak\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"};
    case 3: return {"bad-json", post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"})")};
    case 4: return {"wrong-types", post("/v1/completions", R"({"prompt":12,"max_tokens":"many","stop":{}})")};
    case 5: return {"too-large", "POST /v1/embeddings HTTP/1.1\r\nHost: soak\r\nContent-Length: 999999999\r\n\r\n"};
    default: {
      std::string head = "GET /health HTTP/1.1\r\n";
      for (int i = 0; i < 300; ++i) head += "X-" + std::to_string(i) + ": v\r\n";
      return {"many-headers", head + "\r\n"};
    }
  }
}

void client(const Options& o, Clock::time_point end, unsigned seed, Tally& tally) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  while (Clock::now() < end) {
    const double roll = u(rng);
    auto s = RawSocket::connect(o.port);
    if (!s) {
      tally.add("connect-failed", -2, "");
      std::this_thread::sleep_for(milliseconds(10));
      continue;
    }
    if (roll < o.malformed) {
      const auto [kind, bytes] = malformed_request(rng);
      (void)s->send(bytes);
      const std::string reply = s->read_until_close(milliseconds(15000));
      tally.add(kind, tessera::test::final_status(reply), reply);
    } else if (roll < o.malformed + o.disconnects) {
      auto [kind, bytes] = valid_request(rng);
      const size_t cut = rng() % 2 ? bytes.size() / 2 : bytes.size();  // mid-body, or after it
      (void)s->send(std::string_view(bytes).substr(0, cut));
      std::this_thread::sleep_for(milliseconds(rng() % 50));
      tally.add("leave-" + kind, -1, "");  // the socket closes here
    } else {
      const auto [kind, bytes] = valid_request(rng);
      (void)s->send(bytes);
      const std::string reply = s->read_responses(1, milliseconds(60000));
      tally.add(kind, tessera::test::final_status(reply), reply);
    }
  }
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--port") o.port = std::atoi(v);
    else if (k == "--pid") o.pid = std::atoi(v);
    else if (k == "--minutes") o.minutes = std::atof(v);
    else if (k == "--clients") o.clients = std::atoi(v);
    else if (k == "--malformed") o.malformed = std::atof(v);
    else if (k == "--disconnects") o.disconnects = std::atof(v);
    else if (k == "--seed") o.seed = unsigned(std::atol(v));
    else return false;
  }
  return o.port > 0 && o.pid > 0 && o.clients > 0 && o.minutes > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (argc % 2 == 0 || !parse(argc, argv, o)) {
    std::fprintf(stderr, "usage: tessera_serve_soak --port P --pid SERVER_PID [--minutes 30] [--clients 64] "
                         "[--malformed 0.1] [--disconnects 0.1] [--seed 1]\n");
    return 2;
  }
  tessera::test::raise_open_files(size_t(o.clients) * 4 + 64);
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.minutes * 60));
  const auto warm = start + (end - start) / 5;  // the first fifth warms up (caches, pools)
  Tally tally;
  std::vector<std::thread> threads;
  for (int i = 0; i < o.clients; ++i) threads.emplace_back(client, std::cref(o), end, o.seed * 1000 + unsigned(i), std::ref(tally));
  long warm_rss = -1, last_rss = -1, peak_rss = -1;
  bool alive = true;
  while (Clock::now() < end && alive) {
    std::this_thread::sleep_for(milliseconds(1000));
    alive = ::kill(o.pid, 0) == 0 && rss_kib(o.pid) > 0;
    last_rss = rss_kib(o.pid);
    peak_rss = std::max(peak_rss, last_rss);
    if (warm_rss < 0 && Clock::now() >= warm) warm_rss = last_rss;
  }
  for (std::thread& t : threads) t.join();
  long total = 0;
  std::printf("tessera_serve_soak: %d clients, %.1f min, malformed %.0f%%, disconnects %.0f%%\n", o.clients, o.minutes,
              o.malformed * 100, o.disconnects * 100);
  for (const auto& [status, n] : tally.statuses) {
    std::printf("  status %4d: %ld\n", status, n);
    total += n;
  }
  for (const auto& [kind, n] : tally.kinds) std::printf("  %-22s %ld\n", kind.c_str(), n);
  const double growth = warm_rss > 0 ? 100.0 * double(last_rss - warm_rss) / double(warm_rss) : 0;
  std::printf("  requests %ld, 5xx %ld, server alive %s, RSS after warm-up %ld KiB, at the end %ld KiB (%+.2f%%), "
              "peak %ld KiB\n",
              total, tally.five_xx, alive ? "yes" : "NO", warm_rss, last_rss, growth, peak_rss);
  if (tally.five_xx) std::printf("  first 5xx: %s\n", tally.first_5xx.c_str());
  const bool ok = alive && tally.five_xx == 0 && warm_rss > 0 && growth < 5.0;
  std::printf("%s\n", ok ? "soak: passed" : "soak: FAILED");
  return ok ? 0 : 1;
}
