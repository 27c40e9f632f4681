// The serving Engine without HTTP: continuous batching, the shared prefix cache,
// admission, cancellation and eviction give every request what it gets alone.
#include <gtest/gtest.h>

#include <map>

#include "common/runtime_test_util.h"
#include "common/serving_test_util.h"
#include "tessera/serving.h"
#include "tessera/tokenizer.h"

namespace tessera::serving {
namespace {

struct Outcome {
  std::vector<std::vector<TokenId>> tokens;  // per choice
  std::vector<std::string> text;
  std::vector<FinishReason> finish;
  std::vector<std::string> stop_word;
  Usage usage;
  bool error = false;
};

/// Takes the pending events of `s` into `o`.
void drain(Stream& s, Outcome& o, size_t n_choices) {
  o.tokens.resize(n_choices);
  o.text.resize(n_choices);
  o.finish.resize(n_choices, FinishReason::Error);
  o.stop_word.resize(n_choices);
  for (const Event& e : s.wait(std::chrono::milliseconds(0))) {
    if (e.kind == Event::Kind::Token) o.tokens[size_t(e.choice)].push_back(e.token);
    if (e.kind == Event::Kind::Token || e.kind == Event::Kind::ChoiceDone) o.text[size_t(e.choice)] += e.text;
    if (e.kind == Event::Kind::ChoiceDone) o.finish[size_t(e.choice)] = e.finish;
    if (e.kind == Event::Kind::ChoiceDone) o.stop_word[size_t(e.choice)] = e.stop_word;
    if (e.kind == Event::Kind::Error) o.error = true;
  }
  if (s.done()) o.usage = s.usage();
}

using test::greedy;
using test::make_engine;

/// Runs `r` alone on a fresh one-slot engine without a prefix cache (a KV cache of
/// `type_k` / `type_v`).
Outcome alone(const Model& m, const GenerationRequest& r, DType type_k = DType::F16, DType type_v = DType::F16) {
  EngineParams p;
  p.type_k = type_k;
  p.type_v = type_v;
  p.n_parallel = std::max(1, r.n_choices);
  p.prefix_cache = false;
  p.n_ctx_per_seq = 256;
  std::unique_ptr<Engine> e = make_engine(m, p);
  Submitted s = e->submit(r);
  EXPECT_NE(s.stream, nullptr) << s.message;
  Outcome o;
  for (int i = 0; i < 10000 && !s.stream->done(); ++i) e->step();
  drain(*s.stream, o, size_t(r.n_choices));
  EXPECT_TRUE(s.stream->done());
  return o;
}

const char* kPrompts[] = {"Once upon a time", "The little dog ran to the park and", "Lily",
                          "One day, a big red ball rolled", "Tom and his mom", "There was a small bird",
                          "The sun was hot and the cat was sleeping under the tree", "A girl named Sue"};

/// 8 requests of different lengths, submitted at different steps, on 3 slots.
void check_staggered(const Model& m, bool prefix_cache) {
  const Tokenizer& tok = *m.tokenizer();
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 8; ++i) reqs.push_back(greedy(tok, kPrompts[i], 4 + 3 * i));
  EngineParams p;
  p.n_parallel = 3;
  p.prefix_cache = prefix_cache;
  p.n_ctx_per_seq = 256;
  p.batch_budget = 8;  // long prompts are split over steps
  std::unique_ptr<Engine> e = make_engine(m, p);
  std::vector<std::shared_ptr<Stream>> streams;
  std::vector<Outcome> got(reqs.size());
  for (int step = 0; step < 2000; ++step) {
    if (step % 3 == 0 && streams.size() < reqs.size()) {  // one more request every 3 steps
      Submitted s = e->submit(reqs[streams.size()]);
      ASSERT_NE(s.stream, nullptr) << s.message;
      streams.push_back(s.stream);
    }
    e->step();
    for (size_t i = 0; i < streams.size(); ++i) drain(*streams[i], got[i], 1);
    if (streams.size() == reqs.size() &&
        std::all_of(streams.begin(), streams.end(), [](const auto& s) { return s->done(); })) {
      break;
    }
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_TRUE(streams[i]->done()) << "request " << i;
    const Outcome ref = alone(m, reqs[i]);
    EXPECT_EQ(got[i].tokens[0], ref.tokens[0]) << "request " << i << " cache " << prefix_cache;
    EXPECT_EQ(got[i].text[0], ref.text[0]) << "request " << i;
    EXPECT_EQ(got[i].usage.prompt_tokens, int64_t(reqs[i].prompt.size()));
    EXPECT_EQ(got[i].usage.completion_tokens, int64_t(got[i].tokens[0].size()));
  }
  EXPECT_EQ(e->stats().running, 0);
}

TEST(ServingEngine, StaggeredRequestsMatchAloneStories) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  check_staggered(*m, false);
  check_staggered(*m, true);
}

TEST(ServingEngine, StaggeredRequestsMatchAloneMiniLlama) {
  const Model* m = test::shared_model("mini-llama-Q4_0.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/mini-llama-Q4_0.gguf";
  check_staggered(*m, false);
  check_staggered(*m, true);
}

/// Runs `r` on `e` to the end.
Outcome run_to_end(Engine& e, const GenerationRequest& r) {
  Submitted s = e.submit(r);
  EXPECT_NE(s.stream, nullptr) << s.message;
  Outcome o;
  if (!s.stream) return o;
  for (int i = 0; i < 10000 && !s.stream->done(); ++i) e.step();
  drain(*s.stream, o, size_t(r.n_choices));
  return o;
}

TEST(ServingEngine, SharedPrefixIsReusedAndGivesTheSameTokens) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  const Tokenizer& tok = *m->tokenizer();
  EngineParams p;
  p.n_parallel = 2;
  p.n_ctx_per_seq = 256;
  std::unique_ptr<Engine> e = make_engine(*m, p);
  const std::string system = "Once upon a time, there was a little girl named Lily. She loved to play outside.";
  const GenerationRequest a = greedy(tok, system + " One day", 10);
  const GenerationRequest b = greedy(tok, system + " Her friend", 10);
  const Outcome first = run_to_end(*e, a);
  EXPECT_EQ(first.usage.cached_tokens, 0);
  const Outcome second = run_to_end(*e, b);
  // b shares everything up to the end of the system text with a's cached cells.
  const size_t common = size_t(std::mismatch(a.prompt.begin(), a.prompt.end(), b.prompt.begin()).first -
                               a.prompt.begin());
  EXPECT_GE(common, 10u);
  EXPECT_EQ(second.usage.cached_tokens, int64_t(common));
  EXPECT_EQ(second.tokens[0], alone(*m, b).tokens[0]);
  // The same prompt again: all but its last token come from the cache.
  const Outcome again = run_to_end(*e, a);
  EXPECT_EQ(again.usage.cached_tokens, int64_t(a.prompt.size()) - 1);
  EXPECT_EQ(again.tokens[0], first.tokens[0]);
  EXPECT_GE(e->stats().cached_prefixes, 1);
}

// The prefix cache with quantized (and BF16) KV caches, on the built-in model (heads of
// 32): cached cells are copied as stored, and a reused prefix gives the tokens the
// request gets alone with the same cache types.
TEST(ServingEngine, SharedPrefixWithEveryCacheType) {
  Result<std::unique_ptr<Model>> m = Model::load(std::string(TESSERA_SOURCE_DIR) + "/models/tessera-kjv-6m-q8_0.gguf");
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  const Tokenizer& tok = *(*m)->tokenizer();
  const std::string verse = "In the beginning God created the heaven and the earth. And the earth was without form,";
  const GenerationRequest a = greedy(tok, verse + " and void", 8);
  const GenerationRequest b = greedy(tok, verse + " and darkness", 8);
  for (const auto& [k, v] : {std::pair{DType::Q8_0, DType::Q8_0}, {DType::Q4_0, DType::Q4_1},
                             {DType::IQ4_NL, DType::Q5_0}, {DType::BF16, DType::Q5_1}}) {
    SCOPED_TRACE(std::string(dtype_name(k)) + "/" + std::string(dtype_name(v)));
    EngineParams p;
    p.n_parallel = 2;
    p.n_ctx_per_seq = 128;
    p.type_k = k;
    p.type_v = v;
    std::unique_ptr<Engine> e = make_engine(**m, p);
    run_to_end(*e, a);
    const Outcome second = run_to_end(*e, b);
    EXPECT_GE(second.usage.cached_tokens, 10);
    EXPECT_EQ(second.tokens[0], alone(**m, b, k, v).tokens[0]);
  }
}

TEST(ServingEngine, CancellationFreesCells) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  const Tokenizer& tok = *m->tokenizer();
  for (bool cache : {false, true}) {
    EngineParams p;
    p.n_parallel = 2;
    p.prefix_cache = cache;
    p.n_ctx_per_seq = 256;
    std::unique_ptr<Engine> e = make_engine(*m, p);
    GenerationRequest r = greedy(tok, kPrompts[1], 200);
    r.ignore_eos = true;
    Submitted s = e->submit(r);
    ASSERT_NE(s.stream, nullptr);
    for (int i = 0; i < 5; ++i) e->step();
    EXPECT_GT(e->stats().cells_used, 0);
    EXPECT_EQ(e->stats().running, 1);
    ASSERT_TRUE(e->stats().slots[0].busy);
    EXPECT_EQ(e->stats().slots[0].n_generated, 5);
    EXPECT_EQ(e->stats().slots[0].n_past, int64_t(r.prompt.size()) + 4);  // the 5th is not decoded yet
    if (!cache) {
      EXPECT_EQ(e->stats().slots[0].n_past, e->stats().cells_used);
    }
    s.stream->cancel();
    e->step();  // cancellations are handled at the start of the step
    Outcome o;
    drain(*s.stream, o, 1);
    EXPECT_TRUE(s.stream->done());
    EXPECT_EQ(o.finish[0], FinishReason::Cancelled);
    EXPECT_EQ(e->stats().running, 0);
    // Without the cache every cell is free; with it they are a cached prefix.
    EXPECT_EQ(e->stats().cells_used, cache ? e->stats().cached_tokens : 0);
    // A waiting request can be cancelled too.
    Submitted w = e->submit(greedy(tok, kPrompts[0], 4));
    ASSERT_NE(w.stream, nullptr);
    w.stream->cancel();
    e->step();
    EXPECT_TRUE(w.stream->done());
  }
}

TEST(ServingEngine, QueueLimitAndRefusals) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  const Tokenizer& tok = *m->tokenizer();
  EngineParams p;
  p.n_parallel = 1;
  p.max_queue = 2;
  p.n_ctx_per_seq = 64;
  std::unique_ptr<Engine> e = make_engine(*m, p);
  EXPECT_NE(e->submit(greedy(tok, kPrompts[0], 4)).stream, nullptr);
  EXPECT_NE(e->submit(greedy(tok, kPrompts[1], 4)).stream, nullptr);
  Submitted third = e->submit(greedy(tok, kPrompts[2], 4));
  EXPECT_EQ(third.stream, nullptr);
  EXPECT_EQ(third.refusal, Refusal::QueueFull);
  EXPECT_EQ(e->stats().waiting, 2);
  e->step();  // the first is admitted: there is room in the queue again
  EXPECT_NE(e->submit(greedy(tok, kPrompts[2], 4)).stream, nullptr);

  Submitted too_long = e->submit(greedy(tok, kPrompts[0], 100));
  EXPECT_EQ(too_long.refusal, Refusal::TooLong);
  EXPECT_NE(too_long.message.find("64"), std::string::npos) << too_long.message;
  GenerationRequest two = greedy(tok, kPrompts[0], 4);
  two.n_choices = 2;
  EXPECT_EQ(e->submit(two).refusal, Refusal::Invalid);
  GenerationRequest empty;
  EXPECT_EQ(e->submit(empty).refusal, Refusal::Invalid);
  GenerationRequest bad_token = greedy(tok, kPrompts[0], 4);
  bad_token.prompt.push_back(1 << 20);
  EXPECT_EQ(e->submit(bad_token).refusal, Refusal::Invalid);
  GenerationRequest embed = greedy(tok, kPrompts[0], 0);
  embed.embedding = true;
  EXPECT_EQ(e->submit(embed).refusal, Refusal::Invalid);  // no --embeddings
  e->shutdown(true);
  EXPECT_EQ(e->submit(greedy(tok, kPrompts[0], 4)).refusal, Refusal::ShuttingDown);
}

TEST(ServingEngine, EvictionUnderAFullCacheKeepsOutputs) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  const Tokenizer& tok = *m->tokenizer();
  EngineParams p;
  p.n_parallel = 1;
  p.n_ctx_per_seq = 64;
  p.n_ctx = 64;  // room for one sequence: every new prompt must evict the cached ones
  std::unique_ptr<Engine> e = make_engine(*m, p);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 6; ++i) {
      GenerationRequest r = greedy(tok, kPrompts[i], 30);
      r.ignore_eos = true;
      const Outcome o = run_to_end(*e, r);
      EXPECT_EQ(o.tokens[0], alone(*m, r).tokens[0]) << "request " << i;
      EXPECT_EQ(o.tokens[0].size(), 30u);
      EXPECT_LE(e->stats().cells_used, 64);
    }
  }
  EXPECT_GT(e->stats().evictions, 0);
}

TEST(ServingEngine, StopStringsAreNeverDelivered) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  const Tokenizer& tok = *m->tokenizer();
  GenerationRequest r = greedy(tok, kPrompts[0], 40);
  const Outcome ref = alone(*m, r);
  ASSERT_GT(ref.text[0].size(), 20u);
  // A stop string from the middle of the reference text, spanning a token boundary.
  const std::string stop = ref.text[0].substr(10, 5);
  r.stop = {stop};
  const Outcome o = alone(*m, r);
  EXPECT_EQ(o.finish[0], FinishReason::Stop);
  EXPECT_EQ(o.stop_word[0], stop);
  EXPECT_EQ(ref.stop_word[0], "");
  EXPECT_EQ(o.text[0], ref.text[0].substr(0, ref.text[0].find(stop)));
  EXPECT_EQ(o.text[0].find(stop), std::string::npos);
}

TEST(ServingEngine, ChoicesShareThePromptAndMatchTheirSeeds) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  const Tokenizer& tok = *m->tokenizer();
  GenerationRequest r = greedy(tok, kPrompts[3], 12);
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 42;
  r.n_choices = 3;
  const Outcome all = alone(*m, r);
  ASSERT_EQ(all.tokens.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    GenerationRequest one = r;
    one.n_choices = 1;
    one.sampling.seed = 42 + uint64_t(i);
    EXPECT_EQ(all.tokens[size_t(i)], alone(*m, one).tokens[0]) << "choice " << i;
  }
  EXPECT_EQ(all.usage.prompt_tokens, int64_t(r.prompt.size()));
  EXPECT_NE(all.tokens[0], all.tokens[1]);
}

TEST(ServingEngine, LogprobsAndLengthLimit) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  const Tokenizer& tok = *m->tokenizer();
  EngineParams p;
  p.n_parallel = 1;
  p.n_ctx_per_seq = 32;
  std::unique_ptr<Engine> e = make_engine(*m, p);
  GenerationRequest r = greedy(tok, kPrompts[0], -1);  // to the end of the context
  r.ignore_eos = true;
  r.logprobs = true;
  r.n_probs = 3;
  Submitted s = e->submit(r);
  ASSERT_NE(s.stream, nullptr);
  std::vector<Event> events;
  for (int i = 0; i < 1000 && !s.stream->done(); ++i) {
    e->step();
    for (Event& ev : s.stream->wait(std::chrono::milliseconds(0))) events.push_back(std::move(ev));
  }
  for (Event& ev : s.stream->wait(std::chrono::milliseconds(0))) events.push_back(std::move(ev));
  int n_tokens = 0;
  for (const Event& ev : events) {
    if (ev.kind != Event::Kind::Token) continue;
    ++n_tokens;
    ASSERT_EQ(ev.top.size(), 3u);
    EXPECT_EQ(ev.top[0].token, ev.token);  // greedy picks the most likely
    EXPECT_FLOAT_EQ(ev.top[0].logprob, ev.logprob.logprob);
    EXPECT_LE(ev.logprob.logprob, 0.0f);
    EXPECT_GE(ev.top[0].logprob, ev.top[1].logprob);
  }
  EXPECT_EQ(n_tokens, 32 - int(r.prompt.size()));
  EXPECT_EQ(events.back().kind, Event::Kind::Done);
  EXPECT_EQ(events[events.size() - 2].finish, FinishReason::Length);
}

TEST(ServingEngine, PostSamplingProbsAreTheChainsCandidatesAndLeaveTheDrawAsItIs) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  GenerationRequest r = greedy(*m->tokenizer(), kPrompts[1], 12);
  r.ignore_eos = true;
  r.sampling.temperature = 1.0f;
  r.sampling.top_k = 3;
  r.sampling.top_p = 1.0f;
  r.sampling.min_p = 0.0f;
  r.sampling.seed = 17;
  r.n_probs = 5;
  r.logprobs = true;
  const Outcome plain = alone(*m, r);
  r.post_sampling_probs = true;
  EngineParams p;  // as alone()'s
  p.n_parallel = 1;
  p.prefix_cache = false;
  p.n_ctx_per_seq = 256;
  std::unique_ptr<Engine> e = make_engine(*m, p);
  Submitted s = e->submit(r);
  ASSERT_NE(s.stream, nullptr) << s.message;
  for (int i = 0; i < 1000 && !s.stream->done(); ++i) e->step();
  std::vector<TokenId> tokens;
  for (const Event& ev : s.stream->wait(std::chrono::milliseconds(0))) {
    if (ev.kind != Event::Kind::Token) continue;
    tokens.push_back(ev.token);
    EXPECT_TRUE(ev.top.empty());  // the raw logits' log-probabilities are not computed
    ASSERT_EQ(ev.top_probs.size(), 3u);  // the three top-k left, all listed
    float sum = 0;
    bool chosen = false;
    for (const TokenProb& t : ev.top_probs) {
      sum += t.prob;
      if (t.token != ev.token) continue;
      chosen = true;
      EXPECT_EQ(t.prob, ev.prob);
    }
    EXPECT_TRUE(chosen);
    EXPECT_NEAR(sum, 1.0f, 1e-5f);
    EXPECT_GE(ev.top_probs[0].prob, ev.top_probs[1].prob);
    EXPECT_GE(ev.top_probs[1].prob, ev.top_probs[2].prob);
  }
  EXPECT_EQ(tokens, plain.tokens[0]);  // the same seed draws the same tokens
}

TEST(ServingEngine, EmbeddingsMatchThePooledHiddenStates) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  const Tokenizer& tok = *m->tokenizer();
  EngineParams p;
  p.n_parallel = 2;
  p.embeddings = true;
  p.batch_budget = 4;  // the prompt is decoded in chunks
  p.n_ctx_per_seq = 64;
  std::unique_ptr<Engine> e = make_engine(*m, p);
  GenerationRequest r = greedy(tok, kPrompts[6], 0);
  r.embedding = true;
  Submitted s = e->submit(r);
  ASSERT_NE(s.stream, nullptr) << s.message;
  for (int i = 0; i < 100 && !s.stream->done(); ++i) e->step();
  ASSERT_TRUE(s.stream->done());
  const std::vector<float> v = s.stream->embedding();
  ASSERT_EQ(int64_t(v.size()), m->info().n_embd);
  // Reference: one decode with every token's hidden state, mean-pooled, normalised.
  std::unique_ptr<Context> ctx = test::make_context(*m, 64, 1, DType::F16, true);
  Batch b;
  b.add_sequence(r.prompt, 0, 0, true);
  ASSERT_TRUE(ctx->decode(b).is_ok());
  std::vector<float> rows;
  for (int64_t i = 0; i < b.size(); ++i) {
    const auto row = ctx->embeddings_at(i);
    rows.insert(rows.end(), row.begin(), row.end());
  }
  std::vector<float> ref = pool_embeddings(rows, ctx->n_embd(), Pooling::Mean);
  normalize_l2(ref);
  // Chunks of 4 run other kernel shapes than one batch of all: rounding differs.
  EXPECT_LT(test::nmse(v, ref), 1e-7);
  EXPECT_EQ(e->stats().cells_used, 0);  // embedding sequences are not cached
}

TEST(ServingEngine, TokenEmbeddingsAreEveryTokensHiddenState) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  const Tokenizer& tok = *m->tokenizer();
  EngineParams p;
  p.n_parallel = 2;
  p.embeddings = true;
  p.batch_budget = 4;  // the prompt is decoded in chunks: the rows must stay in order
  p.n_ctx_per_seq = 64;
  std::unique_ptr<Engine> e = make_engine(*m, p);
  GenerationRequest r = greedy(tok, kPrompts[6], 0);
  r.embedding = true;
  r.token_embeddings = true;
  Submitted s = e->submit(r);
  ASSERT_NE(s.stream, nullptr) << s.message;
  for (int i = 0; i < 100 && !s.stream->done(); ++i) e->step();
  ASSERT_TRUE(s.stream->done());
  const std::vector<std::vector<float>> rows = s.stream->token_embeddings();
  ASSERT_EQ(rows.size(), r.prompt.size());
  EXPECT_TRUE(s.stream->embedding().empty());  // nothing pooled
  std::unique_ptr<Context> ctx = test::make_context(*m, 64, 1, DType::F16, true);
  Batch b;
  b.add_sequence(r.prompt, 0, 0, true);
  ASSERT_TRUE(ctx->decode(b).is_ok());
  for (int64_t i = 0; i < b.size(); ++i) {
    const auto row = ctx->embeddings_at(i);
    const std::vector<float> ref(row.begin(), row.end());
    ASSERT_EQ(rows[size_t(i)].size(), ref.size());
    EXPECT_LT(test::nmse(rows[size_t(i)], ref), 1e-7) << "token " << i;  // raw: not normalised
  }
}

TEST(ServingEngine, LoopThreadServesConcurrentSubmitters) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  const Tokenizer& tok = *m->tokenizer();
  EngineParams p;
  p.n_parallel = 4;
  p.n_ctx_per_seq = 128;
  std::unique_ptr<Engine> e = make_engine(*m, p);
  e->start();
  std::vector<std::thread> clients;
  std::vector<Outcome> got(8);
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&, i] {
      Submitted s = e->submit(greedy(tok, kPrompts[i], 8));
      ASSERT_NE(s.stream, nullptr) << s.message;
      for (int k = 0; k < 2000 && !s.stream->done(); ++k) {
        s.stream->wait(std::chrono::milliseconds(0));  // would lose events: only wait for done
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      got[size_t(i)].usage = s.stream->usage();
      EXPECT_TRUE(s.stream->done());
    });
  }
  for (auto& t : clients) t.join();
  for (const Outcome& o : got) EXPECT_GT(o.usage.completion_tokens, 0);
  e->shutdown(false);
  EXPECT_EQ(e->stats().running, 0);
}

}  // namespace
}  // namespace tessera::serving
