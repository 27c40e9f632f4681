// `tessera serve` under a bounded load: 16 client threads send 400 requests in all to a
// server with 4 slots. 380 are good (streaming and plain, /v1/completions and
// /v1/chat/completions, `ignore_eos` so each must return exactly `max_tokens` tokens);
// 20 (5%) are bad or odd: broken JSON, wrong types, a `max_tokens` beyond the context,
// unknown fields beside valid ones (these must succeed), a body cut in half, a client
// that hangs up mid-stream. Each bad one must get a 4xx JSON error (the cut ones get
// nothing), the server must survive (GET /health after, SIGTERM exits 0), and its RSS
// after all 400 must stay within 10% (see kRssAfter) of its RSS after the
// first 50 (not under AddressSanitizer: see kAddressSanitizer).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/server_process.h"
#include "common/test_util.h"

namespace tessera {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr int kClients = 16;
constexpr int kRequests = 400;
constexpr int kBadEvery = 20;  // request i is a bad one when i % kBadEvery == kBadEvery / 2
constexpr int kRssAfter = 50;  // the first RSS sample, after this many requests ended
// RSS may grow by 10% and no more. The server runs with --max-queue 16 (all this test
// needs), so its HTTP library has 4 + 16 + 8 = 28 worker threads; they take connections
// in turn, so all 28 have run (their stacks touched, their malloc arenas made) within the
// first 50 requests. With the default queue of 64 there are 76 workers, and the ones not
// yet used by request 50 add ~70 KiB each later (+11% measured): first touches, not leaks.

// Under AddressSanitizer RSS says nothing about leaks: freed memory waits in ASan's
// quarantine (256 MiB by default) and its allocator never returns pages, so RSS climbs
// for the whole test (measured: 137 MiB after 50 requests, 359 MiB after 400). There the
// bound is not checked; LeakSanitizer checks the server's heap when it exits instead
// (stop() must return 0, and ASAN_OPTIONS=detect_leaks=1 makes a leak a non-zero exit).
// (TESSERA_SANITIZED_BUILD: the sanitizer build, whose test code itself is not instrumented.)
#if defined(TESSERA_SANITIZED_BUILD) || defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// What one exchange brought back.
struct Reply {
  int status = -1;  // -1: no response (connection error)
  std::string body;
  std::string error;  // httplib's error, when no response
};

httplib::Headers json_headers() { return {{"Accept", "application/json, text/event-stream"}}; }

void set_timeouts(httplib::Client& c) {
  c.set_connection_timeout(std::chrono::seconds(10));
  c.set_read_timeout(std::chrono::seconds(120));  // sanitizer builds under load are slow
  c.set_write_timeout(std::chrono::seconds(10));
  c.set_keep_alive(false);
}

// POSTs `body` as JSON. `on_data` (optional) sees each piece of the response body and may
// return false to hang up.
Reply post(int port, const std::string& path, const std::string& body,
           std::function<bool(const std::string&)> on_data = nullptr) {
  httplib::Client c("127.0.0.1", port);
  set_timeouts(c);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = json_headers();
  req.body = body;
  req.set_header("Content-Type", "application/json");
  Reply r;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    r.body.append(data, n);
    return on_data ? on_data(r.body) : true;
  };
  auto res = c.send(req);
  if (res) {
    r.status = res->status;
  } else {
    r.error = httplib::to_string(res.error());
  }
  return r;
}

// The JSON payloads of an SSE body: each `data: X` event; `done` is set by `[DONE]`.
struct SseParse {
  std::vector<json> events;
  bool done = false;
  bool after_done = false;  // an event followed [DONE]
  std::string problem;      // a data line that is not JSON, or a malformed frame
};

SseParse parse_sse(const std::string& body) {
  SseParse p;
  size_t at = 0;
  while (at < body.size()) {
    size_t end = body.find("\n\n", at);
    if (end == std::string::npos) {
      if (body.find_first_not_of("\r\n ", at) != std::string::npos)
        p.problem = "unterminated frame";
      break;
    }
    std::string frame = body.substr(at, end - at);
    at = end + 2;
    if (!frame.empty() && frame.back() == '\r') frame.pop_back();
    if (frame.empty() || frame[0] == ':') continue;  // keep-alive comment
    if (frame.rfind("data: ", 0) != 0) {
      p.problem = "frame without 'data: ': " + frame;
      continue;
    }
    const std::string data = frame.substr(6);
    if (p.done) p.after_done = true;
    if (data == "[DONE]") {
      p.done = true;
      continue;
    }
    json j = json::parse(data, nullptr, false);
    if (j.is_discarded()) {
      p.problem = "not JSON: " + data;
    } else {
      p.events.push_back(std::move(j));
    }
  }
  return p;
}

// The text a streamed chunk carries ("" when none).
std::string chunk_text(const json& chunk, bool chat) {
  if (!chunk.contains("choices") || !chunk["choices"].is_array() || chunk["choices"].empty())
    return "";
  const json& c = chunk["choices"][0];
  const json* t = nullptr;
  if (chat) {
    if (c.contains("delta") && c["delta"].is_object() && c["delta"].contains("content"))
      t = &c["delta"]["content"];
  } else if (c.contains("text")) {
    t = &c["text"];
  }
  return t && t->is_string() ? t->get<std::string>() : "";
}

// The tokens a streamed chunk's logprobs list: completions `logprobs.tokens`, chat
// `logprobs.content`.
size_t chunk_logprob_tokens(const json& chunk, bool chat) {
  if (!chunk.contains("choices") || !chunk["choices"].is_array() || chunk["choices"].empty())
    return 0;
  const json& c = chunk["choices"][0];
  if (!c.contains("logprobs") || !c["logprobs"].is_object()) return 0;
  const json& lp = c["logprobs"];
  const char* key = chat ? "content" : "tokens";
  return lp.contains(key) && lp[key].is_array() ? lp[key].size() : 0;
}

// A good request: what was sent and what must come back.
struct GoodSpec {
  bool chat = false;
  bool stream = true;
  bool include_usage = true;
  int max_tokens = 8;
  double temperature = 0.0;
  bool logprobs = false;  // each token then comes with its own logprob entry in the stream
  bool unknown_fields = false;
};

json good_body(const GoodSpec& s, int i) {
  json b;
  if (s.chat) {
    b["messages"] =
        json::array({{{"role", "user"}, {"content", "Tell me about cat " + std::to_string(i)}}});
  } else {
    b["prompt"] = "Once upon a time, a girl number " + std::to_string(i % 37);
  }
  b["max_tokens"] = s.max_tokens;
  b["temperature"] = s.temperature;
  b["seed"] = i;
  b["ignore_eos"] = true;
  if (s.logprobs) {
    if (s.chat) {
      b["logprobs"] = true;
    } else {
      b["logprobs"] = 0;  // the sampled token's logprob only
    }
  }
  if (s.stream) {
    b["stream"] = true;
    if (s.include_usage) b["stream_options"] = {{"include_usage", true}};
  }
  if (s.unknown_fields) {
    b["frobnicate"] = {{"level", 3}, {"list", {1, 2, 3}}};
    b["x_client_tag"] = "load-test";
    b["user"] = "tester";
  }
  return b;
}

// Checks a good request's reply; "" when right, else what was wrong.
std::string check_good(const GoodSpec& s, const Reply& r) {
  if (r.status != 200) return "status " + std::to_string(r.status) + " " + r.error + ": " + r.body;
  const std::string where = std::string(s.chat ? "chat" : "completion") +
                            (s.stream ? " stream" : "") +
                            " max_tokens=" + std::to_string(s.max_tokens) + ": ";
  json usage;
  if (s.stream) {
    const SseParse p = parse_sse(r.body);
    if (!p.problem.empty()) return where + p.problem;
    if (!p.done) return where + "no data: [DONE]";
    if (p.after_done) return where + "events after [DONE]";
    int content_chunks = 0;
    size_t logprob_tokens = 0;
    std::string text;
    for (const json& e : p.events) {
      const std::string t = chunk_text(e, s.chat);
      if (!t.empty()) ++content_chunks;
      text += t;
      logprob_tokens += chunk_logprob_tokens(e, s.chat);
      if (e.contains("usage") && e["usage"].is_object()) usage = e["usage"];
    }
    if (text.empty()) return where + "no text";
    // A token's text may be empty (this model generates BOS, "<s>", which renders as
    // nothing) or held back (a partial UTF-8 character, or a possible stop string), so
    // there may be fewer content chunks than tokens, never more. With logprobs, every
    // token is listed in the chunk that releases its text: exactly max_tokens entries.
    if (content_chunks > s.max_tokens)
      return where + std::to_string(content_chunks) + " content chunks";
    if (s.logprobs && logprob_tokens != size_t(s.max_tokens)) {
      return where + std::to_string(logprob_tokens) + " tokens in the chunks' logprobs";
    }
    if (!s.include_usage) return "";
    if (usage.is_null()) return where + "no usage chunk";
  } else {
    const json j = json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j.contains("choices") || !j["choices"].is_array() ||
        j["choices"].empty()) {
      return where + "bad body: " + r.body;
    }
    const json& c = j["choices"][0];
    if (c.value("finish_reason", json()) != "length") return where + "finish_reason " + c.dump();
    usage = j.value("usage", json());
  }
  if (!usage.is_object() || !usage.contains("completion_tokens"))
    return where + "no usage: " + r.body;
  if (usage["completion_tokens"] != s.max_tokens) return where + "usage " + usage.dump();
  if (!usage.contains("prompt_tokens") || !usage["prompt_tokens"].is_number_integer() ||
      usage["prompt_tokens"].get<int>() <= 0) {
    return where + "usage " + usage.dump();
  }
  return "";
}

// Checks a 4xx error reply: "" when right.
std::string check_error(const Reply& r) {
  if (r.status < 400 || r.status >= 500) {
    return "status " + std::to_string(r.status) + " " + r.error + ": " + r.body.substr(0, 300);
  }
  const json j = json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.contains("error") || !j["error"].is_object())
    return "not a JSON error: " + r.body;
  const json& e = j["error"];
  if (!e.contains("message") || !e["message"].is_string() ||
      e["message"].get<std::string>().empty()) {
    return "error without message: " + r.body;
  }
  if (!e.contains("type") || !e["type"].is_string()) return "error without type: " + r.body;
  return "";
}

// Sends a request head that promises 200 bytes and half a body, then closes.
void send_half_body(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string req =
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 200\r\n\r\n{\"prompt\": \"Once upon a time\", \"max_tok";
    (void)!::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    std::this_thread::sleep_for(milliseconds(20));
  }
  ::close(fd);
}

// The bad (or odd) request number k (0 .. 19); "" when it went as it must.
/// A 200 whose one choice ran until its sequence was full ("length", docs/server.md).
std::string check_fills_the_context(const Reply& r) {
  const json j = json::parse(r.body, nullptr, false);
  if (r.status != 200 || j.is_discarded() || !j.contains("choices") || j["choices"].size() != 1) {
    return "status " + std::to_string(r.status) + " " + r.error + ": " + r.body.substr(0, 300);
  }
  if (j["choices"][0]["finish_reason"] != "length") return "not cut by the context: " + r.body.substr(0, 300);
  return "";
}

std::string run_bad(int port, int k) {
  switch (k % 8) {
    case 0:  // broken JSON
      return check_error(post(port, "/v1/completions", "{\"prompt\": \"Once\", \"max_tokens\": 8"));
    case 1:  // max_tokens of the wrong type
      return check_error(
          post(port, "/v1/completions", R"({"prompt": "Once", "max_tokens": "ten"})"));
    case 2:  // far beyond the context: generates until the sequence is full, as llama-server
      return check_fills_the_context(
          post(port, "/v1/completions",
               R"({"prompt": "Once", "max_tokens": 100000000, "ignore_eos": true})"));
    case 3:  // messages must be an array
      return check_error(
          post(port, "/v1/chat/completions", R"({"messages": "hello", "max_tokens": 8})"));
    case 4: {  // unknown fields beside valid ones: ignored, the request succeeds
      GoodSpec s;
      s.chat = (k / 8) % 2 == 1;
      s.max_tokens = 8;
      s.unknown_fields = true;
      const std::string path = s.chat ? "/v1/chat/completions" : "/v1/completions";
      return check_good(s, post(port, path, good_body(s, 1000 + k).dump()));
    }
    case 5:  // half a body, then the connection closes
      send_half_body(port);
      return "";
    case 6: {  // hangs up after the first streamed bytes of a long generation
      GoodSpec s;
      s.max_tokens = 64;
      post(port, "/v1/completions", good_body(s, 2000 + k).dump(),
           [](const std::string&) { return false; });
      return "";
    }
    default:  // prompt of the wrong type
      return check_error(
          post(port, "/v1/completions", R"({"prompt": {"text": "Once"}, "max_tokens": 8})"));
  }
}

GoodSpec good_spec(int i) {
  GoodSpec s;
  s.max_tokens = 8 + i % 9;  // 8 .. 16
  switch (i % 5) {
    case 0:
      break;  // streaming completion with usage
    case 1:
      s.logprobs = true;  // the same, with logprobs: usage and chunks both counted
      break;
    case 2:
      s.chat = true;  // streaming chat with usage
      break;
    case 3:  // streaming without usage: tokens counted through the chunks' logprobs
      s.include_usage = false;
      s.logprobs = true;
      s.chat = (i / 5) % 2 == 1;
      break;
    default:  // not streamed, completion or chat
      s.stream = false;
      s.chat = (i / 5) % 2 == 1;
      break;
  }
  // A few sampled (not greedy) ones: their token count is checked through usage only.
  if (i % 7 == 0 && s.include_usage) s.temperature = 0.8;
  return s;
}

TEST(ServerLoad, SurvivesConcurrentGoodAndBadRequests) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  std::string error;
  auto server = test::ServerProcess::start({"-m", model, "-np", "4", "-t", "1", "--max-queue", "16"}, &error);
  ASSERT_TRUE(server) << error;
  const int port = server->port();
  const auto t0 = SteadyClock::now();

  std::atomic<int> next{0}, ended{0};
  std::atomic<long> rss_first{-1};
  std::mutex mu;
  std::vector<std::string> failures;  // guarded by mu
  int good = 0, bad = 0;              // guarded by mu
  auto worker = [&] {
    for (int i = next++; i < kRequests; i = next++) {
      std::string problem;
      const bool is_bad = i % kBadEvery == kBadEvery / 2;
      if (is_bad) {
        problem = run_bad(port, i / kBadEvery);
      } else {
        const GoodSpec s = good_spec(i);
        const std::string path = s.chat ? "/v1/chat/completions" : "/v1/completions";
        problem = check_good(s, post(port, path, good_body(s, i).dump()));
      }
      if (++ended == kRssAfter) rss_first = server->rss_kib();
      std::lock_guard<std::mutex> lock(mu);
      (is_bad ? bad : good)++;
      if (!problem.empty()) failures.push_back("request " + std::to_string(i) + ": " + problem);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  const long rss_last = server->rss_kib();
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();

  EXPECT_EQ(good + bad, kRequests);
  EXPECT_EQ(bad, kRequests / kBadEvery);
  for (size_t f = 0; f < failures.size() && f < 20; ++f) ADD_FAILURE() << failures[f];
  if (!failures.empty()) {
    const std::string log = server->log();
    ADD_FAILURE() << failures.size() << " requests went wrong; the server's output (its end):\n"
                  << log.substr(log.size() > 30000 ? log.size() - 30000 : 0);
  }

  EXPECT_EQ(test::ServerProcess::http_get_status(port, "/health", std::chrono::seconds(10)), 200);
  const GoodSpec after;  // one more good request after it all
  EXPECT_EQ(check_good(after, post(port, "/v1/completions", good_body(after, 7).dump())), "");

  ASSERT_GT(rss_first.load(), 0);
  ASSERT_GT(rss_last, 0);
  std::printf(
      "[ load     ] %d requests from %d clients in %.1f s; RSS %ld KiB after %d, %ld KiB after "
      "all\n",
      kRequests, kClients, seconds, rss_first.load(), kRssAfter, rss_last);
  if (!kAddressSanitizer) {
    EXPECT_LE(rss_last, rss_first.load() + rss_first.load() / 10)
        << "RSS grew from " << rss_first.load() << " KiB to " << rss_last << " KiB";
  }

  EXPECT_EQ(server->stop(), 0) << server->log().substr(0, 20000);
}

}  // namespace
}  // namespace tessera
