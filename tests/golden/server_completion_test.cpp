// llama-server's /completion behaviours over real HTTP against `tessera serve`
// (docs/server.md): post_sampling_probs, a stream of several prompts.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "golden/server_api.h"

namespace tessera {
namespace {

using nlohmann::json;
using test::Api;
using test::expect_error;
using test::Reply;
using test::ServerProcess;

/// One server for the suite: 3 slots, no key.
class ServerHttpCompletion : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::shared_file("models/stories260K.gguf").empty()) return;
    server_ = test::start_server({"-np", "3"});
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
  Api api() { return Api(server_->port(), ""); }

  static std::unique_ptr<ServerProcess> server_;
};

std::unique_ptr<ServerProcess> ServerHttpCompletion::server_;

/// The `completion_probabilities` of a /completion answer, checked to be `n` entries.
json probabilities(const Reply& r, size_t n) {
  EXPECT_EQ(r.status, 200) << r.text;
  const json& probs = r.body["completion_probabilities"];
  EXPECT_TRUE(probs.is_array()) << r.text;
  EXPECT_EQ(probs.size(), n) << r.text;
  return probs;
}

json post_sampling(json body) {
  body["post_sampling_probs"] = true;
  return body;
}

TEST_F(ServerHttpCompletion, PostSamplingProbsWithTopK1AreCertain) {
  Api a = api();
  const json base = {{"prompt", "Once upon a time"}, {"n_predict", 6}, {"ignore_eos", true}, {"n_probs", 5},
                     {"temperature", 1.0}, {"top_k", 1}, {"seed", 3}};
  const Reply r = a.post("/completion", post_sampling(base));
  for (const json& t : probabilities(r, 6)) {
    EXPECT_FALSE(t.contains("logprob") || t.contains("top_logprobs")) << t;
    EXPECT_EQ(t["prob"], 1.0) << t;
    ASSERT_EQ(t["top_probs"].size(), 1u) << t;
    EXPECT_EQ(t["top_probs"][0]["id"], t["id"]) << t;
    EXPECT_EQ(t["top_probs"][0]["prob"], 1.0) << t;
    EXPECT_EQ(t["top_probs"][0]["token"], t["token"]) << t;
    EXPECT_TRUE(t["bytes"].is_array() && t["top_probs"][0]["bytes"].is_array()) << t;
  }
  EXPECT_EQ(r.body["generation_settings"]["post_sampling_probs"], true) << r.text;

  // Greedy (temperature 0) too, as llama.cpp's temperature 0 leaves only the largest logit.
  json greedy = post_sampling(base);
  greedy.erase("top_k");
  greedy["temperature"] = 0;
  for (const json& t : probabilities(a.post("/completion", greedy), 6)) {
    EXPECT_EQ(t["prob"], 1.0) << t;
    ASSERT_EQ(t["top_probs"].size(), 1u) << t;
    EXPECT_EQ(t["top_probs"][0]["id"], t["id"]) << t;
  }
  expect_error(a.post("/completion", json{{"prompt", "Once"}, {"post_sampling_probs", "yes"}}), 400,
               "post_sampling_probs");
}

/// Checks one post-sampling entry of a top-k `k` draw with `n_probs` asked.
void check_post_sampling_entry(const json& t, size_t k, size_t n_probs) {
  const json& top = t["top_probs"];
  ASSERT_TRUE(top.is_array()) << t;
  EXPECT_GE(top.size(), 1u) << t;
  EXPECT_LE(top.size(), std::min(k, n_probs)) << t;
  double sum = 0, last = 2;
  bool chosen_listed = false;
  for (const json& alt : top) {
    const double p = alt["prob"].get<double>();
    EXPECT_GT(p, 0.0) << t;
    EXPECT_LE(p, 1.0) << t;
    EXPECT_LE(p, last) << "not sorted: " << t;
    last = p;
    sum += p;
    if (alt["id"] == t["id"]) {
      chosen_listed = true;
      EXPECT_EQ(alt["prob"], t["prob"]) << t;
    }
  }
  EXPECT_LE(sum, 1.0 + 1e-5) << t;
  const double p = t["prob"].get<double>();
  EXPECT_GT(p, 0.0) << t;
  EXPECT_LE(p, 1.0) << t;
  if (n_probs >= k) {
    EXPECT_TRUE(chosen_listed) << t;  // every candidate left is listed
  }
}

TEST_F(ServerHttpCompletion, PostSamplingProbsAreTheCandidatesTheChainLeft) {
  Api a = api();
  const json base = {{"prompt", "Once upon a time"}, {"n_predict", 8}, {"ignore_eos", true}, {"n_probs", 10},
                     {"temperature", 1.0}, {"top_k", 5}, {"top_p", 1.0}, {"min_p", 0.0}, {"seed", 11},
                     {"cache_prompt", false}};
  const json probs = probabilities(a.post("/completion", post_sampling(base)), 8);
  bool full = false;  // at least one token had all five candidates with p > 0
  for (const json& t : probs) {
    check_post_sampling_entry(t, 5, 10);
    full = full || t["top_probs"].size() == 5;
  }
  EXPECT_TRUE(full) << probs;

  // Fewer asked than left: the most likely ones, summing to less than 1.
  json three = post_sampling(base);
  three["n_probs"] = 3;
  for (const json& t : probabilities(a.post("/completion", three), 8)) {
    check_post_sampling_entry(t, 5, 3);
    EXPECT_EQ(t["top_probs"].size(), 3u) << t;
  }

  // Without the flag the shape is the raw logits' log-probabilities, n_probs of them.
  for (const json& t : probabilities(a.post("/completion", base), 8)) {
    EXPECT_FALSE(t.contains("prob") || t.contains("top_probs")) << t;
    EXPECT_LE(t["logprob"].get<double>(), 0.0) << t;
    EXPECT_EQ(t["top_logprobs"].size(), 10u) << t;  // not limited by top-k
  }
}

TEST_F(ServerHttpCompletion, PostSamplingProbsInTheStreamMatchTheFinalObject) {
  Api a = api();
  json body = post_sampling({{"prompt", "The cat"}, {"n_predict", 7}, {"ignore_eos", true}, {"n_probs", 4},
                             {"temperature", 1.0}, {"top_k", 6}, {"seed", 5}, {"cache_prompt", false}});
  const json plain = probabilities(a.post("/completion", body), 7);
  body["stream"] = true;
  const Reply s = a.post("/completion", body);
  ASSERT_EQ(s.status, 200) << s.text;
  bool done = false;
  json streamed = json::array();
  for (const json& f : test::sse_chunks(s.text, &done)) {
    if (f["stop"].get<bool>()) continue;
    ASSERT_EQ(f["completion_probabilities"].size(), 1u) << f;
    streamed.push_back(f["completion_probabilities"][0]);
  }
  EXPECT_EQ(streamed, plain);  // the same seed: the same tokens and probabilities
  for (const json& t : streamed) check_post_sampling_entry(t, 6, 4);
}

/// The frames of a /completion stream by prompt index: every frame has one, and each
/// index ends with exactly one final frame (stop: true), after its last token frame.
std::map<int, std::vector<json>> frames_by_index(const std::string& text, std::vector<int>* order) {
  bool done = false;
  std::map<int, std::vector<json>> out;
  for (const json& f : test::sse_chunks(text, &done)) {
    EXPECT_TRUE(f.contains("index") && f["index"].is_number_integer()) << f;
    const int i = f.value("index", -1);
    if (!out[i].empty()) {
      EXPECT_FALSE(out[i].back()["stop"].get<bool>()) << "a frame after index " << i << "'s final one: " << f;
    }
    out[i].push_back(f);
    order->push_back(i);
  }
  EXPECT_FALSE(done) << "/completion streams end without [DONE]";
  for (const auto& [i, frames] : out) {
    EXPECT_TRUE(frames.back()["stop"].get<bool>()) << "index " << i << " has no final frame";
  }
  return out;
}

TEST_F(ServerHttpCompletion, SeveralPromptsStreamWithTheirIndex) {
  Api a = api();
  const std::vector<std::string> prompts = {"Once upon a time", "The cat sat on", "A dog"};
  json body = {{"prompt", prompts}, {"n_predict", 8}, {"temperature", 0}, {"ignore_eos", true}, {"cache_prompt", false}};
  const Reply plain = a.post("/completion", body);
  ASSERT_EQ(plain.status, 200) << plain.text;
  ASSERT_TRUE(plain.body.is_array() && plain.body.size() == prompts.size()) << plain.text;
  body["stream"] = true;
  const Reply s = a.post("/completion", body);
  ASSERT_EQ(s.status, 200) << s.text;
  std::vector<int> order;
  const std::map<int, std::vector<json>> frames = frames_by_index(s.text, &order);
  ASSERT_EQ(frames.size(), prompts.size()) << s.text;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(frames.count(int(i))) << s.text;
    const std::vector<json>& f = frames.at(int(i));
    std::string content;
    for (const json& frame : f) content += frame["content"].get<std::string>();
    const json& want = plain.body[i];
    EXPECT_EQ(content, want["content"]) << i;
    const json& last = f.back();
    for (const char* k : {"tokens_predicted", "tokens_evaluated", "tokens_cached", "stop_type", "stopped_eos",
                          "stopped_limit", "stopped_word", "truncated", "has_new_line", "index"}) {
      EXPECT_EQ(last[k], want[k]) << i << " " << k << ": " << last;
    }
  }
  // The prompts run together: a frame of another prompt comes before prompt 0's last.
  const auto last0 = std::find(order.rbegin(), order.rend(), 0);
  EXPECT_NE(std::find(order.begin(), last0.base(), 1), last0.base()) << s.text;

  // One prompt streamed says its index too.
  const Reply one = a.post("/completion", json{{"prompt", "Once"}, {"n_predict", 3}, {"stream", true}});
  std::vector<int> one_order;
  EXPECT_EQ(frames_by_index(one.text, &one_order).size(), 1u) << one.text;
  EXPECT_EQ(one_order.front(), 0);
}

}  // namespace
}  // namespace tessera
