// `tessera serve` as a hostile or unusual client meets it (issue 30, items 1-7): raw
// sockets that send bodies past --max-body, trickle their headers, send impossible
// lengths, pipeline, half-close, send too many headers or too many connections, big
// embedding batches, a grammar past the parser's limit, a detokenize without tokens; the
// server answers each at once with the right status and keeps serving everyone else
// (docs/server.md, "The transport" and "Errors").
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/raw_http.h"
#include "common/server_process.h"
#include "common/test_util.h"

namespace tessera {
namespace {

using nlohmann::json;
using test::RawSocket;
using test::ServerProcess;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::unique_ptr<ServerProcess> serve(const std::string& model, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"-m", model, "-t", "1", "-np", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::string error;
  auto s = ServerProcess::start(args, &error);
  EXPECT_TRUE(s) << error;
  return s;
}

std::string post(const std::string& path, const std::string& body, const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + extra_headers + "\r\n" + body;
}

/// The server still answers a plain request from another client.
void expect_serving(const ServerProcess& server) {
  EXPECT_EQ(ServerProcess::http_get_status(server.port(), "/health", milliseconds(5000)), 200);
}

// Item 1: a chunked body is held to --max-body as it arrives, like a Content-Length one.
TEST(ServerTransport, ChunkedBodyPastMaxBodyIs413AsSoonAsItPasses) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = serve(model, {"--max-body", "1048576"});
  ASSERT_TRUE(server);
  auto s = RawSocket::connect(server->port());
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->send("POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n"));
  const std::string piece(65536, 'x');
  const std::string chunk = "10000\r\n" + piece + "\r\n";
  size_t sent = 0;
  while (sent < (size_t{32} << 20) && !s->readable(milliseconds(0)) && s->send(chunk)) sent += piece.size();
  const std::string reply = s->read_until_close(milliseconds(10000));
  EXPECT_EQ(test::final_status(reply), 413) << reply.substr(0, 300);
  EXPECT_NE(reply.find("payload_too_large"), std::string::npos);
  EXPECT_LT(sent, size_t{16} << 20) << "the server kept reading past the limit";
  expect_serving(*server);
  EXPECT_EQ(server->stop(), 0) << server->log();
}

// Item 2: headers get one deadline in total, however slowly their bytes come.
TEST(ServerTransport, TrickledHeadersGet408AtTheirDeadline) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = serve(model, {"--header-timeout", "1"});
  ASSERT_TRUE(server);
  auto s = RawSocket::connect(server->port());
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->send("GET /health HTTP/1.1\r\nX-Slow: "));
  bool answered = false;
  for (int i = 0; i < 60 && !answered; ++i) {  // a byte every 100 ms for up to 6 s
    answered = s->readable(milliseconds(100)) || !s->send("a");
  }
  ASSERT_TRUE(answered) << "no answer while the headers trickled for 6 s";
  const std::string reply = s->read_until_close(milliseconds(5000));
  EXPECT_EQ(test::final_status(reply), 408) << reply;
  expect_serving(*server);
  EXPECT_EQ(server->stop(), 0) << server->log();
}

// Item 2: lengths that can never be read are answered at once, not after a read timeout.
TEST(ServerTransport, ImpossibleLengthsAreAnsweredAtOnce) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = serve(model);
  ASSERT_TRUE(server);
  const std::vector<std::pair<std::string, int>> cases = {
      {"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 9437184\r\n\r\n", 413},  // past 8 MiB
      {"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n-13\r\n", 400},
      {"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400},
      {"GARBAGE\r\n\r\n", 400},
  };
  for (const auto& [request, status] : cases) {
    auto s = RawSocket::connect(server->port());
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->send(request));
    // 3 s is far below the 30 s read timeout the old transport waited out.
    const std::string reply = s->read_until_close(milliseconds(3000));
    EXPECT_EQ(test::final_status(reply), status) << request << "\n" << reply;
  }
  expect_serving(*server);
  EXPECT_EQ(server->stop(), 0) << server->log();
}

// Item 2 and the acceptance: 1,000 connections trickling their headers (250 from each of
// four addresses) hold no thread: /health and a chat from another address are answered
// within a 1 s read timeout, and the trickling connections are all still open.
TEST(ServerTransport, AThousandTricklingConnectionsDoNotStopTheServer) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  if (!test::raise_open_files(1200)) GTEST_SKIP() << "needs 1200 open files (ulimit -n)";
  auto server = serve(model);
  ASSERT_TRUE(server);
  std::vector<std::unique_ptr<RawSocket>> slow;
  for (int i = 0; i < 1000; ++i) {
    auto s = RawSocket::connect(server->port(), "127.0.0." + std::to_string(2 + i % 4));
    ASSERT_TRUE(s) << "connection " << i;
    ASSERT_TRUE(s->send("POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nX-Slow: "));
    slow.push_back(std::move(s));
  }
  httplib::Client cli("127.0.0.1", server->port());
  cli.set_connection_timeout(1, 0);
  cli.set_read_timeout(1, 0);
  const json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 8}};
  for (int round = 0; round < 3; ++round) {
    for (auto& s : slow) ASSERT_TRUE(s->send("a"));  // one more byte each
    const auto t0 = Clock::now();
    auto health = cli.Get("/health");
    ASSERT_TRUE(health) << "no /health answer within 1 s, round " << round;
    EXPECT_EQ(health->status, 200);
    auto reply = cli.Post("/v1/chat/completions", chat.dump(), "application/json");
    ASSERT_TRUE(reply) << "no chat answer within 1 s, round " << round;
    EXPECT_EQ(reply->status, 200) << reply->body;
    std::printf("round %d: /health + chat answered in %.1f ms\n", round,
                std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  int open = 0;
  for (auto& s : slow) open += s->readable(milliseconds(0)) ? 0 : 1;
  EXPECT_EQ(open, 1000) << "the server dropped trickling connections before their deadline";
  slow.clear();
  EXPECT_EQ(server->stop(), 0) << server->log();
}

// Item 3: requests pipelined in one write are all answered, in order.
TEST(ServerTransport, PipelinedRequestsAreAnsweredInOrder) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = serve(model);
  ASSERT_TRUE(server);
  auto s = RawSocket::connect(server->port());
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n" + post("/tokenize", R"({"content":"Once upon"})") +
                      "GET /v1/models HTTP/1.1\r\nHost: t\r\n\r\n" +
                      post("/v1/completions", R"({"prompt":"Once","max_tokens":4})") +
                      "GET /props HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  const std::vector<test::RawResponse> r = test::parse_responses(s->read_until_close(milliseconds(10000)));
  ASSERT_EQ(r.size(), 5u);
  for (const test::RawResponse& one : r) EXPECT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(json::parse(r[0].body)["status"], "ok");
  EXPECT_TRUE(json::parse(r[1].body).contains("tokens"));
  EXPECT_EQ(json::parse(r[2].body)["object"], "list");
  EXPECT_EQ(json::parse(r[3].body)["object"], "text_completion");
  EXPECT_TRUE(json::parse(r[4].body).contains("default_generation_settings"));
  EXPECT_EQ(server->stop(), 0) << server->log();
}

// Item 4: a client that half-closes after its request (`nc -N`) still gets the answer;
// it is not taken for gone.
TEST(ServerTransport, AHalfClosedClientGetsItsAnswer) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = serve(model);
  ASSERT_TRUE(server);
  for (const bool stream : {false, true}) {
    auto s = RawSocket::connect(server->port());
    ASSERT_TRUE(s);
    const json body = {{"prompt", "Once"}, {"max_tokens", 24}, {"ignore_eos", true}, {"stream", stream}};
    ASSERT_TRUE(s->send(post("/v1/completions", body.dump())));
    s->shutdown_write();
    bool closed = false;
    const std::string reply = s->read_until_close(milliseconds(20000), &closed);
    EXPECT_TRUE(closed);
    const std::vector<test::RawResponse> r = test::parse_responses(reply);
    ASSERT_FALSE(r.empty()) << reply;
    EXPECT_EQ(r.back().status, 200) << reply;
    if (stream) {
      EXPECT_NE(r.back().body.find("data: [DONE]"), std::string::npos) << r.back().body;
    } else {
      EXPECT_EQ(json::parse(r.back().body)["usage"]["completion_tokens"], 24);
    }
  }
  EXPECT_EQ(server->log().find("client disconnected"), std::string::npos) << server->log();
  EXPECT_EQ(server->stop(), 0) << server->log();
}

// Item 7: limits on the header block: bytes and fields.
TEST(ServerTransport, TooManyOrTooLongHeadersAre431) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = serve(model);
  ASSERT_TRUE(server);
  std::string many_small = "GET /health HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 200; ++i) many_small += "X-" + std::to_string(i) + ": v\r\n";
  std::string huge = "GET /health HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 40000; ++i) huge += "X-Header-" + std::to_string(i) + ": some value here\r\n";
  for (const std::string& head : {many_small, huge}) {
    auto s = RawSocket::connect(server->port());
    ASSERT_TRUE(s);
    for (size_t at = 0; at < head.size() && !s->readable(milliseconds(0)); at += 4096) {
      if (!s->send(std::string_view(head).substr(at, 4096))) break;
    }
    (void)s->send("\r\n");
    const std::string reply = s->read_until_close(milliseconds(5000));
    EXPECT_EQ(test::final_status(reply), 431) << reply.substr(0, 300);
  }
  expect_serving(*server);
  EXPECT_EQ(server->stop(), 0) << server->log();
}

// Connections per client address and in total: the one past the limit gets 503 and is
// closed; other addresses are served.
TEST(ServerTransport, ConnectionsPastTheLimitsAre503) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = serve(model, {"--max-connections-per-client", "3", "--max-connections", "6"});
  ASSERT_TRUE(server);
  std::vector<std::unique_ptr<RawSocket>> held;
  for (int i = 0; i < 3; ++i) held.push_back(RawSocket::connect(server->port(), "127.0.0.2"));
  for (auto& s : held) ASSERT_TRUE(s);
  auto extra = RawSocket::connect(server->port(), "127.0.0.2");
  ASSERT_TRUE(extra);
  EXPECT_EQ(test::final_status(extra->read_until_close(milliseconds(5000))), 503);
  expect_serving(*server);  // from 127.0.0.1
  for (int i = 0; i < 3; ++i) held.push_back(RawSocket::connect(server->port(), "127.0.0.3"));
  auto over = RawSocket::connect(server->port(), "127.0.0.4");
  ASSERT_TRUE(over);
  const std::string reply = over->read_until_close(milliseconds(5000));
  EXPECT_EQ(test::final_status(reply), 503) << reply;
  EXPECT_NE(reply.find("--max-connections"), std::string::npos) << reply;
  held.clear();
  bool served = false;  // the closed connections are forgotten
  for (int i = 0; i < 50 && !served; ++i) {
    served = ServerProcess::http_get_status(server->port(), "/health", milliseconds(2000)) == 200;
    if (!served) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(served);
  EXPECT_EQ(server->stop(), 0) << server->log();
}

/// One request on its own connection, read to the end: the final response.
test::RawResponse exchange(int port, const std::string& request) {
  auto s = RawSocket::connect(port);
  EXPECT_TRUE(s);
  if (!s) return {};
  EXPECT_TRUE(s->send(request));
  const std::vector<test::RawResponse> r = test::parse_responses(s->read_responses(1, milliseconds(60000)));
  for (const test::RawResponse& one : r) {
    if (one.status >= 200) return one;
  }
  ADD_FAILURE() << "no final response to " << request.substr(0, 80);
  return {};
}

/// The `param` of an error body, "" when it is not one.
std::string error_param(const test::RawResponse& r) {
  const json body = json::parse(r.body, nullptr, false);
  if (!body.is_object() || !body.contains("error") || !body["error"]["param"].is_string()) return "";
  return body["error"]["param"];
}

// Item 5: an embedding request with more inputs than --max-queue is one admission on a
// default server: all 200 rows come back, and nothing of it is left queued to refuse the
// next client; a batch past Engine::kMaxGroup is refused whole with a 400.
TEST(ServerTransport, TwoHundredEmbeddingInputsAreOneAdmissionAndLeaveNothingQueued) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = serve(model, {"--embeddings"});
  ASSERT_TRUE(server);
  json inputs = json::array();
  for (int i = 0; i < 200; ++i) inputs.push_back("input number " + std::to_string(i));
  for (int round = 0; round < 3; ++round) {
    const test::RawResponse r = exchange(server->port(), post("/v1/embeddings", json{{"input", inputs}}.dump()));
    ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
    EXPECT_EQ(json::parse(r.body)["data"].size(), 200u);
  }
  json too_many = json::array();
  for (int i = 0; i < 1025; ++i) too_many.push_back("x");
  const test::RawResponse refused = exchange(server->port(), post("/v1/embeddings", json{{"input", too_many}}.dump()));
  EXPECT_EQ(refused.status, 400) << refused.body;
  const json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 4}};
  for (int i = 0; i < 3; ++i) {
    const test::RawResponse r = exchange(server->port(), post("/v1/chat/completions", chat.dump()));
    EXPECT_EQ(r.status, 200) << r.body;
  }
  EXPECT_EQ(server->stop(), 0) << server->log();
}

// Item 6: a grammar with more parse stacks at its start than the parser allows is the
// client's input: a 400 naming 'grammar', on every endpoint that takes one.
TEST(ServerTransport, AGrammarPastTheStackLimitIs400NotA500) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = serve(model);
  ASSERT_TRUE(server);
  const std::string grammar = R"(root ::= ("a"?{1,200}){1,200})";
  const std::vector<std::pair<std::string, json>> cases = {
      {"/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"grammar", grammar}}},
      {"/v1/completions", {{"prompt", "Once"}, {"grammar", grammar}}},
      {"/completion", {{"prompt", "Once"}, {"grammar", grammar}}},
  };
  for (const auto& [path, body] : cases) {
    const test::RawResponse r = exchange(server->port(), post(path, body.dump()));
    EXPECT_EQ(r.status, 400) << path << ": " << r.body;
    EXPECT_EQ(error_param(r), "grammar") << r.body;
  }
  expect_serving(*server);
  EXPECT_EQ(server->stop(), 0) << server->log();
}

// Item 7: /detokenize without 'tokens' is a 400 naming it, as every endpoint answers a
// missing required field; an empty list is a valid request ("").
TEST(ServerTransport, DetokenizeWithoutTokensIs400) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = serve(model);
  ASSERT_TRUE(server);
  for (const std::string body : {"{}", R"({"tokens": null})"}) {
    const test::RawResponse r = exchange(server->port(), post("/detokenize", body));
    EXPECT_EQ(r.status, 400) << body << ": " << r.body;
    EXPECT_EQ(error_param(r), "tokens") << r.body;
  }
  const test::RawResponse empty = exchange(server->port(), post("/detokenize", R"({"tokens": []})"));
  EXPECT_EQ(empty.status, 200) << empty.body;
  EXPECT_EQ(json::parse(empty.body)["content"], "");
  EXPECT_EQ(server->stop(), 0) << server->log();
}

}  // namespace
}  // namespace tessera
