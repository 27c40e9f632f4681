// `tessera serve` over real HTTP: every endpoint and error status, streams, the prefix
// cache, logprobs shapes, structured output, cancellation, SIGTERM (docs/server.md).
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/cli_run.h"
#include "common/server_process.h"
#include "common/test_util.h"
#include "golden/server_api.h"
#include "tessera/limits.h"

namespace tessera {
namespace {

using nlohmann::json;
using test::ServerProcess;
using test::Api;
using test::expect_error;
using test::kKey;
using test::Reply;
using test::sse_chunks;
using test::start_server;

json chat_body(const std::string& text, int max_tokens) {
  return {{"messages", {{{"role", "user"}, {"content", text}}}}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

/// One server for most tests: 4 slots, a key, metrics and embeddings on.
class ServerHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = test::shared_file("models/stories260K.gguf");
    if (model_.empty()) return;
    std::string error;
    server_ = ServerProcess::start({"-m", model_, "-np", "4", "-t", "2", "--api-key", kKey, "--metrics",
                                    "--embeddings", "--alias", "tiny"},
                                   &error);
    ASSERT_TRUE(server_) << error;
  }
  static void TearDownTestSuite() {
    if (server_) {
      EXPECT_EQ(server_->stop(), 0) << server_->log();
    }
    server_.reset();
  }
  void SetUp() override {
    if (model_.empty()) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
    ASSERT_TRUE(server_);
  }
  Api api() { return Api(server_->port()); }

  static std::string model_;
  static std::unique_ptr<ServerProcess> server_;
};

std::string ServerHttp::model_;
std::unique_ptr<ServerProcess> ServerHttp::server_;

TEST_F(ServerHttp, HealthNeedsNoKeyAndEverythingElseDoes) {
  Api anonymous(server_->port(), "");
  const Reply h = anonymous.get("/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.body["status"], "ok");
  expect_error(anonymous.get("/v1/models"), 401);
  expect_error(anonymous.post("/v1/chat/completions", chat_body("hi", 2)), 401);
  expect_error(Api(server_->port(), "wrong-key").get("/props"), 401);
  expect_error(Api(server_->port(), std::string(kKey) + "x").get("/slots"), 401);
  // X-Api-Key is accepted too.
  EXPECT_EQ(anonymous.send("GET", "/v1/models", {{"X-Api-Key", kKey}}).status, 200);
  // The web page needs no key (when the page files are compiled in).
  const Reply page = anonymous.get("/");
  EXPECT_TRUE(page.status == 200 || page.status == 404) << page.status;
}

TEST_F(ServerHttp, ModelsPropsSlots) {
  Api a = api();
  const Reply m = a.get("/v1/models");
  ASSERT_EQ(m.status, 200) << m.text;
  EXPECT_EQ(m.body["object"], "list");
  EXPECT_EQ(m.body["data"][0]["id"], "tiny");
  const Reply p = a.get("/props");
  ASSERT_EQ(p.status, 200) << p.text;
  EXPECT_EQ(p.body["total_slots"], 4);
  EXPECT_TRUE(p.body["default_generation_settings"].is_object());
  EXPECT_TRUE(p.body["chat_template"].is_string());
  EXPECT_EQ(p.body["model_path"], model_);
  // llama-server's shape: the per-sequence context and the request defaults in `params`.
  const json& settings = p.body["default_generation_settings"];
  EXPECT_EQ(settings["n_ctx"], p.body["n_ctx_per_seq"]);
  const json& params = settings["params"];
  EXPECT_NEAR(params["temperature"].get<double>(), 0.8, 1e-6);
  EXPECT_EQ(params["top_k"], 40);
  EXPECT_NEAR(params["top_p"].get<double>(), 0.95, 1e-6);
  EXPECT_NEAR(params["min_p"].get<double>(), 0.05, 1e-6);
  EXPECT_NEAR(params["repeat_penalty"].get<double>(), 1.0, 1e-6);
  EXPECT_EQ(params["seed"], -1);
  EXPECT_EQ(params["n_predict"], -1);
  const Reply s = a.get("/slots");
  ASSERT_EQ(s.status, 200) << s.text;
  ASSERT_TRUE(s.body.is_array());
  EXPECT_EQ(s.body.size(), 4u);
  EXPECT_TRUE(s.body[0].contains("is_processing"));
}

TEST_F(ServerHttp, ErrorStatusesAndShapes) {
  Api a = api();
  expect_error(a.post("/v1/chat/completions", std::string("{not json")), 400);
  expect_error(a.post("/v1/chat/completions", std::string("[1,2]")), 400);
  expect_error(a.post("/v1/chat/completions", std::string(200, '[')), 400);
  // A number past double's range: a 400, not a 500 (found by the server fuzzer).
  expect_error(a.post("/v1/completions", std::string(R"({"prompt": "x", "max_tokens": 1e400})")), 400);
  json b = chat_body("hi", 4);
  b["max_tokens"] = "4";
  expect_error(a.post("/v1/chat/completions", b), 400, "max_tokens");
  b = chat_body("hi", 4);
  b["temperature"] = "hot";
  expect_error(a.post("/v1/chat/completions", b), 400, "temperature");
  b = chat_body("hi", 4);
  b["stop"] = 5;
  expect_error(a.post("/v1/chat/completions", b), 400, "stop");
  b = chat_body("hi", 4);
  b["messages"] = "hi";
  expect_error(a.post("/v1/chat/completions", b), 400, "messages");
  b = chat_body("hi", 4);
  b["messages"][0]["role"] = "wizard";
  expect_error(a.post("/v1/chat/completions", b), 400, "messages[0].role");
  b = chat_body("hi", 4);
  b["logit_bias"] = {{"abc", 1}};
  expect_error(a.post("/v1/chat/completions", b), 400, "logit_bias");
  b = chat_body("hi", 4);
  b["grammar"] = "root ::= (\"a\"";
  expect_error(a.post("/v1/chat/completions", b), 400, "grammar");
  expect_error(a.post("/v1/completions", json{{"prompt", json::array({1, 2, 999999})}}), 400, "prompt");
  expect_error(a.post("/v1/completions", json{{"max_tokens", 3}}), 400, "prompt");
  b = chat_body("hi", 4);
  b["model"] = 5;
  expect_error(a.post("/v1/chat/completions", b), 400, "model");
  expect_error(a.get("/v1/models/no-such-model"), 404);
  expect_error(a.get("/no/such/path"), 404);
  expect_error(a.get("/v1/chat/completions"), 405);
  expect_error(a.send("DELETE", "/health"), 405);
  expect_error(a.post("/v1/completions", std::string(9u << 20, ' ')), 413);
}

TEST_F(ServerHttp, AnUnknownModelNameIsIgnoredWithoutStrictModel) {
  Api a = api();
  json b = chat_body("hi", 2);
  b["model"] = "gpt-4o";
  const Reply chat = a.post("/v1/chat/completions", b);
  ASSERT_EQ(chat.status, 200) << chat.text;
  EXPECT_EQ(chat.body["model"], "tiny");
  const Reply cmpl = a.post("/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 2}, {"model", "gpt-4o"}});
  ASSERT_EQ(cmpl.status, 200) << cmpl.text;
  EXPECT_EQ(cmpl.body["model"], "tiny");
  const Reply llama = a.post("/completion", json{{"prompt", "Once"}, {"n_predict", 2}, {"model", "gpt-4o"}});
  EXPECT_EQ(llama.status, 200) << llama.text;
  const Reply emb = a.post("/v1/embeddings", json{{"input", "a cat"}, {"model", "text-embedding-3-small"}});
  EXPECT_EQ(emb.status, 200) << emb.text;
  // GET /v1/models/{id} stays strict: only this server's names are models.
  expect_error(a.get("/v1/models/gpt-4o"), 404);
  EXPECT_EQ(a.get("/v1/models/tiny").status, 200);
}

TEST_F(ServerHttp, NullFieldsAreAbsentAndUnknownFieldsIgnored) {
  json b = chat_body("Tell me a story", 6);
  for (const char* k : {"temperature", "top_p", "n", "stop", "seed", "presence_penalty", "frequency_penalty",
                        "logit_bias", "logprobs", "top_logprobs", "response_format", "stream", "stream_options",
                        "user", "tools", "max_completion_tokens", "top_k", "grammar"}) {
    b[k] = nullptr;
  }
  b["model"] = "stories260K.gguf";  // the file name is accepted besides the alias
  b["some_future_field"] = {{"x", 1}};
  // Null temperature and seed mean the default sampler with a random seed, and this model may
  // sample its end token first; forbidding it makes the length and the counts below certain.
  b["ignore_eos"] = true;
  // (the model's context is 128 tokens, and this template spells its tags in ~30 tokens)
  b["messages"] = {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Tell me"}}, {{"type", "text"}, {"text", " a story"}}}}},
                   {{"role", "assistant"}, {"content", nullptr}}};
  const Reply r = api().post("/v1/chat/completions", b);
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["object"], "chat.completion");
  EXPECT_EQ(r.body["model"], "tiny");
  EXPECT_EQ(r.body["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_TRUE(r.body["created"].is_number_integer());
  const json& c = r.body["choices"][0];
  EXPECT_EQ(c["index"], 0);
  EXPECT_EQ(c["message"]["role"], "assistant");
  EXPECT_TRUE(c["message"]["content"].is_string());
  EXPECT_EQ(c["finish_reason"], "length");
  const json& u = r.body["usage"];
  EXPECT_EQ(u["completion_tokens"], 6);
  EXPECT_EQ(u["total_tokens"], u["prompt_tokens"].get<int>() + 6);
  EXPECT_TRUE(u["prompt_tokens_details"]["cached_tokens"].is_number_integer());
}

TEST_F(ServerHttp, SeveralChoicesAndSeveralPrompts) {
  json b = chat_body("Once upon a time", 8);
  b["n"] = 3;
  b["temperature"] = 1.0;
  b["seed"] = 7;
  const Reply r = api().post("/v1/chat/completions", b);
  ASSERT_EQ(r.status, 200) << r.text;
  ASSERT_EQ(r.body["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.body["choices"][i]["index"], i);
  const Reply c = api().post("/v1/completions", json{{"prompt", {"Once upon", "The dog"}}, {"n", 2},
                                                     {"max_tokens", 4}, {"temperature", 0}});
  ASSERT_EQ(c.status, 200) << c.text;
  ASSERT_EQ(c.body["choices"].size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c.body["choices"][i]["index"], i);
  EXPECT_EQ(c.body["choices"][0]["text"], c.body["choices"][1]["text"]);  // greedy: the same
  EXPECT_EQ(c.body["usage"]["completion_tokens"], 16);
}

/// Greedy text and tokens of a completion.
struct Greedy {
  std::string text;
  std::vector<std::string> tokens;
  json usage;
};

Greedy greedy_completion(Api& a, const json& prompt, int n, json extra = json::object()) {
  json b = {{"prompt", prompt}, {"max_tokens", n}, {"temperature", 0}, {"logprobs", 0}};
  b.update(extra);
  const Reply r = a.post("/v1/completions", b);
  EXPECT_EQ(r.status, 200) << r.text;
  Greedy g;
  if (r.status != 200) return g;
  g.text = r.body["choices"][0]["text"];
  for (const json& t : r.body["choices"][0]["logprobs"]["tokens"]) g.tokens.push_back(t);
  g.usage = r.body["usage"];
  return g;
}

TEST_F(ServerHttp, StopStringsAreNeverEmittedEvenAcrossTokens) {
  Api a = api();
  const Greedy full = greedy_completion(a, "Once upon a time", 30);
  ASSERT_GE(full.tokens.size(), 6u);
  // A stop string made of the end of token 3 and the start of token 4.
  size_t offset = 0;
  for (size_t i = 0; i < 3; ++i) offset += full.tokens[i].size();
  const std::string& t3 = full.tokens[3];
  const std::string& t4 = full.tokens[4];
  ASSERT_FALSE(t3.empty());
  ASSERT_FALSE(t4.empty());
  const std::string stop = t3.substr(t3.size() - 1) + t4.substr(0, 1);
  const size_t first = full.text.find(stop);
  ASSERT_NE(first, std::string::npos);
  const Greedy cut = greedy_completion(a, "Once upon a time", 30, {{"stop", {stop, "never-there"}}});
  EXPECT_EQ(cut.text, full.text.substr(0, first));
  EXPECT_EQ(cut.text.find(stop), std::string::npos);
  // The same through a stream.
  const Reply s = a.post("/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 30},
                                                 {"temperature", 0}, {"stop", stop}, {"stream", true}});
  ASSERT_EQ(s.status, 200);
  bool done = false;
  std::string streamed;
  std::string finish;
  for (const json& c : sse_chunks(s.text, &done)) {
    streamed += c["choices"][0]["text"].get<std::string>();
    if (c["choices"][0]["finish_reason"].is_string()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(streamed, cut.text);
  EXPECT_EQ(finish, "stop");
}

TEST_F(ServerHttp, PrefixCacheGivesTheSameGreedyOutput) {
  Api a = api();
  const std::string prompt = "The little dog ran to the park to see his friend";
  const Greedy cold = greedy_completion(a, prompt, 12, {{"cache_prompt", false}});
  const Greedy first = greedy_completion(a, prompt, 12);
  const Greedy second = greedy_completion(a, prompt, 12);
  EXPECT_EQ(cold.text, first.text);
  EXPECT_EQ(first.text, second.text);
  EXPECT_GT(second.usage["prompt_tokens_details"]["cached_tokens"].get<int>(), 0) << second.usage;
  EXPECT_EQ(second.usage["prompt_tokens"], first.usage["prompt_tokens"]);
}

TEST_F(ServerHttp, ChatStreamFramesRoleDeltasUsageDone) {
  Api a = api();
  const json plain = a.post("/v1/chat/completions", chat_body("Tell me a story", 10)).body;
  json b = chat_body("Tell me a story", 10);
  b["stream"] = true;
  b["stream_options"] = {{"include_usage", true}};
  const Reply s = a.post("/v1/chat/completions", b);
  ASSERT_EQ(s.status, 200) << s.text;
  EXPECT_NE(s.headers.find("Content-Type")->second.find("text/event-stream"), std::string::npos);
  bool done = false;
  const std::vector<json> chunks = sse_chunks(s.text, &done);
  EXPECT_TRUE(done);
  ASSERT_GE(chunks.size(), 3u);
  EXPECT_EQ(chunks[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  int finishes = 0;
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i]["id"], chunks[0]["id"]);
    EXPECT_TRUE(chunks[i].contains("usage") && chunks[i]["usage"].is_null());
    const json& d = chunks[i]["choices"][0]["delta"];
    if (d.contains("content")) text += d["content"].get<std::string>();
    if (chunks[i]["choices"][0]["finish_reason"].is_string()) ++finishes;
  }
  EXPECT_EQ(finishes, 1);
  EXPECT_EQ(text, plain["choices"][0]["message"]["content"]);
  const json& last = chunks.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["completion_tokens"], plain["usage"]["completion_tokens"]);
}

TEST_F(ServerHttp, LogprobsShapes) {
  Api a = api();
  json b = chat_body("Once upon a time", 5);
  b["logprobs"] = true;
  b["top_logprobs"] = 3;
  const Reply r = a.post("/v1/chat/completions", b);
  ASSERT_EQ(r.status, 200) << r.text;
  const json& content = r.body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 5u);
  for (const json& t : content) {
    EXPECT_TRUE(t["token"].is_string());
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    EXPECT_TRUE(t["bytes"].is_array());
    ASSERT_EQ(t["top_logprobs"].size(), 3u);
    EXPECT_TRUE(t["top_logprobs"][0].contains("token") && t["top_logprobs"][0].contains("bytes"));
    EXPECT_GE(t["top_logprobs"][0]["logprob"].get<double>(), t["top_logprobs"][2]["logprob"].get<double>());
    EXPECT_GE(t["top_logprobs"][0]["logprob"].get<double>() + 1e-5, t["logprob"].get<double>());  // greedy
  }
  const Reply c = a.post("/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 5},
                                                 {"temperature", 0}, {"logprobs", 2}});
  ASSERT_EQ(c.status, 200) << c.text;
  const json& lp = c.body["choices"][0]["logprobs"];
  for (const char* k : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
    ASSERT_TRUE(lp[k].is_array()) << k;
    EXPECT_EQ(lp[k].size(), 5u) << k;
  }
  EXPECT_TRUE(lp["top_logprobs"][0].is_object());
  EXPECT_LE(lp["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(lp["text_offset"][0], 0);
  // Without the field: null.
  EXPECT_TRUE(a.post("/v1/completions", json{{"prompt", "x"}, {"max_tokens", 2}}).body["choices"][0]["logprobs"].is_null());
}

TEST_F(ServerHttp, JsonSchemaOutputParses) {
  json b = chat_body("Pick a color", 40);
  b["response_format"] = {
      {"type", "json_schema"},
      {"json_schema",
       {{"name", "pick"},
        {"schema",
         {{"type", "object"},
          {"properties", {{"color", {{"enum", {"red", "green", "blue"}}}}, {"ok", {{"type", "boolean"}}}}},
          {"required", {"color", "ok"}},
          {"additionalProperties", false}}}}}};
  const Reply r = api().post("/v1/chat/completions", b);
  ASSERT_EQ(r.status, 200) << r.text;
  const std::string content = r.body["choices"][0]["message"]["content"];
  const json parsed = json::parse(content, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << content;
  EXPECT_TRUE(parsed["color"] == "red" || parsed["color"] == "green" || parsed["color"] == "blue") << content;
  EXPECT_TRUE(parsed["ok"].is_boolean()) << content;
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "stop");
  json bad = chat_body("x", 4);
  bad["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", 5}}}}}};
  expect_error(api().post("/v1/chat/completions", bad), 400);
}

TEST_F(ServerHttp, TokenizeDetokenizeApplyTemplate) {
  Api a = api();
  const Reply t = a.post("/tokenize", json{{"content", "Hello world"}});
  ASSERT_EQ(t.status, 200) << t.text;
  ASSERT_FALSE(t.body["tokens"].empty());
  const Reply d = a.post("/detokenize", json{{"tokens", t.body["tokens"]}});
  ASSERT_EQ(d.status, 200) << d.text;
  EXPECT_EQ(d.body["content"], "Hello world");
  const Reply bos = a.post("/tokenize", json{{"content", "Hello"}, {"add_special", true}, {"with_pieces", true}});
  ASSERT_EQ(bos.status, 200);
  EXPECT_EQ(bos.body["tokens"][0]["id"], 1);  // BOS of this vocabulary
  EXPECT_TRUE(bos.body["tokens"][1].contains("piece"));
  expect_error(a.post("/detokenize", json{{"tokens", {-1}}}), 400, "tokens");
  expect_error(a.post("/detokenize", json::object()), 400, "tokens");  // required, like every endpoint's
  const Reply empty = a.post("/detokenize", json{{"tokens", json::array()}});
  ASSERT_EQ(empty.status, 200) << empty.text;
  EXPECT_EQ(empty.body["content"], "");
  expect_error(a.post("/tokenize", json{{"content", 5}}), 400, "content");
  const Reply p = a.post("/apply-template", json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}});
  ASSERT_EQ(p.status, 200) << p.text;
  EXPECT_NE(p.body["prompt"].get<std::string>().find("Hi"), std::string::npos);
}

TEST_F(ServerHttp, LlamaCompletionAndItsStream) {
  Api a = api();
  const Reply r = a.post("/completion", json{{"prompt", "Once upon a time"}, {"n_predict", 6}, {"temperature", 0},
                                             {"n_probs", 2}});
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_TRUE(r.body["content"].is_string());
  EXPECT_EQ(r.body["tokens_predicted"], 6);
  EXPECT_GT(r.body["tokens_evaluated"].get<int>(), 0);
  EXPECT_EQ(r.body["stop"], true);
  EXPECT_EQ(r.body["stopped_limit"], true);
  EXPECT_EQ(r.body["stopped_eos"], false);
  EXPECT_TRUE(r.body["timings"].contains("predicted_per_second"));
  ASSERT_EQ(r.body["completion_probabilities"].size(), 6u);
  EXPECT_EQ(r.body["completion_probabilities"][0]["top_logprobs"].size(), 2u);
  const Reply s = a.post("/completion", json{{"prompt", "Once upon a time"}, {"n_predict", 6},
                                             {"temperature", 0}, {"stream", true}});
  ASSERT_EQ(s.status, 200);
  bool done = false;
  const std::vector<json> chunks = sse_chunks(s.text, &done);
  ASSERT_FALSE(chunks.empty());
  std::string text;
  for (const json& c : chunks) text += c["content"].get<std::string>();
  EXPECT_EQ(text, r.body["content"]);
  EXPECT_EQ(chunks.back()["stop"], true);
  EXPECT_EQ(chunks.back()["tokens_predicted"], 6);
}

TEST_F(ServerHttp, LlamaCompletionStopTypeTruncatedTokensNewLines) {
  Api a = api();
  const json base = {{"prompt", "Once upon a time"}, {"temperature", 0}};
  json b = base;
  b["n_predict"] = 6;
  b["return_tokens"] = true;
  const Reply limit = a.post("/completion", b);
  ASSERT_EQ(limit.status, 200) << limit.text;
  EXPECT_EQ(limit.body["stop_type"], "limit");
  EXPECT_EQ(limit.body["truncated"], false);
  const std::string text = limit.body["content"];
  EXPECT_EQ(limit.body["has_new_line"], text.find('\n') != std::string::npos);
  ASSERT_EQ(limit.body["tokens"].size(), 6u);
  const Reply detok = a.post("/detokenize", json{{"tokens", limit.body["tokens"]}});
  EXPECT_EQ(detok.body["content"], text);
  b.erase("return_tokens");
  EXPECT_EQ(a.post("/completion", b).body["tokens"], json::array());  // without return_tokens
  // A stop string from that greedy text: "word", and the string that matched.
  ASSERT_GE(text.size(), 4u);
  b = base;
  b["n_predict"] = 6;
  b["stop"] = {text.substr(text.size() / 2, 2)};
  const Reply word = a.post("/completion", b);
  EXPECT_EQ(word.body["stop_type"], "word") << word.text;
  EXPECT_EQ(word.body["stopping_word"], b["stop"][0]);
  EXPECT_EQ(word.body["stopped_word"], true);
  // The end-of-text token (id 2) made certain: "eos".
  b = base;
  b["logit_bias"] = {{2, 100}};
  const Reply eos = a.post("/completion", b);
  EXPECT_EQ(eos.body["stop_type"], "eos") << eos.text;
  EXPECT_EQ(eos.body["stopped_eos"], true);
  EXPECT_EQ(eos.body["truncated"], false);
  // Until the sequence is full: truncated.
  const int64_t n_ctx = a.get("/props").body["n_ctx_per_seq"];
  b = base;
  b["ignore_eos"] = true;
  const Reply full = a.post("/completion", b);
  ASSERT_EQ(full.status, 200) << full.text;
  EXPECT_EQ(full.body["stop_type"], "limit");
  EXPECT_EQ(full.body["truncated"], true);
  EXPECT_EQ(full.body["tokens_predicted"].get<int64_t>() + full.body["tokens_evaluated"].get<int64_t>(), n_ctx);
}

TEST_F(ServerHttp, LlamaStreamSaysWhenANewLineCame) {
  json b = {{"prompt", "Once upon a time"}, {"temperature", 0}, {"n_predict", 4}, {"stream", true}};
  b["logit_bias"] = {{13, 100}};  // <0x0A>: every token a new line
  const Reply nl = api().post("/completion", b);
  ASSERT_EQ(nl.status, 200) << nl.text;
  bool done = false;
  std::vector<json> chunks = sse_chunks(nl.text, &done);
  ASSERT_GE(chunks.size(), 2u);
  std::string so_far;
  for (const json& c : chunks) {
    if (c["stop"] == true) break;
    so_far += c["content"].get<std::string>();
    EXPECT_EQ(c["has_new_line"], so_far.find('\n') != std::string::npos) << c.dump();
  }
  EXPECT_NE(so_far.find('\n'), std::string::npos);
  EXPECT_EQ(chunks.back()["has_new_line"], true);
  EXPECT_EQ(chunks.back()["stop_type"], "limit");
  b.erase("logit_bias");
  b["n_predict"] = 1;
  chunks = sse_chunks(api().post("/completion", b).text, &done);
  ASSERT_FALSE(chunks.empty());
  const std::string first = chunks.front()["content"];
  EXPECT_EQ(chunks.front()["has_new_line"], first.find('\n') != std::string::npos);
}

TEST_F(ServerHttp, SystemFingerprintIsTheBuild) {
  Api a = api();
  const Reply chat = a.post("/v1/chat/completions", chat_body("hi", 2));
  ASSERT_EQ(chat.status, 200) << chat.text;
  ASSERT_TRUE(chat.body["system_fingerprint"].is_string()) << chat.text;
  const std::string fp = chat.body["system_fingerprint"];
  EXPECT_EQ(fp.rfind("tessera-0.1.0-", 0), 0u) << fp;
  EXPECT_EQ(fp.size(), std::string("tessera-0.1.0-").size() + 12) << fp;
  EXPECT_EQ(a.post("/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 2}}).body["system_fingerprint"], fp);
  json s = chat_body("hi", 2);
  s["stream"] = true;
  bool done = false;
  for (const json& c : sse_chunks(a.post("/v1/chat/completions", s).text, &done)) {
    EXPECT_EQ(c["system_fingerprint"], fp);
  }
  EXPECT_TRUE(done);
}

TEST_F(ServerHttp, LlamaCompletionWithSeveralPromptsAnswersAnArray) {
  Api a = api();
  const json one = {{"prompt", "Once upon a time"}, {"n_predict", 3}, {"temperature", 0}};
  const Reply single = a.post("/completion", one);
  ASSERT_EQ(single.status, 200) << single.text;
  ASSERT_TRUE(single.body.is_object());
  const json ids = a.post("/tokenize", json{{"content", "Once"}, {"add_special", true}}).body["tokens"];
  json b = one;
  b["prompt"] = {"Once upon a time", ids};
  const Reply r = a.post("/completion", b);
  ASSERT_EQ(r.status, 200) << r.text;
  ASSERT_TRUE(r.body.is_array()) << r.text;
  ASSERT_EQ(r.body.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.body[i]["index"], i);
    EXPECT_EQ(r.body[i]["tokens_predicted"], 3);
    EXPECT_EQ(r.body[i]["stop_type"], "limit");
  }
  EXPECT_EQ(r.body[0]["content"], single.body["content"]);
  EXPECT_EQ(r.body[0]["tokens_evaluated"], single.body["tokens_evaluated"]);
  EXPECT_EQ(r.body[1]["tokens_evaluated"], ids.size());
  // A list with a token id in it is still one prompt (ids and strings mixed).
  b["prompt"] = {ids[0], " upon a time"};
  EXPECT_TRUE(a.post("/completion", b).body.is_object());
  b["prompt"] = {"Once", "Once"};
  b["stream"] = true;
  EXPECT_EQ(a.post("/completion", b).status, 200);  // streamed, a frame per token with its index
  b["stream"] = false;
  b["prompt"] = {"Once", 5.5};
  expect_error(a.post("/completion", b), 400, "prompt");
  b["prompt"] = {"Once", json::object()};
  expect_error(a.post("/completion", b), 400, "prompt[1]");
  b["prompt"] = json(std::vector<std::string>(65, "Once"));
  expect_error(a.post("/completion", b), 400, "prompt");
}

TEST_F(ServerHttp, MaxTokensPastTheContextGeneratesUntilTheSequenceIsFull) {
  Api a = api();
  const int64_t n_ctx = a.get("/props").body["n_ctx_per_seq"];
  // /v1/completions: 200, "length", the rest of the sequence generated.
  const json c = {{"prompt", "Once upon a time"}, {"max_tokens", 10000}, {"temperature", 0}, {"ignore_eos", true}};
  const Reply r = a.post("/v1/completions", c);
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "length");
  const int64_t prompt = r.body["usage"]["prompt_tokens"];
  EXPECT_EQ(r.body["usage"]["completion_tokens"].get<int64_t>(), n_ctx - prompt);
  EXPECT_EQ(r.body["truncated"], false);  // the prompt was whole
  // Chat, plain and streamed.
  json chat = chat_body("hi", 10000);
  chat["ignore_eos"] = true;
  chat["stop"] = json::array();
  const Reply cr = a.post("/v1/chat/completions", chat);
  ASSERT_EQ(cr.status, 200) << cr.text;
  EXPECT_EQ(cr.body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(cr.body["usage"]["total_tokens"].get<int64_t>(), n_ctx) << cr.text;
  EXPECT_EQ(cr.body["dropped_messages"], 0);
  chat["stream"] = true;
  const Reply s = a.post("/v1/chat/completions", chat);
  ASSERT_EQ(s.status, 200) << s.text;
  bool done = false;
  const std::vector<json> chunks = sse_chunks(s.text, &done);
  ASSERT_GE(chunks.size(), 2u);
  EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], "length");
  // /completion: n_predict past the context is "limit" and truncated.
  const Reply l = a.post("/completion", json{{"prompt", "Once upon a time"}, {"n_predict", 10000},
                                             {"temperature", 0}, {"ignore_eos", true}});
  ASSERT_EQ(l.status, 200) << l.text;
  EXPECT_EQ(l.body["stop_type"], "limit");
  EXPECT_EQ(l.body["truncated"], true);
  EXPECT_EQ(l.body["tokens_predicted"].get<int64_t>() + l.body["tokens_evaluated"].get<int64_t>(), n_ctx);
}

/// `n` token ids: the BOS, then the tokens of a sentence over and over.
json long_prompt(Api& a, int64_t n) {
  const json ids = a.post("/tokenize", json{{"content", " Lily and Ben played in the park with a red ball."}}).body["tokens"];
  const json bos = a.post("/tokenize", json{{"content", ""}, {"add_special", true}}).body["tokens"];
  json out = json::array({bos.at(0)});
  while (int64_t(out.size()) < n) out.push_back(ids[(out.size() - 1) % ids.size()]);
  return out;
}

TEST_F(ServerHttp, APromptLongerThanTheContextIsTruncated) {
  Api a = api();
  const int64_t n_ctx = a.get("/props").body["n_ctx_per_seq"];
  const json prompt = long_prompt(a, 2 * n_ctx + 3);
  const int64_t half = n_ctx / 2;
  const json base = {{"n_predict", 8}, {"temperature", 0}, {"ignore_eos", true}};
  for (const int64_t n_keep : {int64_t(0), int64_t(10)}) {
    json b = base;
    b["prompt"] = prompt;
    if (n_keep > 0) b["n_keep"] = n_keep;
    const Reply r = a.post("/completion", b);
    ASSERT_EQ(r.status, 200) << r.text;
    EXPECT_EQ(r.body["truncated"], true);
    EXPECT_EQ(r.body["tokens_evaluated"], half);
    EXPECT_EQ(r.body["tokens_predicted"], 8);
    EXPECT_EQ(r.body["stop_type"], "limit");
    // The same greedy text as the kept tokens given whole: the first max(n_keep, 1) (the
    // BOS), then the end of the prompt.
    const int64_t keep = std::max<int64_t>(n_keep, 1);
    json kept = json::array();
    for (int64_t i = 0; i < keep; ++i) kept.push_back(prompt[size_t(i)]);
    for (int64_t i = int64_t(prompt.size()) - (half - keep); i < int64_t(prompt.size()); ++i) {
      kept.push_back(prompt[size_t(i)]);
    }
    b["prompt"] = kept;
    b.erase("n_keep");
    const Reply whole = a.post("/completion", b);
    ASSERT_EQ(whole.status, 200) << whole.text;
    EXPECT_EQ(whole.body["truncated"], false);
    EXPECT_EQ(whole.body["content"], r.body["content"]) << "n_keep " << n_keep;
  }
  EXPECT_TRUE(server_->wait_for_log("prompt truncated", std::chrono::seconds(5))) << server_->log();
  // /v1/completions: the same cut, `truncated` beside OpenAI's fields.
  const Reply o = a.post("/v1/completions", json{{"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}});
  ASSERT_EQ(o.status, 200) << o.text;
  EXPECT_EQ(o.body["usage"]["prompt_tokens"], half);
  EXPECT_EQ(o.body["truncated"], true);
  expect_error(a.post("/completion", json{{"prompt", prompt}, {"n_keep", -2}}), 400, "n_keep");
}

TEST_F(ServerHttp, CompletionsWithoutV1IsLlamaCompletion) {
  Api a = api();
  const json body = {{"prompt", "Once upon a time"}, {"n_predict", 4}, {"temperature", 0}};
  const Reply one = a.post("/completion", body);
  const Reply alias = a.post("/completions", body);
  ASSERT_EQ(alias.status, 200) << alias.text;
  EXPECT_EQ(alias.body["content"], one.body["content"]);  // llama.cpp's shape, not OpenAI's
  EXPECT_EQ(alias.body["tokens_predicted"], 4);
  EXPECT_FALSE(alias.body.contains("choices"));
  expect_error(a.get("/completions"), 405);
  expect_error(Api(server_->port(), "").post("/completions", body), 401);
}

TEST_F(ServerHttp, Embeddings) {
  const Reply r = api().post("/v1/embeddings", json{{"input", {"a cat", "a dog"}}});
  ASSERT_EQ(r.status, 200) << r.text;
  ASSERT_EQ(r.body["data"].size(), 2u);
  const json& v = r.body["data"][1]["embedding"];
  ASSERT_GT(v.size(), 0u);
  double norm = 0;
  for (const json& x : v) norm += x.get<double>() * x.get<double>();
  EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-3);
  EXPECT_EQ(r.body["data"][1]["index"], 1);
  EXPECT_GT(r.body["usage"]["prompt_tokens"].get<int>(), 0);
}

TEST_F(ServerHttp, TwoHundredEmbeddingInputsAreOneAdmission) {
  // More inputs than the 64 places of the default queue: one request is one admission.
  json inputs = json::array();
  for (int i = 0; i < 200; ++i) inputs.push_back("input number " + std::to_string(i));
  const Reply r = api().post("/v1/embeddings", json{{"input", inputs}});
  ASSERT_EQ(r.status, 200) << r.text;
  ASSERT_EQ(r.body["data"].size(), 200u);
  for (size_t i = 0; i < 200; ++i) {
    EXPECT_EQ(r.body["data"][i]["index"], i);
    EXPECT_GT(r.body["data"][i]["embedding"].size(), 0u);
  }
}

TEST_F(ServerHttp, GrammarPastTheStackLimitIs400) {
  Api a = api();
  const Reply r = a.post("/completion", json{{"prompt", "Once"}, {"n_predict", 4},
                                             {"grammar", "root ::= (\"a\"?{1,200}){1,200}"}});
  expect_error(r, 400, "grammar");
  EXPECT_EQ(r.body["error"]["type"], "invalid_request_error") << r.text;
  const std::string message = r.body["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("kMaxGrammarStacks"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(limits::kMaxGrammarStacks)), std::string::npos) << message;
  EXPECT_EQ(a.get("/health").status, 200);  // and the server goes on serving
}

TEST_F(ServerHttp, MetricsText) {
  Api a = api();
  ASSERT_EQ(a.post("/v1/chat/completions", chat_body("Hello", 3)).status, 200);
  // httplib calls the request logger (which logs the line and counts the request) after
  // it has written the response, so the client can ask before that: poll, bounded.
  const std::string counted = "tessera_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"}";
  Reply m = a.get("/metrics");
  for (int i = 0; i < 100 && (m.text.find(counted) == std::string::npos ||
                              server_->log().find("POST /v1/chat/completions 200 prompt=") == std::string::npos);
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    m = a.get("/metrics");
  }
  ASSERT_EQ(m.status, 200);
  for (const char* s : {"tessera_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"}",
                        "tessera_prompt_tokens_total", "tessera_cached_tokens_total",
                        "tessera_generated_tokens_total", "tessera_requests_running", "tessera_requests_waiting",
                        "tessera_kv_cells_used", "tessera_time_to_first_token_seconds_bucket{le=\"+Inf\"}",
                        "tessera_time_per_output_token_seconds_count", "tessera_request_duration_seconds_sum"}) {
    EXPECT_NE(m.text.find(s), std::string::npos) << s;
  }
  EXPECT_NE(server_->log().find("POST /v1/chat/completions 200 prompt="), std::string::npos);
}

TEST_F(ServerHttp, AClientThatLeavesAStreamFreesItsSlot) {
  Api a = api();
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers = {{"Authorization", std::string("Bearer ") + kKey}, {"Content-Type", "application/json"}};
  req.body = json{{"prompt", "Once"}, {"max_tokens", 100}, {"ignore_eos", true}, {"stream", true}}.dump();
  int chunks = 0;
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 2; };
  (void)a.client().send(req);  // stops reading after the first chunk and closes
  bool idle = false;
  for (int i = 0; i < 100 && !idle; ++i) {
    const Reply s = a.get("/slots");
    idle = s.status == 200;
    for (const json& slot : s.body) idle = idle && !slot["is_processing"].get<bool>();
    if (!idle) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(idle) << "the abandoned stream still holds a slot";
}

/// A chat of `turns` user/assistant pairs after a system message, then a last question.
json long_chat(int turns) {
  json messages = json::array({{{"role", "system"}, {"content", "You tell short stories about a cat."}}});
  for (int i = 0; i < turns; ++i) {
    messages.push_back({{"role", "user"}, {"content", "Tell me story number " + std::to_string(i) + " please."}});
    messages.push_back({{"role", "assistant"}, {"content", "Once upon a time there was a little cat called Tom. "
                                                           "Tom liked to play with his red ball in the garden. "
                                                           "One day the ball rolled away and Tom ran after it."}});
  }
  messages.push_back({{"role", "user"}, {"content", "And one more?"}});
  return messages;
}

TEST(ServerHttpLimits, AChatLongerThanTheContextDropsItsOldestTurns) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  // 512 cells: room for a few turns (this template spells its tags in ~18 tokens each).
  auto server = start_server({"-np", "1", "--ctx-per-seq", "512"});
  ASSERT_TRUE(server);
  Api a(server->port(), "");
  const int64_t n_ctx = a.get("/props").body["n_ctx_per_seq"];
  ASSERT_EQ(n_ctx, 512);
  const json messages = long_chat(6);
  const std::string text = a.post("/apply-template", json{{"messages", messages}}).body["prompt"];
  const json all = a.post("/tokenize", json{{"content", text}, {"add_special", true}}).body["tokens"];
  ASSERT_GT(int64_t(all.size()), n_ctx) << "the history must exceed the context";
  json b = {{"messages", messages}, {"max_tokens", 16}, {"temperature", 0}};
  const Reply r = a.post("/v1/chat/completions", b);
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["truncated"], true);
  const int dropped = r.body["dropped_messages"];
  EXPECT_GT(dropped, 0);
  EXPECT_EQ(dropped % 2, 0) << "whole turns go";
  EXPECT_LT(dropped, int(messages.size()) - 2) << "the newest turns stay";
  EXPECT_LE(r.body["usage"]["prompt_tokens"].get<int64_t>() + 16, n_ctx);
  // The same as sending the kept messages: the system message, the newest turns, the question.
  json kept = json::array({messages[0]});
  for (size_t i = 1 + size_t(dropped); i < messages.size(); ++i) kept.push_back(messages[i]);
  b["messages"] = kept;
  const Reply same = a.post("/v1/chat/completions", b);
  ASSERT_EQ(same.status, 200) << same.text;
  EXPECT_EQ(same.body["dropped_messages"], 0);
  EXPECT_EQ(same.body["truncated"], false);
  EXPECT_EQ(same.body["usage"]["prompt_tokens"], r.body["usage"]["prompt_tokens"]);
  EXPECT_EQ(same.body["choices"][0]["message"]["content"], r.body["choices"][0]["message"]["content"]);
  // One turn fewer would not have left the room.
  json one_more = json::array({messages[0]});
  for (size_t i = size_t(dropped) - 1; i < messages.size(); ++i) one_more.push_back(messages[i]);
  const std::string longer = a.post("/apply-template", json{{"messages", one_more}}).body["prompt"];
  EXPECT_GT(int64_t(a.post("/tokenize", json{{"content", longer}, {"add_special", true}}).body["tokens"].size()) + 16,
            n_ctx);
  EXPECT_TRUE(server->wait_for_log("dropped " + std::to_string(dropped) + " old messages", std::chrono::seconds(5)))
      << server->log();
  // Streamed: every chunk says so.
  b["messages"] = messages;
  b["stream"] = true;
  bool done = false;
  const std::vector<json> chunks = sse_chunks(a.post("/v1/chat/completions", b).text, &done);
  ASSERT_FALSE(chunks.empty());
  EXPECT_EQ(chunks.front()["dropped_messages"], dropped);
  // What must stay (the system message and the last user message) is too long: 400.
  json huge = long_chat(1);
  std::string big;
  for (int64_t i = 0; i < n_ctx; ++i) big += " cat";
  huge.back()["content"] = big;
  const Reply e = a.post("/v1/chat/completions", json{{"messages", huge}, {"max_tokens", 4}});
  expect_error(e, 400, "messages");
  EXPECT_EQ(e.body["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(server->stop(), 0) << server->log();
}

TEST(ServerHttpLimits, QueueFullIs429) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = start_server({"-np", "1", "--max-queue", "1"});
  ASSERT_TRUE(server);
  const json body = {{"prompt", "Once"}, {"max_tokens", 100}, {"ignore_eos", true}};
  std::vector<int> statuses(8, -1);
  std::vector<std::thread> clients;
  std::vector<Reply> replies(statuses.size());
  for (size_t i = 0; i < statuses.size(); ++i) {
    clients.emplace_back([&, i] { replies[i] = Api(server->port(), "").post("/v1/completions", body); });
  }
  for (std::thread& t : clients) t.join();
  int ok = 0, full = 0;
  for (const Reply& r : replies) {
    if (r.status == 200) ++ok;
    if (r.status == 429) {
      ++full;
      expect_error(r, 429);
    }
  }
  EXPECT_GE(ok, 1);
  EXPECT_GE(full, 1);
  EXPECT_EQ(ok + full, int(replies.size()));
  EXPECT_EQ(server->stop(), 0) << server->log();
}

TEST(ServerHttpLimits, StrictModelAndTheFileNameAsTheDefaultName) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = start_server({"--strict-model", "-np", "1"});
  ASSERT_TRUE(server);
  Api a(server->port(), "");
  // Without --alias the model's name is its file name.
  const Reply m = a.get("/v1/models");
  ASSERT_EQ(m.status, 200) << m.text;
  EXPECT_EQ(m.body["data"][0]["id"], "stories260K.gguf");
  EXPECT_EQ(a.get("/props").body["model_alias"], "stories260K.gguf");
  json b = chat_body("hi", 2);
  b["model"] = "stories260K.gguf";
  const Reply ok = a.post("/v1/chat/completions", b);
  ASSERT_EQ(ok.status, 200) << ok.text;
  EXPECT_EQ(ok.body["model"], "stories260K.gguf");
  b["model"] = model;  // the path is accepted too
  EXPECT_EQ(a.post("/v1/chat/completions", b).status, 200);
  b["model"] = "gpt-4o";
  const Reply e = a.post("/v1/chat/completions", b);
  expect_error(e, 404, "model");
  EXPECT_EQ(e.body["error"]["code"], "model_not_found");
  expect_error(a.post("/v1/completions", json{{"prompt", "Once"}, {"model", "gpt-4o"}}), 404, "model");
  expect_error(a.post("/completion", json{{"prompt", "Once"}, {"model", "gpt-4o"}}), 404, "model");
  EXPECT_EQ(server->stop(), 0) << server->log();
}

TEST(ServerHttpLimits, SamplingFlagsAreEveryRequestsDefaults) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = start_server({"--temp", "0", "--top-k", "5", "--top-p", "0.5", "--min-p", "0.1",
                              "--repeat-penalty", "1.1", "--seed", "42", "-n", "3", "-np", "2"});
  ASSERT_TRUE(server);
  Api a(server->port(), "");
  const Reply props = a.get("/props");
  ASSERT_EQ(props.status, 200) << props.text;
  const json& params = props.body["default_generation_settings"]["params"];
  EXPECT_EQ(params["temperature"], 0.0);
  EXPECT_EQ(params["top_k"], 5);
  EXPECT_NEAR(params["top_p"].get<double>(), 0.5, 1e-6);
  EXPECT_NEAR(params["min_p"].get<double>(), 0.1, 1e-6);
  EXPECT_NEAR(params["repeat_penalty"].get<double>(), 1.1, 1e-6);
  EXPECT_EQ(params["seed"], 42);
  EXPECT_EQ(params["n_predict"], 3);
  // Absent or null fields take the flags' values, on every endpoint.
  for (const json& body : {json{{"prompt", "Once"}, {"ignore_eos", true}},
                           json{{"prompt", "Once"}, {"ignore_eos", true}, {"temperature", nullptr},
                                {"seed", nullptr}, {"n_predict", nullptr}, {"top_k", nullptr}}}) {
    const Reply r = a.post("/completion", body);
    ASSERT_EQ(r.status, 200) << r.text;
    EXPECT_EQ(r.body["tokens_predicted"], 3);
    const json& g = r.body["generation_settings"];
    EXPECT_EQ(g["temperature"], 0.0);
    EXPECT_EQ(g["top_k"], 5);
    EXPECT_NEAR(g["top_p"].get<double>(), 0.5, 1e-6);
    EXPECT_NEAR(g["min_p"].get<double>(), 0.1, 1e-6);
    EXPECT_NEAR(g["repeat_penalty"].get<double>(), 1.1, 1e-6);
    EXPECT_EQ(g["seed"], 42);
  }
  const Reply cmpl = a.post("/v1/completions", json{{"prompt", "Once"}, {"ignore_eos", true}});
  ASSERT_EQ(cmpl.status, 200) << cmpl.text;
  EXPECT_EQ(cmpl.body["usage"]["completion_tokens"], 3);
  json chat = chat_body("hi", 0);
  chat.erase("max_tokens");
  chat.erase("temperature");
  chat["ignore_eos"] = true;
  const Reply c = a.post("/v1/chat/completions", chat);
  ASSERT_EQ(c.status, 200) << c.text;
  EXPECT_EQ(c.body["usage"]["completion_tokens"], 3);
  // A request's own values win; seed -1 is a random seed.
  const Reply own = a.post("/completion", json{{"prompt", "Once"}, {"ignore_eos", true}, {"n_predict", 5},
                                               {"temperature", 0.5}, {"top_k", 40}, {"seed", -1}});
  ASSERT_EQ(own.status, 200) << own.text;
  EXPECT_EQ(own.body["tokens_predicted"], 5);
  EXPECT_EQ(own.body["generation_settings"]["temperature"], 0.5);
  EXPECT_EQ(own.body["generation_settings"]["top_k"], 40);
  EXPECT_NE(own.body["generation_settings"]["seed"], 42);
  EXPECT_EQ(server->stop(), 0) << server->log();
}

TEST(ServerHttpLimits, BadSamplingFlagsNameTheFlag) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  for (const std::string flag : {"--temp -1", "--top-k -2", "--top-p 2", "--min-p 1.5", "--repeat-penalty 0",
                                 "--seed -2", "-n -2", "--n-predict x"}) {
    SCOPED_TRACE(flag);
    const test::CliOutput o = test::run_tessera("serve -m " + model + " --port 0 " + flag);
    EXPECT_NE(o.status, 0);
    const std::string name = flag.substr(0, flag.find(' '));
    EXPECT_NE(o.err.find(name == "-n" ? "--n-predict" : name), std::string::npos) << o.err;
  }
}

TEST(ServerHttpLimits, CorsNoWebuiTimeout) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = start_server({"--cors", "http://example.com", "--no-webui", "--timeout", "0.2", "-np", "1"});
  ASSERT_TRUE(server);
  Api a(server->port(), "");
  const Reply pre = a.send("OPTIONS", "/v1/chat/completions",
                           {{"Origin", "http://example.com"}, {"Access-Control-Request-Method", "POST"}});
  EXPECT_EQ(pre.status, 204);
  auto origin = pre.headers.find("Access-Control-Allow-Origin");
  ASSERT_NE(origin, pre.headers.end());
  EXPECT_EQ(origin->second, "http://example.com");
  EXPECT_NE(pre.headers.find("Access-Control-Allow-Headers"), pre.headers.end());
  EXPECT_NE(a.get("/health").headers.find("Access-Control-Allow-Origin"), pre.headers.end());
  expect_error(a.get("/"), 404);
  const Reply slow = a.post("/completion", json{{"prompt", "Once"}, {"n_predict", 110}, {"ignore_eos", true}});
  ASSERT_EQ(slow.status, 200) << slow.text;
  EXPECT_EQ(slow.body["stopped_limit"], true);
  if (slow.body["tokens_predicted"].get<int>() < 110) {
    EXPECT_TRUE(server->wait_for_log("(timeout)", std::chrono::seconds(5))) << server->log();
  }
  EXPECT_EQ(server->stop(), 0) << server->log();
}

TEST(ServerHttpLimits, SigtermDuringAStreamExitsZero) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = start_server({"-np", "1"});
  ASSERT_TRUE(server);
  std::atomic<bool> got_data{false};
  std::thread client([&] {
    httplib::Client cli("127.0.0.1", server->port());
    cli.set_read_timeout(60, 0);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.headers = {{"Content-Type", "application/json"}};
    req.body = json{{"prompt", "Once"}, {"max_tokens", 110}, {"ignore_eos", true}, {"stream", true}}.dump();
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
      got_data = true;
      return true;
    };
    (void)cli.send(req);
  });
  for (int i = 0; i < 500 && !got_data; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(server->stop(), 0) << server->log();
  client.join();
  EXPECT_EQ(ServerProcess::http_get_status(server->port(), "/health", std::chrono::milliseconds(500)), -1);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// A generation far longer than the limit: mini-llama's 4096-token context, 4000 tokens
// (about a second in Release, several under the sanitizers), a 0.2 s limit.
TEST(ServerHttpLimits, TimeoutCutsALongGeneration) {
  TESSERA_REQUIRE_SHARED(model, "models/mini-llama-Q8_0.gguf");
  std::string error;
  auto server = test::ServerProcess::start({"-m", model, "-t", "1", "-np", "1", "--timeout", "0.2"}, &error);
  ASSERT_TRUE(server) << error;
  httplib::Client cli("127.0.0.1", server->port());
  cli.set_read_timeout(120, 0);
  const json req = {{"prompt", "Once upon a time"}, {"max_tokens", 4000}, {"ignore_eos", true}, {"temperature", 0}};
  const auto t0 = std::chrono::steady_clock::now();
  auto res = cli.Post("/v1/completions", req.dump(), "application/json");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(res) << "no response";
  ASSERT_EQ(res->status, 200) << res->body;
  const json body = json::parse(res->body);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_LT(body["usage"]["completion_tokens"].get<int>(), 4000);  // cut, answered with what it had
  EXPECT_LT(seconds, 10.0);
  EXPECT_TRUE(server->wait_for_log("(timeout)", std::chrono::seconds(5))) << server->log();
  EXPECT_EQ(server->stop(), 0) << server->log();
}

// Clients that go away in the middle of a long generation, one plain and one streamed:
// the server notices (its log says so) and the slot is free long before the 4000 tokens
// would have been generated.
TEST(ServerHttpLimits, ClientsThatLeaveAreCancelled) {
  TESSERA_REQUIRE_SHARED(model, "models/mini-llama-Q8_0.gguf");
  std::string error;
  auto server = test::ServerProcess::start({"-m", model, "-t", "1", "-np", "1"}, &error);
  ASSERT_TRUE(server) << error;
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 4000}, {"ignore_eos", true}};
  {
    httplib::Client cli("127.0.0.1", server->port());
    cli.set_read_timeout(0, 200000);  // gives up after 0.2 s and closes the connection
    EXPECT_FALSE(cli.Post("/v1/completions", body.dump(), "application/json"));
  }
  EXPECT_TRUE(server->wait_for_log("(client disconnected)", std::chrono::seconds(20))) << server->log();
  {
    httplib::Client cli("127.0.0.1", server->port());
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.headers = {{"Content-Type", "application/json"}};
    json streamed = body;
    streamed["stream"] = true;
    req.body = streamed.dump();
    int chunks = 0;
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };
    (void)cli.send(req);
  }
  const auto t0 = std::chrono::steady_clock::now();
  bool idle = false;
  httplib::Client probe("127.0.0.1", server->port());
  while (!idle && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    auto s = probe.Get("/slots");
    idle = s && s->status == 200;
    if (idle) {
      for (const json& slot : json::parse(s->body)) idle = idle && !slot["is_processing"].get<bool>();
    }
    if (!idle) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(idle);
  // The slot is freed before the request's log line is written: wait for the line.
  const auto count_disconnected = [&](const std::string& log) {
    size_t n = 0;
    for (size_t at = log.find("(client disconnected)"); at != std::string::npos;
         at = log.find("(client disconnected)", at + 1)) {
      ++n;
    }
    return n;
  };
  std::string log = server->log();
  while (count_disconnected(log) < 2 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    log = server->log();
  }
  EXPECT_EQ(count_disconnected(log), 2u) << log;
  EXPECT_EQ(server->stop(), 0) << log;
}

}  // namespace
}  // namespace tessera
