// Speculative decoding on the built-in model (models/tessera-kjv-6m-q8_0.gguf): at
// temperature 0 the tokens are those of plain decoding, with a draft model (the model
// itself, or a Q4_0 requantization of it) and with n-gram lookup, in the runtime (where
// the cache is checked to hold what plain decoding leaves), in the serving engine, and
// through `tessera run`; a draft model of another vocabulary is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "golden/server_api.h"

#include "common/runtime_test_util.h"
#include "common/serving_test_util.h"
#include "common/test_util.h"
#include "tessera/serving.h"
#include "tessera/speculative.h"
#include "tessera/tokenizer.h"

namespace tessera {
namespace {

const std::string kModelFile = std::string(TESSERA_SOURCE_DIR) + "/models/tessera-kjv-6m-q8_0.gguf";
// Verses that repeat: lookup finds its n-grams in the prompt and in its own output.
const char* kRepetitive =
    "And the evening and the morning were the first day. And the evening and the morning were the second day. "
    "And the evening and the morning were the third day. And the evening and the morning were the";

const Model& builtin() {
  static const std::unique_ptr<Model> model = [] {
    Result<std::unique_ptr<Model>> m = Model::load(kModelFile);
    EXPECT_TRUE(m.is_ok()) << m.status().message();
    return m ? std::move(*m) : nullptr;
  }();
  return *model;
}

std::unique_ptr<Context> context(const Model& m, int64_t n_ctx) {
  ContextParams cp;
  cp.n_ctx = n_ctx;
  cp.n_threads = 1;
  Result<std::unique_ptr<Context>> c = Context::create(m, cp);
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  return c ? std::move(*c) : nullptr;
}

SamplerChain greedy_chain(const Model& m) {
  SamplerParams sp;
  sp.temperature = 0.0f;
  return std::move(*SamplerChain::create(sp, int32_t(m.info().n_vocab)));
}

/// n greedy tokens after `prompt`, decoded one at a time; the last one is not decoded.
std::vector<TokenId> plain_greedy(Context& c, const std::vector<TokenId>& prompt, int n) {
  EXPECT_TRUE(c.decode(prompt).is_ok());
  std::vector<TokenId> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(argmax(c.logits()));
    if (i + 1 < n) {
      EXPECT_TRUE(c.decode(std::span(&out.back(), 1)).is_ok());
    }
  }
  return out;
}

/// n greedy tokens by speculative steps (the last one not decoded, as above).
std::vector<TokenId> speculative_greedy(Context& c, const std::vector<TokenId>& prompt, int n, Drafter& drafter,
                                        SpeculativeStats& stats) {
  EXPECT_TRUE(c.decode(prompt).is_ok());
  SamplerChain chain = greedy_chain(builtin());
  std::mt19937_64 rng(1);
  std::vector<TokenId> out = {argmax(c.logits())};
  SpeculativeParams params;
  while (int(out.size()) < n) {
    Result<Verdict> v = speculative_step(c, 0, out.back(), &drafter, params, n - int(out.size()) - 1, chain, rng,
                                         nullptr, stats);
    EXPECT_TRUE(v.is_ok()) << v.status().message();
    if (!v) break;
    out.insert(out.end(), v->tokens.begin(), v->tokens.end());
  }
  return out;
}

void expect_same_as_plain(Drafter& drafter, const std::string& text, int n, SpeculativeStats& stats) {
  const Model& m = builtin();
  const std::vector<TokenId> prompt = m.tokenizer()->encode(text, true);
  auto plain = context(m, 256), spec = context(m, 256);
  const std::vector<TokenId> want = plain_greedy(*plain, prompt, n);
  const std::vector<TokenId> got = speculative_greedy(*spec, prompt, n, drafter, stats);
  EXPECT_EQ(got, want);
  // The cache holds what plain decoding leaves: the same tokens, cells and next logits.
  EXPECT_EQ(spec->seq_tokens(0), plain->seq_tokens(0));
  EXPECT_EQ(spec->n_cells_used(), plain->n_cells_used());
  ASSERT_TRUE(plain->decode(std::span(&want.back(), 1)).is_ok());
  ASSERT_TRUE(spec->decode(std::span(&want.back(), 1)).is_ok());
  // Keys and values computed in a batch differ from a lone token's at rounding level
  // (runtime_batch_test), and storing them in the F16 cache can round one of them to the
  // neighbouring F16 value: the next logits agree far below what a wrong cell would give.
  EXPECT_LE(test::nmse(spec->logits(), plain->logits()), 5e-5);
}

TEST(RuntimeSpeculative, GreedySelfDraftIsPlainDecoding) {
  auto draft_ctx = context(builtin(), 256);
  Result<std::unique_ptr<Drafter>> d = make_model_drafter(*draft_ctx, 0, 256, SpeculativeParams{}, nullptr, 0);
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  SpeculativeStats stats;
  expect_same_as_plain(**d, "And God said", 60, stats);
  // The model drafting for itself: nearly every drafted token is accepted (all but those
  // where the batch's rounding turns a near tie).
  EXPECT_GT(stats.n_drafted, 20);
  EXPECT_GT(stats.acceptance(), 0.9) << stats.n_accepted << " of " << stats.n_drafted;
}

TEST(RuntimeSpeculative, GreedyLookupIsPlainDecoding) {
  std::unique_ptr<Drafter> d = make_lookup_drafter();
  SpeculativeStats stats;
  expect_same_as_plain(*d, kRepetitive, 60, stats);
  EXPECT_GT(stats.n_accepted, 10) << stats.n_drafted << " drafted";
}

// ---- the serving engine ----------------------------------------------------------------

struct Served {
  std::vector<std::vector<TokenId>> tokens;
  serving::EngineStats stats;
  std::vector<serving::Usage> usage;
};

/// Greedy requests on 3 slots, submitted two steps apart (so that drafting slots share
/// batches with prompt chunks), with a small batch budget.
Served serve(serving::EngineParams p, const std::vector<std::string>& prompts, int max_tokens) {
  p.n_parallel = 3;
  p.n_ctx_per_seq = 256;
  p.batch_budget = 32;
  std::unique_ptr<serving::Engine> e = test::make_engine(builtin(), p);
  Served out;
  if (!e) return out;
  std::vector<std::shared_ptr<serving::Stream>> streams;
  out.tokens.resize(prompts.size());
  for (int step = 0; step < 5000; ++step) {
    if (step % 2 == 0 && streams.size() < prompts.size()) {
      serving::Submitted s = e->submit(test::greedy(*builtin().tokenizer(), prompts[streams.size()], max_tokens));
      EXPECT_NE(s.stream, nullptr) << s.message;
      streams.push_back(s.stream);
    }
    e->step();
    for (size_t i = 0; i < streams.size(); ++i) {
      for (const serving::Event& ev : streams[i]->wait(std::chrono::milliseconds(0))) {
        if (ev.kind == serving::Event::Kind::Token) out.tokens[i].push_back(ev.token);
        EXPECT_NE(ev.kind, serving::Event::Kind::Error) << ev.message;
      }
    }
    if (streams.size() == prompts.size() &&
        std::all_of(streams.begin(), streams.end(), [](const auto& s) { return s->done(); })) {
      break;
    }
  }
  for (const auto& s : streams) out.usage.push_back(s->usage());
  out.stats = e->stats();
  return out;
}

const std::vector<std::string> kServed = {kRepetitive, "And God said", "In the beginning God created",
                                          kRepetitive, "And the LORD spake unto Moses, saying"};

TEST(ServingSpeculative, LookupAndDraftModelGiveThePlainTokens) {
  const Served plain = serve({}, kServed, 40);
  serving::EngineParams lookup;
  lookup.lookup = true;
  const Served l = serve(lookup, kServed, 40);
  EXPECT_EQ(l.tokens, plain.tokens);
  EXPECT_GT(l.stats.draft_accepted, 10);
  // Each verification gives its accepted tokens and one of the target's (less at an end).
  EXPECT_LE(l.stats.spec_tokens, l.stats.spec_steps + l.stats.draft_accepted);
  EXPECT_GT(l.stats.spec_tokens, l.stats.spec_steps);
  EXPECT_GT(l.usage[0].draft_tokens, 0);
  // The repeated prompt (request 3) reused the cells request 0 left: speculation left
  // the cache as plain decoding would, or the cached prefix would give other tokens.
  EXPECT_GT(l.usage[3].cached_tokens, 0);
  serving::EngineParams self;
  self.draft_model = &builtin();
  const Served d = serve(self, kServed, 40);
  EXPECT_EQ(d.tokens, plain.tokens);
  EXPECT_GT(d.stats.draft_accepted, 0.9 * double(d.stats.draft_tokens));
  EXPECT_EQ(plain.stats.draft_tokens, 0);
}

// ---- the command line ------------------------------------------------------------------

/// The token ids `run --ids` printed.
std::string ids_of(const test::CliOutput& o) { return o.out; }

TEST(SpeculativeCli, GreedyRunIsTheSameWithADraftModelOrLookup) {
  const std::string args = "run -m " + kModelFile + " --ids --temp 0 -t 1 -n 48 -p '" + std::string(kRepetitive) + "'";
  const test::CliOutput plain = test::run_cli(args);
  ASSERT_EQ(plain.status, 0) << plain.err;
  // A requantized copy (Q4_0 of the Q8_0 file) as a draft: a cheaper model that agrees
  // with the target on most tokens.
  const std::string q4 = test::write_temp_file("kjv_q4_0.gguf", "");
  const test::CliOutput quant = test::run_cli("quantize " + kModelFile + " " + q4 + " Q4_0 --allow-requantize -t 1");
  ASSERT_EQ(quant.status, 0) << quant.err;
  for (const std::string& extra :
       std::vector<std::string>{" -md " + kModelFile, " -md " + q4, " --lookup", " --lookup --draft-max 3",
                                " -md " + q4 + " --draft-max 4 --draft-min 2 --draft-p-min 0.5"}) {
    const test::CliOutput spec = test::run_cli(args + extra);
    ASSERT_EQ(spec.status, 0) << extra << "\n" << spec.err;
    EXPECT_EQ(ids_of(spec), ids_of(plain)) << extra;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(spec.err, m, std::regex("speculative \\((lookup|draft model)\\): [0-9]+ steps, "
                                                          "([0-9]+) tokens drafted, ([0-9]+) accepted")))
        << spec.err;
    EXPECT_GT(std::stoi(m[3].str()), 0) << extra << ": " << spec.err;
  }
}

// A context of 64 cells fills and shifts several times in 120 tokens: the speculative
// steps stop at its end (a draft never outgrows it) and shift at the same token.
TEST(SpeculativeCli, GreedyRunShiftsTheContextAsPlainDecoding) {
  const std::string args = "run -m " + kModelFile + " --ids --temp 0 -t 1 -n 120 -c 64 --ignore-eos -p 'And God said'";
  const test::CliOutput plain = test::run_cli(args);
  ASSERT_EQ(plain.status, 0) << plain.err;
  for (const std::string& extra : std::vector<std::string>{" --lookup", " -md " + kModelFile}) {
    const test::CliOutput spec = test::run_cli(args + extra);
    ASSERT_EQ(spec.status, 0) << extra << "\n" << spec.err;
    EXPECT_EQ(spec.out, plain.out) << extra;
  }
}

TEST(SpeculativeCli, SampledRunsRepeatWithTheirSeed) {
  const std::string args = "run -m " + kModelFile + " --ids --temp 0.8 -s 7 -t 1 -n 32 --ignore-eos -p 'And God said'";
  for (const std::string& extra : std::vector<std::string>{" -md " + kModelFile, " --lookup"}) {
    const test::CliOutput a = test::run_cli(args + extra), b = test::run_cli(args + extra);
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(a.out, b.out) << extra;
    // -n is kept exactly: 32 ids.
    EXPECT_EQ(std::count(a.out.begin(), a.out.end(), ' ') + 1, 32) << a.out;
  }
}

TEST(SpeculativeCli, ADraftOfAnotherVocabularyIsRefused) {
  TESSERA_REQUIRE_SHARED(other, "models/stories260K.gguf");
  const test::CliOutput o = test::run_cli("run -m " + kModelFile + " -md " + other + " -p x -n 2 -t 1");
  EXPECT_EQ(o.status, 1) << o.err;
  EXPECT_NE(o.err.find("stories260K.gguf: draft model: its vocabulary does not match"), std::string::npos) << o.err;
  serving::EngineParams p;
  Result<std::unique_ptr<Model>> m = Model::load(other);
  ASSERT_TRUE(m.is_ok());
  p.draft_model = m->get();
  Result<std::unique_ptr<serving::Engine>> e = serving::Engine::create(builtin(), p);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("vocabulary does not match"), std::string::npos) << e.status().message();
  // Flags: -md and --lookup together, a draft size of 0.
  EXPECT_EQ(test::run_cli("run -md " + kModelFile + " --lookup -p x -n 2").status, 2);
  EXPECT_EQ(test::run_cli("run --lookup --draft-max 0 -p x -n 2").status, 2);
}

// ---- the server ------------------------------------------------------------------------

TEST(ServerSpeculative, CompletionIsPlainAndCountedInTimingsAndMetrics) {
  std::string error;
  auto server = test::ServerProcess::start({"-m", kModelFile, "-md", kModelFile, "-t", "1", "-np", "2", "--metrics"},
                                           &error);
  ASSERT_TRUE(server) << error;
  test::Api api(server->port(), "");
  const test::Reply r =
      api.post("/completion", test::json{{"prompt", "And God said"}, {"n_predict", 24}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.text;
  const test::CliOutput run = test::run_cli("run -m " + kModelFile + " -p 'And God said' -n 24 --temp 0 -t 1");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "And God said" + r.body["content"].get<std::string>() + "\n");
  EXPECT_GT(r.body["timings"]["draft_n"].get<int64_t>(), 0) << r.text;
  EXPECT_GT(r.body["timings"]["draft_n_accepted"].get<int64_t>(), 0) << r.text;
  const test::Reply m = api.get("/metrics");
  ASSERT_EQ(m.status, 200) << m.text;
  std::smatch drafted;
  ASSERT_TRUE(std::regex_search(m.text, drafted, std::regex("\ntessera_draft_tokens_total ([0-9]+)"))) << m.text;
  EXPECT_GT(std::stoi(drafted[1].str()), 0);
  EXPECT_NE(m.text.find("\ntessera_speculative_tokens_per_step "), std::string::npos) << m.text;
  EXPECT_EQ(server->stop(), 0) << server->log();
}

}  // namespace
}  // namespace tessera
