// llama-server's features that its clients rely on, over real HTTP against `tessera
// serve` on stories260K.gguf (docs/server.md).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "golden/server_api.h"

namespace tessera {
namespace {

using nlohmann::json;
using test::Api;
using test::expect_error;
using test::kKey;
using test::Reply;
using test::ServerProcess;

/// One server for the suite: 2 slots, a key, embeddings on.
class ServerHttpLlama : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::shared_file("models/stories260K.gguf").empty()) return;
    server_ = test::start_server({"-np", "2", "--api-key", kKey, "--embeddings"});
  }
  static void TearDownTestSuite() {
    if (server_) {
      EXPECT_EQ(server_->stop(), 0) << server_->log();
    }
    server_.reset();
  }
  void SetUp() override {
    if (test::shared_file("models/stories260K.gguf").empty()) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
    ASSERT_TRUE(server_);
  }
  Api api() { return Api(server_->port()); }

  static std::unique_ptr<ServerProcess> server_;
};

std::unique_ptr<ServerProcess> ServerHttpLlama::server_;

double norm(const json& v) {
  double sq = 0;
  for (const json& x : v) sq += x.get<double>() * x.get<double>();
  return std::sqrt(sq);
}

TEST_F(ServerHttpLlama, EmbeddingsWithPoolingNoneGiveAVectorPerToken) {
  Api a = api();
  const Reply tok = a.post("/tokenize", json{{"content", "a cat sat"}, {"add_special", true}});
  ASSERT_EQ(tok.status, 200) << tok.text;
  const size_t n_tokens = tok.body["tokens"].size();
  ASSERT_GT(n_tokens, 2u);

  const Reply none = a.post("/embeddings", json{{"content", {"a cat sat", "a dog"}}, {"pooling", "none"}});
  ASSERT_EQ(none.status, 200) << none.text;
  ASSERT_TRUE(none.body.is_array()) << none.text;
  ASSERT_EQ(none.body.size(), 2u);
  EXPECT_EQ(none.body[1]["index"], 1);
  const json& rows = none.body[0]["embedding"];
  ASSERT_EQ(rows.size(), n_tokens);
  const size_t n_embd = rows[0].size();
  ASSERT_GT(n_embd, 0u);
  for (const json& row : rows) EXPECT_EQ(row.size(), n_embd);
  EXPECT_GT(std::abs(norm(rows[1]) - 1.0), 1e-3);  // per-token vectors are not normalised
  EXPECT_NE(rows[0], rows[1]);

  // Without `pooling`: the server's (mean), one normalised row, the same as /v1/embeddings.
  const Reply pooled = a.post("/embeddings", json{{"content", "a cat sat"}});
  ASSERT_EQ(pooled.status, 200) << pooled.text;
  ASSERT_EQ(pooled.body.size(), 1u);
  ASSERT_EQ(pooled.body[0]["embedding"].size(), 1u);
  const json& v = pooled.body[0]["embedding"][0];
  ASSERT_EQ(v.size(), n_embd);
  EXPECT_NEAR(norm(v), 1.0, 1e-3);
  const Reply oai = a.post("/v1/embeddings", json{{"input", "a cat sat"}});
  ASSERT_EQ(oai.status, 200) << oai.text;
  EXPECT_EQ(oai.body["data"][0]["embedding"], v);

  // The mean of the raw rows, normalised, is the pooled vector.
  std::vector<double> mean(n_embd, 0.0);
  for (const json& row : rows) {
    for (size_t j = 0; j < n_embd; ++j) mean[j] += row[j].get<double>() / double(n_tokens);
  }
  double sq = 0;
  for (double x : mean) sq += x * x;
  for (size_t j = 0; j < n_embd; ++j) EXPECT_NEAR(mean[j] / std::sqrt(sq), v[j].get<double>(), 1e-4) << j;
}

TEST_F(ServerHttpLlama, PoolingNoneIsNotOpenAIsAndBadPoolingNamesTheField) {
  Api a = api();
  expect_error(a.post("/v1/embeddings", json{{"input", "a cat"}, {"pooling", "none"}}), 400, "pooling");
  expect_error(a.post("/embeddings", json{{"content", "a cat"}, {"pooling", "max"}}), 400, "pooling");
  expect_error(a.post("/embeddings", json{{"content", "a cat"}, {"pooling", 3}}), 400, "pooling");
}

TEST_F(ServerHttpLlama, JsonSchemaTupleItemsConstrainTheOutput) {
  const json tuple = {{"type", "array"},
                      {"items", {{{"enum", {"red", "green", "blue"}}}, {{"type", "boolean"}}}},
                      {"additionalItems", false},
                      {"minItems", 2}};
  const json body = {{"messages", {{{"role", "user"}, {"content", "Pick a color"}}}}, {"max_tokens", 40},
                     {"temperature", 0},
                     {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "t"}, {"schema", tuple}}}}}};
  Api a = api();
  const Reply r = a.post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.text;
  const std::string content = r.body["choices"][0]["message"]["content"];
  const json parsed = json::parse(content, nullptr, false);
  ASSERT_TRUE(parsed.is_array()) << content;
  ASSERT_EQ(parsed.size(), 2u) << content;
  EXPECT_TRUE(parsed[0] == "red" || parsed[0] == "green" || parsed[0] == "blue") << content;
  EXPECT_TRUE(parsed[1].is_boolean()) << content;
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "stop") << r.text;

  // prefixItems, on /completion's json_schema: the same tuple.
  json prefix = tuple;
  prefix.erase("items");
  prefix.erase("additionalItems");
  prefix["prefixItems"] = tuple["items"];
  prefix["items"] = false;
  const Reply c = a.post("/completion", json{{"prompt", "Once"}, {"n_predict", 40}, {"temperature", 0}, {"json_schema", prefix}});
  ASSERT_EQ(c.status, 200) << c.text;
  const json p = json::parse(c.body["content"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(p.is_array() && p.size() == 2u) << c.text;
  EXPECT_TRUE(p[1].is_boolean()) << c.text;

  json bad = body;
  bad["response_format"]["json_schema"]["schema"]["items"] = json::array();
  const Reply e = a.post("/v1/chat/completions", bad);
  expect_error(e, 400);
  EXPECT_NE(e.text.find("'items' must be a non-empty array"), std::string::npos) << e.text;
}

TEST_F(ServerHttpLlama, TextPartsAreJoinedWithNewlinesAsLlamaCppJoinsThem) {
  Api a = api();
  auto prompt_of = [&](const json& content) {
    const Reply r = a.post("/apply-template", json{{"messages", {{{"role", "user"}, {"content", content}}}}});
    EXPECT_EQ(r.status, 200) << r.text;
    return r.body.value("prompt", std::string());
  };
  const json parts = {{{"type", "text"}, {"text", "Hello"}}, {{"type", "text"}, {"text", "world"}}};
  EXPECT_EQ(prompt_of(parts), prompt_of("Hello\nworld"));
  EXPECT_NE(prompt_of(parts), prompt_of("Helloworld"));
  // An empty first part adds no newline (llama.cpp: a newline only after some text).
  const json empty_first = {{{"type", "text"}, {"text", ""}}, {{"type", "text"}, {"text", "a"}}};
  EXPECT_EQ(prompt_of(empty_first), prompt_of("a"));
}

TEST_F(ServerHttpLlama, ResponseFieldsKeepOnlyTheNamedPaths) {
  Api a = api();
  const json body = {{"prompt", "Once upon"}, {"n_predict", 3}, {"temperature", 0},
                     {"response_fields", {"content", "generation_settings/n_predict", "timings/predicted_n", "nothing",
                                          "content/deeper"}}};
  const Reply r = a.post("/completion", body);
  ASSERT_EQ(r.status, 200) << r.text;
  // llama-server's json_get_nested_values: each found path is a top-level member named by
  // the whole path; paths that lead nowhere are left out.
  EXPECT_EQ(r.body.size(), 3u) << r.text;
  EXPECT_TRUE(r.body["content"].is_string()) << r.text;
  EXPECT_EQ(r.body["generation_settings/n_predict"], 3) << r.text;
  EXPECT_EQ(r.body["timings/predicted_n"], 3) << r.text;

  json stream = body;
  stream["stream"] = true;
  const Reply s = a.post("/completion", stream);
  ASSERT_EQ(s.status, 200) << s.text;
  bool done = false;
  const std::vector<json> frames = test::sse_chunks(s.text, &done);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().size(), 3u) << frames.back();  // the final frame is the final object
  EXPECT_EQ(frames.back()["generation_settings/n_predict"], 3) << frames.back();

  expect_error(a.post("/completion", json{{"prompt", "Once"}, {"n_predict", 1}, {"response_fields", "content"}}), 400,
               "response_fields");
  expect_error(a.post("/completion", json{{"prompt", "Once"}, {"n_predict", 1}, {"response_fields", {"content", 3}}}),
               400, "response_fields[1]");
}

TEST_F(ServerHttpLlama, TimingsInTheFinalObjectAndPerTokenInTheStream) {
  Api a = api();
  const json body = {{"prompt", "Once upon a time"}, {"n_predict", 6}, {"temperature", 0}, {"ignore_eos", true}};
  const Reply r = a.post("/completion", body);
  ASSERT_EQ(r.status, 200) << r.text;
  const json& t = r.body["timings"];
  for (const char* k : {"prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second", "predicted_n",
                        "predicted_ms", "predicted_per_token_ms", "predicted_per_second"}) {
    EXPECT_TRUE(t.contains(k) && t[k].is_number()) << k << ": " << t;
  }
  EXPECT_EQ(t["predicted_n"], 6);
  EXPECT_GT(t["prompt_n"].get<int>(), 0);

  json stream = body;
  stream["stream"] = true;
  const Reply plain = a.post("/completion", stream);
  ASSERT_EQ(plain.status, 200) << plain.text;
  bool done = false;
  for (const json& f : test::sse_chunks(plain.text, &done)) {
    if (!f["stop"].get<bool>()) {
      EXPECT_FALSE(f.contains("timings")) << f;  // only when asked
    }
  }
  stream["timings_per_token"] = true;
  const Reply s = a.post("/completion", stream);
  ASSERT_EQ(s.status, 200) << s.text;
  int64_t last_n = 0;
  int partial = 0;
  for (const json& f : test::sse_chunks(s.text, &done)) {
    ASSERT_TRUE(f.contains("timings")) << f;
    const int64_t n = f["timings"]["predicted_n"].get<int64_t>();
    EXPECT_GE(n, last_n) << f;
    last_n = n;
    EXPECT_GE(f["timings"]["prompt_ms"].get<double>(), 0.0);
    EXPECT_GT(f["timings"]["prompt_n"].get<int>(), 0) << f;
    if (!f["stop"].get<bool>()) ++partial;
  }
  EXPECT_GT(partial, 0);
  EXPECT_EQ(last_n, 6);
  expect_error(a.post("/completion", json{{"prompt", "Once"}, {"timings_per_token", "yes"}}), 400, "timings_per_token");
}

TEST(ServerHttpLlamaFlags, SlotsShowTheRunningRequestsParams) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  // Long sequences, so that a request runs long enough to be seen.
  auto server = test::start_server({"-np", "2", "--ctx-per-seq", "512"});
  ASSERT_TRUE(server);
  Api a(server->port(), "");
  const Reply idle = a.get("/slots");
  ASSERT_EQ(idle.status, 200) << idle.text;
  for (const json& slot : idle.body) EXPECT_TRUE(slot.contains("params") && slot["params"].is_null()) << slot;

  std::atomic<bool> finished{false};
  std::thread client([&] {
    const json body = {{"prompt", "Once"}, {"n_predict", 500}, {"ignore_eos", true},
                       {"temperature", 0.5}, {"top_k", 7}, {"seed", 11}};
    EXPECT_EQ(Api(server->port(), "").post("/completion", body).status, 200);
    finished = true;
  });
  json busy_slot;
  while (!finished && busy_slot.is_null()) {
    const Reply r = a.get("/slots");
    ASSERT_EQ(r.status, 200) << r.text;
    for (const json& slot : r.body) {
      if (slot["is_processing"].get<bool>() && slot["params"].is_object()) busy_slot = slot;
    }
  }
  client.join();
  ASSERT_FALSE(busy_slot.is_null()) << "no busy slot seen while the request ran";
  const json& p = busy_slot["params"];
  EXPECT_EQ(p["top_k"], 7) << busy_slot;
  EXPECT_EQ(p["temperature"], 0.5) << busy_slot;
  EXPECT_EQ(p["n_predict"], 500) << busy_slot;
  EXPECT_EQ(p["seed"], 11) << busy_slot;
  EXPECT_EQ(p["ignore_eos"], true) << busy_slot;
  for (const json& slot : a.get("/slots").body) EXPECT_TRUE(slot["params"].is_null()) << slot;  // idle again
  EXPECT_EQ(server->stop(), 0) << server->log();
}

TEST(ServerHttpLlamaFlags, NoSlotsMakesSlots501) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto off = test::start_server({"--no-slots"});
  ASSERT_TRUE(off);
  const Reply r = Api(off->port(), "").get("/slots");
  expect_error(r, 501);
  EXPECT_NE(r.text.find("--no-slots"), std::string::npos) << r.text;
  EXPECT_EQ(off->stop(), 0) << off->log();
  auto on = test::start_server({"--slots"});
  ASSERT_TRUE(on);
  EXPECT_EQ(Api(on->port(), "").get("/slots").status, 200);
  EXPECT_EQ(on->stop(), 0) << on->log();
}

TEST_F(ServerHttpLlama, InfillWithoutFimTokensIs400) {
  const Reply r = api().post("/infill", json{{"input_prefix", "def f():"}, {"input_suffix", "\n"}, {"n_predict", 2}});
  expect_error(r, 400);
  EXPECT_NE(r.text.find("fill-in-the-middle"), std::string::npos) << r.text;
}

/// The ids of `text` on `a`'s model: special-token texts parsed or not, no BOS.
std::vector<int> ids_of(Api& a, const std::string& text, bool special) {
  const Reply r = a.post("/tokenize", json{{"content", text}, {"parse_special", special}});
  EXPECT_EQ(r.status, 200) << r.text;
  return r.body["tokens"].get<std::vector<int>>();
}

/// The /infill prompt of `model` (whose repository token, when it has one, is `repo`:
/// found as llama.cpp finds it, by its text) against llama-server's format_infill layout:
/// [FIM_REP "myproject\n"], "\n\n--- snippet ---\n\n" text per extra file (neither
/// vocabulary has a file separator llama.cpp knows), [BOS], FIM_PRE prefix prompt FIM_SUF
/// suffix FIM_MID; the same tokens as a /completion prompt give the same greedy output.
void check_infill_layout(const std::string& model, const std::string& repo) {
  std::string error;
  auto server = ServerProcess::start({"-m", model, "-t", "2", "-np", "1"}, &error);
  ASSERT_TRUE(server) << error;
  Api a(server->port(), "");
  const std::string prefix = "def add(a, b):\n    return ", typed = "a", suffix = "\n\nprint(add(1, 2))\n";
  std::vector<int> expected;
  const auto add = [&](const std::string& text, bool special) {
    for (int id : ids_of(a, text, special)) expected.push_back(id);
  };
  if (!repo.empty()) {
    ASSERT_EQ(ids_of(a, repo, true).size(), 1u) << repo;
    add(repo, true);
    add("myproject\n", false);
  }
  add("\n\n--- snippet ---\n\n", false);
  add("x = 1\n", false);
  for (const std::string& t : {std::string("<fim_prefix>"), prefix, typed, std::string("<fim_suffix>"), suffix,
                               std::string("<fim_middle>")}) {
    add(t, true);
  }
  const json extra = {{{"filename", "util.py"}, {"text", "x = 1\n"}}};
  const Reply infill = a.post("/infill", json{{"input_prefix", prefix}, {"input_suffix", suffix}, {"prompt", typed},
                                              {"input_extra", extra}, {"n_predict", 6}, {"temperature", 0},
                                              {"return_tokens", true}});
  ASSERT_EQ(infill.status, 200) << infill.text;
  EXPECT_EQ(infill.body["tokens_evaluated"], expected.size()) << infill.text;
  EXPECT_EQ(infill.body["truncated"], false) << infill.text;  // nothing cut
  const Reply same = a.post("/completion", json{{"prompt", expected}, {"n_predict", 6}, {"temperature", 0},
                                                {"return_tokens", true}});
  ASSERT_EQ(same.status, 200) << same.text;
  EXPECT_EQ(infill.body["tokens"], same.body["tokens"]) << model;
  EXPECT_EQ(infill.body["content"], same.body["content"]) << model;

  expect_error(a.post("/infill", json{{"input_prefix", 3}}), 400, "input_prefix");
  expect_error(a.post("/infill", json{{"input_extra", {{{"filename", "a"}}}}}), 400, "input_extra[0].text");
  expect_error(a.post("/infill", json{{"input_extra", {"text"}}}), 400, "input_extra[0]");
  EXPECT_EQ(server->stop(), 0) << server->log();
}

TEST(ServerHttpLlamaFlags, InfillLaysOutTheFimTokensAsLlamaServer) {
  TESSERA_REQUIRE_SHARED(starcoder, "archs/models/starcoder.gguf");  // no repository token llama.cpp knows
  check_infill_layout(starcoder, "");
  TESSERA_REQUIRE_SHARED(refact, "archs/models/refact.gguf");  // <reponame>
  check_infill_layout(refact, "<reponame>");
}

TEST(ServerHttpLlamaFlags, PoolingNoneAsTheServersDefault) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto server = test::start_server({"--embeddings", "--pooling", "none"});
  ASSERT_TRUE(server);
  Api a(server->port(), "");
  const Reply r = a.post("/embedding", json{{"content", "a cat sat"}});
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_GT(r.body[0]["embedding"].size(), 1u);  // a row per token
  expect_error(a.post("/v1/embeddings", json{{"input", "a cat"}}), 400, "pooling");
  const Reply mean = a.post("/embeddings", json{{"content", "a cat sat"}, {"pooling", "mean"}});
  ASSERT_EQ(mean.status, 200) << mean.text;
  EXPECT_EQ(mean.body[0]["embedding"].size(), 1u);
  EXPECT_EQ(server->stop(), 0) << server->log();
}

}  // namespace
}  // namespace tessera
