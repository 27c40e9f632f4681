// A BERT reranker (pooling_type rank, a classification head cls + cls.output) against the
// reference's scores. ../shared has no reranker file, so the test writes one with
// `tessera synth --arch bert --rerank` (F32, the bge vocabulary of archs2/bert.gguf, seed 7:
// deterministic), and kReference holds what llama.cpp c392e5094 computes on that file:
//   llama-embedding -m rr.gguf --pooling rank -t 2 -c 512 -b 512 -ub 512 --embd-normalize -1
//     --embd-output-format json -p "QUERY[SEP][SEP]DOCUMENT\n..."   (one line per pair)
// ([CLS] query [SEP] [SEP] document [SEP], as llama-server forms a rerank pair; the first
// element of each `embedding` is the score, printed to 7 decimals). The reference keeps
// the encoder's K/V in F16 where tessera keeps F32, hence the 5e-6 bound; the scores of
// different documents differ by 1.7e-4 and more.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/runtime_test_util.h"
#include "common/test_util.h"
#include "golden/server_api.h"
#include "tessera/model.h"
#include "tessera/quantize.h"

namespace tessera {
namespace {

using nlohmann::json;

struct Pair {
  const char* query;
  const char* document;
  double score;  // llama.cpp's
};

constexpr Pair kReference[] = {
    {"what is a panda?", "The giant panda is a bear species endemic to China.", 0.0237767},
    {"what is a panda?", "hi", 0.0253842},
    {"how do trains work?", "A steam engine burns coal to boil water, and the steam pushes pistons.", 0.0242961},
    {"how do trains work?", "The cat sat on the mat and looked at the dog.", 0.0239492},
};
constexpr double kTolerance = 5e-6;

/// The reranker file, written once per test binary.
std::string reranker(const std::string& vocab) {
  static const std::string path = [&] {
    const std::string p = ::testing::TempDir() + "/tessera-reranker-" + std::to_string(::getpid()) + ".gguf";
    const test::CliOutput r =
        test::run_cli("synth --arch bert --rerank --vocab-from '" + vocab +
                      "' --n-embd 128 --n-layer 2 --n-head 4 --n-head-kv 4 --n-ff 384 --n-ctx 512 --type f32 "
                      "--seed 7 -o '" + p + "'");
    EXPECT_EQ(r.status, 0) << r.err;
    return p;
  }();
  return path;
}

TEST(ArchRerank, EmbedScoresPairsAsTheReference) {
  TESSERA_REQUIRE_SHARED(vocab, "archs2/models/bert.gguf");
  const std::string model = reranker(vocab);
  for (const Pair& p : kReference) {
    const test::CliOutput r = test::run_cli("embed -m '" + model + "' --query '" + p.query + "' -p '" + p.document +
                                            "' -t 2");
    ASSERT_EQ(r.status, 0) << r.err;
    const json out = json::parse(r.out);
    EXPECT_EQ(out["pooling"], "rank");  // the file's pooling_type
    EXPECT_NEAR(out["score"].get<double>(), p.score, kTolerance) << p.query << " / " << p.document;
  }
  // --query needs rank pooling; rank pooling needs a head.
  const test::CliOutput mean = test::run_cli("embed -m '" + model + "' --pooling mean --query q -p d");
  EXPECT_NE(mean.status, 0);
  EXPECT_NE(mean.err.find("pooling rank"), std::string::npos) << mean.err;
  const test::CliOutput headless = test::run_cli("embed -m '" + vocab + "' --pooling rank -p d");
  EXPECT_NE(headless.status, 0);
  EXPECT_NE(headless.err.find("classification head"), std::string::npos) << headless.err;
}

TEST(ArchRerank, Q8_0ScoresAreClose) {
  TESSERA_REQUIRE_SHARED(vocab, "archs2/models/bert.gguf");
  const std::string model = reranker(vocab);
  const std::string q8 = ::testing::TempDir() + "/tessera-reranker-q8.gguf";
  QuantizeParams qp;
  qp.type_name = "Q8_0";
  Result<QuantizeReport> report = quantize_model(model, q8, qp);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  Result<std::unique_ptr<Model>> m = Model::load(q8);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_TRUE((*m)->info().rank_head);
  for (const Pair& p : kReference) {
    const test::CliOutput r = test::run_cli("embed -m '" + q8 + "' --query '" + p.query + "' -p '" + p.document + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    // The reference's own Q8_0 of this file (its activations quantized in the head too)
    // is up to 7.8e-4 from its F32 scores on these pairs; tessera's up to 4.9e-4.
    EXPECT_NEAR(json::parse(r.out)["score"].get<double>(), p.score, 1.5e-3) << p.document;
  }
  std::filesystem::remove(q8);
}

TEST(ArchRerank, ServerRanksDocumentsInJinasAndTeisShapes) {
  TESSERA_REQUIRE_SHARED(vocab, "archs2/models/bert.gguf");
  const std::string model = reranker(vocab);
  std::string error;
  auto server = test::ServerProcess::start({"-m", model, "-t", "2", "-np", "2", "--reranking"}, &error);
  ASSERT_TRUE(server) << error;
  test::Api a(server->port(), "");
  // The trains query against all four documents: sorted by score, index naming each.
  json docs = json::array();
  for (const Pair& p : kReference) docs.push_back(p.document);
  const test::Reply jina = a.post("/v1/rerank", json{{"model", "x"}, {"query", "how do trains work?"},
                                                     {"documents", docs}, {"top_n", 3}, {"return_documents", true}});
  ASSERT_EQ(jina.status, 200) << jina.text;
  EXPECT_EQ(jina.body["object"], "list");
  EXPECT_GT(jina.body["usage"]["prompt_tokens"].get<int>(), 0);
  const json& results = jina.body["results"];
  ASSERT_EQ(results.size(), 3u);  // top_n
  for (size_t i = 0; i < results.size(); ++i) {
    const size_t index = results[i]["index"].get<size_t>();
    ASSERT_LT(index, docs.size());
    EXPECT_EQ(results[i]["document"]["text"], docs[index]);
    if (i > 0) {
      EXPECT_GE(results[i - 1]["relevance_score"].get<double>(), results[i]["relevance_score"].get<double>());
    }
    if (index >= 2) {  // the pairs the reference scored with this query
      EXPECT_NEAR(results[i]["relevance_score"].get<double>(), kReference[index].score, kTolerance);
    }
  }
  // TEI: `texts`, a bare array; /rerank is the same endpoint.
  const test::Reply tei = a.post("/rerank", json{{"query", "what is a panda?"},
                                                 {"texts", {kReference[0].document, kReference[1].document}},
                                                 {"return_text", true}});
  ASSERT_EQ(tei.status, 200) << tei.text;
  ASSERT_TRUE(tei.body.is_array() && tei.body.size() == 2) << tei.text;
  EXPECT_EQ(tei.body[0]["index"], 1);  // "hi" scores higher
  EXPECT_NEAR(tei.body[0]["score"].get<double>(), kReference[1].score, kTolerance);
  EXPECT_EQ(tei.body[1]["text"], kReference[0].document);
  // Bad requests are named; the server goes on.
  test::expect_error(a.post("/v1/rerank", json{{"documents", docs}}), 400, "query");
  test::expect_error(a.post("/v1/rerank", json{{"query", "q"}, {"documents", json::array()}}), 400, "documents");
  test::expect_error(a.post("/v1/rerank", json{{"query", "q"}, {"documents", {"a", 3}}}), 400, "documents[1]");
  test::expect_error(a.post("/v1/rerank", json{{"query", "q"}, {"documents", docs}, {"top_n", 0}}), 400, "top_n");
  const test::Reply embd = a.post("/v1/embeddings", json{{"input", "hi"}});
  ASSERT_EQ(embd.status, 200) << embd.text;  // the file's pooling: rank, the score
  EXPECT_EQ(embd.body["data"][0]["embedding"].size(), 1u);
  EXPECT_EQ(server->stop(), 0) << server->log();
}

TEST(ArchRerank, AModelWithoutAHeadAnswers501) {
  TESSERA_REQUIRE_SHARED(model_path, "archs2/models/bert.gguf");
  std::string error;
  auto server = test::ServerProcess::start({"-m", model_path, "-t", "2"}, &error);
  ASSERT_TRUE(server) << error;
  test::Api a(server->port(), "");
  const test::Reply r = a.post("/v1/rerank", json{{"query", "q"}, {"documents", {"d"}}});
  test::expect_error(r, 501);
  EXPECT_NE(r.text.find("not a reranker"), std::string::npos) << r.text;
  EXPECT_EQ(server->stop(), 0) << server->log();
}

}  // namespace
}  // namespace tessera
