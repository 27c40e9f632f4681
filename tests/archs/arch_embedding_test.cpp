// The encoders of ../shared/archs2 (bert, nomic-bert) against the reference's pooled
// embeddings of the hello text (golden/*.hello.json: `embedding`, the mean of the last
// layer's output over every token, [CLS] and [SEP] included, not normalised): NMSE 1e-5
// at 1 and 2 threads; a batch of several texts equals each alone; a Q8_0 quantization is
// within 1e-3 of the F16 embedding; `tessera embed` and the server's /v1/embeddings give
// the same vector; an encoder refuses logits, chat and completions by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "archs/arch_test_util.h"
#include "common/runtime_test_util.h"
#include "common/test_util.h"
#include "golden/server_api.h"
#include "tessera/batch.h"
#include "tessera/context.h"
#include "tessera/embedding.h"
#include "tessera/model.h"
#include "tessera/quantize.h"
#include "tessera/tokenizer.h"

namespace tessera {
namespace {

using nlohmann::json;
using test::ArchCase;

constexpr const char* kHelloText = "Hello world, this is a test of the engine.";

json read_golden(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

/// The pooled embedding of each token list, all in one batch (sequence i: texts[i]) of a
/// fresh context, pooled as the file says.
std::vector<std::vector<float>> embed_batch(const Model& m, const std::vector<std::vector<TokenId>>& texts,
                                            int threads = 2) {
  ContextParams cp;
  cp.n_threads = threads;
  cp.embeddings = true;
  cp.n_ctx = 1024;
  cp.n_seq_max = int(texts.size());
  Result<std::unique_ptr<Context>> ctx = Context::create(m, cp);
  EXPECT_TRUE(ctx.is_ok()) << ctx.status().message();
  if (!ctx) return {};
  Batch batch;
  for (size_t s = 0; s < texts.size(); ++s) batch.add_sequence(texts[s], 0, SeqId(s), /*all_outputs=*/true);
  const Status decoded = (*ctx)->decode(batch);
  EXPECT_TRUE(decoded.is_ok()) << decoded.message();
  if (!decoded) return {};
  Result<Pooling> pooling = parse_pooling(m.info().pooling);
  EXPECT_TRUE(pooling.is_ok()) << m.info().pooling;
  std::vector<std::vector<float>> out;
  int64_t i = 0;
  for (const std::vector<TokenId>& t : texts) {
    std::vector<float> rows;
    for (size_t k = 0; k < t.size(); ++k, ++i) {
      const std::span<const float> e = (*ctx)->embeddings_at(i);
      rows.insert(rows.end(), e.begin(), e.end());
    }
    out.push_back(pool_embeddings(rows, m.info().n_embd, pooling ? *pooling : Pooling::Mean));
  }
  return out;
}

std::vector<float> embed_one(const Model& m, const std::vector<TokenId>& tokens, int threads = 2) {
  std::vector<std::vector<float>> v = embed_batch(m, {tokens}, threads);
  return v.empty() ? std::vector<float>() : v[0];
}

std::unique_ptr<Model> load(const std::string& path) {
  Result<std::unique_ptr<Model>> model = Model::load(path);
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return model ? std::move(*model) : nullptr;
}

class ArchEmbedding : public ::testing::TestWithParam<ArchCase> {};

TEST_P(ArchEmbedding, MatchesReference) {
  const ArchCase& c = GetParam();
  TESSERA_REQUIRE_SHARED(golden_path, c.golden_path());
  TESSERA_REQUIRE_SHARED(model_path, c.model_path());
  const json golden = read_golden(golden_path);
  auto m = load(model_path);
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->info().encoder);
  EXPECT_EQ(m->info().pooling, golden["pooling"].get<std::string>());
  ASSERT_EQ(golden["n_embd"].get<int64_t>(), m->info().n_embd);
  const auto prompt = golden["prompt_ids"].get<std::vector<TokenId>>();
  const auto ref = golden["embedding"].get<std::vector<float>>();
  ASSERT_NE(m->tokenizer(), nullptr);
  EXPECT_EQ(m->tokenizer()->encode(kHelloText, true, false), prompt) << "tokenization of the hello text";

  std::vector<float> by_threads[2];
  for (int threads : {1, 2}) {
    std::vector<float>& e = by_threads[threads - 1];
    e = embed_one(*m, prompt, threads);
    ASSERT_EQ(e.size(), ref.size());
    const double err = test::nmse(e, ref);
    EXPECT_LE(err, 1e-5) << threads << " threads";
    char text[32];
    std::snprintf(text, sizeof text, "%.3e", err);
    RecordProperty("nmse_t" + std::to_string(threads), text);
    std::printf("[ nmse     ] %s, %d threads: %s\n", c.arch.c_str(), threads, text);
  }
  EXPECT_LE(test::nmse(by_threads[0], by_threads[1]), 1e-10) << "1 vs 2 threads";
}

TEST_P(ArchEmbedding, BatchOfTextsEqualsEachAlone) {
  const ArchCase& c = GetParam();
  TESSERA_REQUIRE_SHARED(model_path, c.model_path());
  auto m = load(model_path);
  ASSERT_TRUE(m);
  const Tokenizer& tok = *m->tokenizer();
  const std::vector<std::vector<TokenId>> texts = {
      tok.encode(kHelloText, true), tok.encode("A second, longer text: the cat sat on the mat all day long.", true),
      tok.encode("short", true), tok.encode("Caf\u00e9 au lait \u6771\u4eac!", true)};
  const std::vector<std::vector<float>> together = embed_batch(*m, texts);
  ASSERT_EQ(together.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_LE(test::nmse(together[i], embed_one(*m, texts[i])), 1e-10) << "text " << i;
  }
  EXPECT_GT(test::nmse(together[0], together[1]), 1e-3);  // different texts, different vectors
}

TEST_P(ArchEmbedding, Q8_0IsCloseToF16) {
  const ArchCase& c = GetParam();
  TESSERA_REQUIRE_SHARED(model_path, c.model_path());
  const std::string out = ::testing::TempDir() + "/" + c.arch + "-Q8_0.gguf";
  QuantizeParams qp;
  qp.type_name = "Q8_0";
  Result<QuantizeReport> report = quantize_model(model_path, out, qp);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  auto f16 = load(model_path);
  auto q8 = load(out);
  ASSERT_TRUE(f16 && q8);
  const std::vector<TokenId> prompt = f16->tokenizer()->encode(kHelloText, true);
  const double err = test::nmse(embed_one(*q8, prompt), embed_one(*f16, prompt));
  EXPECT_LE(err, 1e-3);
  EXPECT_GT(err, 0.0);  // the weights did change
  std::printf("[ nmse     ] %s Q8_0 vs F16: %.3e\n", c.arch.c_str(), err);
  std::filesystem::remove(out);
}

TEST_P(ArchEmbedding, RefusesLogitsAndSplitPasses) {
  const ArchCase& c = GetParam();
  TESSERA_REQUIRE_SHARED(model_path, c.model_path());
  auto m = load(model_path);
  ASSERT_TRUE(m);
  ContextParams cp;
  cp.n_ctx = 64;
  Result<std::unique_ptr<Context>> no_embd = Context::create(*m, cp);
  ASSERT_FALSE(no_embd.is_ok());
  EXPECT_NE(no_embd.status().message().find("encoder"), std::string::npos) << no_embd.status().message();
  // Non-causal attention sees a sequence whole: a batch larger than one pass is refused.
  cp.embeddings = true;
  cp.n_batch = 4;
  Result<std::unique_ptr<Context>> ctx = Context::create(*m, cp);
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().message();
  const Status s = (*ctx)->decode(m->tokenizer()->encode(kHelloText, true));
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("not causal"), std::string::npos) << s.message();
}

TEST_P(ArchEmbedding, EmbedCommandPrintsTheReferenceVector) {
  const ArchCase& c = GetParam();
  TESSERA_REQUIRE_SHARED(golden_path, c.golden_path());
  TESSERA_REQUIRE_SHARED(model_path, c.model_path());
  const json golden = read_golden(golden_path);
  const test::CliOutput r = test::run_cli("embed -m '" + model_path + "' -p '" + kHelloText + "' -t 2");
  ASSERT_EQ(r.status, 0) << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["pooling"], "mean");  // the file's pooling_type
  EXPECT_EQ(out["n_tokens"], golden["prompt_ids"].size());
  EXPECT_LE(test::nmse(out["embedding"].get<std::vector<float>>(), golden["embedding"].get<std::vector<float>>()), 1e-5);
  const test::CliOutput run = test::run_cli("run -m '" + model_path + "' -p hi -n 2");
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.err.find("encoder"), std::string::npos) << run.err;
}

INSTANTIATE_TEST_SUITE_P(Archs, ArchEmbedding, ::testing::ValuesIn(test::arch_embedding_cases()),
                         test::arch_case_name);

TEST(ArchEmbeddingServer, BertServesEmbeddingsAndRefusesText) {
  TESSERA_REQUIRE_SHARED(golden_path, "archs2/golden/bert.hello.json");
  TESSERA_REQUIRE_SHARED(model_path, "archs2/models/bert.gguf");
  const json golden = read_golden(golden_path);
  std::vector<float> ref = golden["embedding"].get<std::vector<float>>();
  normalize_l2(ref);
  std::string error;
  auto server = test::ServerProcess::start({"-m", model_path, "-t", "2", "-np", "2"}, &error);  // no --embeddings
  ASSERT_TRUE(server) << error;
  test::Api a(server->port(), "");
  const test::Reply oai = a.post("/v1/embeddings", json{{"input", {kHelloText, "another text"}}});
  ASSERT_EQ(oai.status, 200) << oai.text;
  ASSERT_EQ(oai.body["data"].size(), 2u);
  const std::vector<float> v = oai.body["data"][0]["embedding"].get<std::vector<float>>();
  EXPECT_LE(test::nmse(v, ref), 1e-5);  // mean pooled as the file says, then normalised
  const test::Reply rows = a.post("/embedding", json{{"content", kHelloText}, {"pooling", "none"}});
  ASSERT_EQ(rows.status, 200) << rows.text;
  EXPECT_EQ(rows.body[0]["embedding"].size(), golden["prompt_ids"].size());
  const test::Reply chat = a.post("/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  test::expect_error(chat, 501);
  EXPECT_NE(chat.text.find("encoder"), std::string::npos) << chat.text;
  test::expect_error(a.post("/v1/completions", json{{"prompt", "hi"}}), 501);
  EXPECT_EQ(server->stop(), 0) << server->log();
}

}  // namespace
}  // namespace tessera
