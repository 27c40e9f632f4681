// llama-server's /completion and /infill behaviours over real HTTP against `tessera
// serve` (docs/server.md): post_sampling_probs, a stream of several prompts, and an
// /infill prompt cut to fit the batch and the context.
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
  // 64 tokens each: long enough that the handler reads the streams while they are being
  // generated (with 8, stories260K could finish every prompt before the first read, and
  // the frames then came prompt by prompt: a flaky order check on a loaded machine).
  json body = {{"prompt", prompts}, {"n_predict", 64}, {"temperature", 0}, {"ignore_eos", true}, {"cache_prompt", false}};
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

// ---- /infill cut to fit -------------------------------------------------------------

/// The ids of `text` on `a`'s model: special-token texts parsed or not, no BOS.
std::vector<int> ids_of(Api& a, const std::string& text, bool special) {
  const Reply r = a.post("/tokenize", json{{"content", text}, {"parse_special", special}});
  EXPECT_EQ(r.status, 200) << r.text;
  return r.body["tokens"].get<std::vector<int>>();
}

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
std::vector<int> last(const std::vector<int>& v, size_t n) {
  return {v.end() - std::ptrdiff_t(std::min(n, v.size())), v.end()};
}
std::vector<int> first(const std::vector<int>& v, size_t n) {
  return {v.begin(), v.begin() + std::ptrdiff_t(std::min(n, v.size()))};
}

/// The texts of an /infill request, and their tokens on one model (neither vocabulary
/// of the tests has a file separator llama.cpp knows, nor adds BOS: see
/// InfillLaysOutTheFimTokensAsLlamaServer).
struct Infill {
  std::string prefix, typed, suffix, extra;
  std::vector<int> t_extra, t_prefix, t_typed, t_suffix, pre, suf, mid;

  Infill(Api& a, const std::string& repo, int lines) {
    for (int i = 0; i < lines; ++i) {
      const std::string n = std::to_string(i);
      prefix.append("x").append(n).append(" = add(").append(n).append(", 1)\n");
      if (i % 2 == 1) continue;
      suffix.append("\nprint(add(").append(n).append(", 2))");
      extra.append("y").append(n).append(" = 1\n");
    }
    prefix += "def add(a, b):\n    return ";
    typed = "a";
    if (!repo.empty()) t_extra = concat(ids_of(a, repo, true), ids_of(a, "myproject\n", false));
    t_extra = concat(concat(t_extra, ids_of(a, "\n\n--- snippet ---\n\n", false)), ids_of(a, extra, false));
    t_prefix = ids_of(a, prefix, false);
    t_typed = ids_of(a, typed, false);
    t_suffix = ids_of(a, suffix, false);
    pre = ids_of(a, "<fim_prefix>", true);
    suf = ids_of(a, "<fim_suffix>", true);
    mid = ids_of(a, "<fim_middle>", true);
  }

  json body(int n_predict) const {
    return {{"input_prefix", prefix}, {"input_suffix", suffix}, {"prompt", typed},
            {"input_extra", {{{"filename", "util.py"}, {"text", extra}}}}, {"n_predict", n_predict},
            {"temperature", 0}, {"return_tokens", true}};
  }

  /// The layout with `extra` before the FIM tokens, `before` after FIM_PRE, `suffix` after FIM_SUF.
  std::vector<int> layout(const std::vector<int>& e, const std::vector<int>& before, const std::vector<int>& s) const {
    return concat(concat(concat(concat(concat(e, pre), before), suf), s), mid);
  }
};

/// `infill` answers as /completion does with `expected` as its prompt, cut (truncated).
void expect_same_as_completion(Api& a, const Reply& infill, const std::vector<int>& expected, const std::string& what) {
  ASSERT_EQ(infill.status, 200) << what << ": " << infill.text;
  EXPECT_EQ(infill.body["truncated"], true) << what << ": " << infill.text;
  EXPECT_EQ(infill.body["tokens_evaluated"], expected.size()) << what << ": " << infill.text;
  const Reply same = a.post("/completion", json{{"prompt", expected}, {"n_predict", 4}, {"temperature", 0},
                                                {"return_tokens", true}});
  ASSERT_EQ(same.status, 200) << same.text;
  EXPECT_EQ(infill.body["tokens"], same.body["tokens"]) << what;
  EXPECT_EQ(infill.body["content"], same.body["content"]) << what;
}

/// -b 64 -c 128 -n 20: llama-server's cuts. The prefix keeps its last 3 * (64 / 4) = 48
/// tokens, the suffix its first 64 / 4 - (2 + typed) tokens, the extra context its last
/// 128 - 64 - 2 * 20 = 24; the result fits, so nothing more is cut.
void check_batch_cuts(const std::string& model, const std::string& repo) {
  std::string error;
  auto server = ServerProcess::start({"-m", model, "-t", "2", "-np", "1", "-b", "64", "-c", "128", "-n", "20"}, &error);
  ASSERT_TRUE(server) << error;
  Api a(server->port(), "");
  const Infill in(a, repo, 12);
  ASSERT_GT(in.t_prefix.size(), 48u);
  ASSERT_GT(in.t_suffix.size(), 16u);
  ASSERT_GT(in.t_extra.size(), 24u);
  const std::vector<int> expected =
      in.layout(last(in.t_extra, 24), concat(last(in.t_prefix, 48), in.t_typed), first(in.t_suffix, 16 - 2 - in.t_typed.size()));
  ASSERT_LT(expected.size(), 128u);
  expect_same_as_completion(a, a.post("/infill", in.body(4)), expected, model);
  EXPECT_EQ(server->stop(), 0) << server->log();
}

/// -c 96 (-b 512): llama-server's cuts leave no extra context (96 - 512 + 2 < 0) and keep
/// the prefix and suffix (under 384 and 126 tokens), which still do not fit: the prompt
/// is cut to half the context, 48 tokens: 3 FIM tokens, a quarter of the other 45 (11)
/// for the start of the suffix, the rest (34) for the end of the prefix and typed text.
void check_context_cuts(const std::string& model, const std::string& repo) {
  std::string error;
  auto server = ServerProcess::start({"-m", model, "-t", "2", "-np", "1", "-c", "96"}, &error);
  ASSERT_TRUE(server) << error;
  Api a(server->port(), "");
  const Infill in(a, repo, 10);
  ASSERT_GT(in.t_prefix.size() + in.t_suffix.size(), 96u);
  ASSERT_GT(in.t_suffix.size(), 11u);
  const std::vector<int> expected = in.layout({}, last(concat(in.t_prefix, in.t_typed), 34), first(in.t_suffix, 11));
  expect_same_as_completion(a, a.post("/infill", in.body(4)), expected, model);

  // A short one is not cut (refact's repository line does go, as llama-server drops the
  // extra context when the context is smaller than a batch, but it is not the request's).
  const Reply small = a.post("/infill", json{{"input_prefix", "def f():\n"}, {"input_suffix", "\n"}, {"n_predict", 2}});
  ASSERT_EQ(small.status, 200) << small.text;
  EXPECT_EQ(small.body["truncated"], false) << small.text;
  EXPECT_EQ(server->stop(), 0) << server->log();
}

TEST(ServerHttpInfill, TooLongForTheBatchIsCutAsLlamaServerCutsIt) {
  TESSERA_REQUIRE_SHARED(starcoder, "archs/models/starcoder.gguf");
  check_batch_cuts(starcoder, "");
  TESSERA_REQUIRE_SHARED(refact, "archs/models/refact.gguf");
  check_batch_cuts(refact, "<reponame>");
}

TEST(ServerHttpInfill, TooLongForTheContextIsCutToHalfOfIt) {
  TESSERA_REQUIRE_SHARED(starcoder, "archs/models/starcoder.gguf");
  check_context_cuts(starcoder, "");
  TESSERA_REQUIRE_SHARED(refact, "archs/models/refact.gguf");
  check_context_cuts(refact, "<reponame>");
}

}  // namespace
}  // namespace tessera
