// The serving Engine with a LoRA adapter, without HTTP (stories260K.gguf and a random
// adapter of all its projections): requests with different adapter scales are never
// decoded in one step, both progress, and each gets what it gets alone; the engine's
// default scales apply to requests without their own; a cached prefix serves only
// prompts with the scales it was computed with.
#include <gtest/gtest.h>

#include <limits>
#include <optional>

#include "common/lora_test_util.h"
#include "common/serving_test_util.h"
#include "common/test_util.h"
#include "tessera/model.h"
#include "tessera/serving.h"
#include "tessera/tokenizer.h"

namespace tessera::serving {
namespace {

using test::greedy;
using test::make_engine;

struct Models {
  std::unique_ptr<Model> plain;    // stories260K alone
  std::unique_ptr<Model> adapted;  // with the adapter at scale 1
};

/// Loads the base with and without a random adapter of every projection (written once).
const Models* models() {
  static Models m;
  static bool tried = false;
  if (tried) return m.adapted ? &m : nullptr;
  tried = true;
  const std::string base = test::shared_file("models/stories260K.gguf");
  if (base.empty()) return nullptr;
  Result<std::unique_ptr<Model>> plain = Model::load(base);
  EXPECT_TRUE(plain.is_ok()) << plain.status().message();
  if (!plain) return nullptr;
  Result<test::AdapterFile> f =
      test::adapter_for(base, test::llama_projections((*plain)->info().n_layer), 4);
  EXPECT_TRUE(f.is_ok()) << f.status().message();
  if (!f) return nullptr;
  f->stddev = 0.4f;
  f->alpha = 8;
  const std::string path = test::temp_gguf("serving_lora");
  EXPECT_TRUE(test::write_adapter(*f, path).is_ok());
  ModelParams mp;
  mp.adapters = {{path, 1.0f}};
  Result<std::unique_ptr<Model>> adapted = Model::load(base, mp);
  EXPECT_TRUE(adapted.is_ok()) << adapted.status().message();
  if (!adapted) return nullptr;
  m.plain = std::move(*plain);
  m.adapted = std::move(*adapted);
  return &m;
}

#define NEED_MODELS(m)        \
  const Models* m = models(); \
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";

std::vector<TokenId> tokens_of(Stream& s) {
  std::vector<TokenId> out;
  for (const Event& e : s.wait(std::chrono::milliseconds(0))) {
    if (e.kind == Event::Kind::Token) out.push_back(e.token);
    EXPECT_NE(e.kind, Event::Kind::Error) << e.message;
  }
  return out;
}

/// Steps `e` until every stream is done; the tokens of each.
std::vector<std::vector<TokenId>> run(Engine& e,
                                      const std::vector<std::shared_ptr<Stream>>& streams) {
  std::vector<std::vector<TokenId>> out(streams.size());
  for (int i = 0; i < 10000; ++i) {
    bool all = true;
    for (size_t k = 0; k < streams.size(); ++k) {
      const std::vector<TokenId> t = tokens_of(*streams[k]);
      out[k].insert(out[k].end(), t.begin(), t.end());
      all = all && streams[k]->done();
    }
    if (all) break;
    e.step();
  }
  return out;
}

/// `r` alone on a fresh engine over `m`.
std::vector<TokenId> alone(const Model& m, const GenerationRequest& r) {
  EngineParams p;
  p.n_parallel = 1;
  p.prefix_cache = false;
  p.n_ctx_per_seq = 256;
  std::unique_ptr<Engine> e = make_engine(m, p);
  Submitted s = e->submit(r);
  EXPECT_NE(s.stream, nullptr) << s.message;
  return s.stream ? run(*e, {s.stream})[0] : std::vector<TokenId>{};
}

GenerationRequest with_scale(GenerationRequest r, std::optional<float> scale) {
  if (scale) r.adapter_scales = std::vector<float>{*scale};
  return r;
}

TEST(ServingLora, ScaleZeroIsTheBaseAndScaleOneTheAdaptedModel) {
  NEED_MODELS(m);
  const GenerationRequest r = greedy(*m->plain->tokenizer(), "Once upon a time", 24);
  const std::vector<TokenId> base = alone(*m->plain, r);
  const std::vector<TokenId> adapted = alone(*m->adapted, r);
  EXPECT_NE(base, adapted) << "the adapter changes nothing: the test cannot tell scales apart";
  EXPECT_EQ(alone(*m->adapted, with_scale(r, 0.0f)), base);
  EXPECT_EQ(alone(*m->adapted, with_scale(r, 1.0f)), adapted);
}

TEST(ServingLora, DefaultScalesApplyToLaterRequests) {
  NEED_MODELS(m);
  const GenerationRequest r = greedy(*m->plain->tokenizer(), "Lily and Tom", 16);
  EngineParams p;
  p.n_parallel = 2;
  p.n_ctx_per_seq = 256;
  std::unique_ptr<Engine> e = make_engine(*m->adapted, p);
  EXPECT_EQ(e->adapter_scales(), std::vector<float>{1.0f});
  Submitted before = e->submit(r);  // takes the defaults of now: 1
  ASSERT_TRUE(e->set_adapter_scales({0.0f}).is_ok());
  EXPECT_EQ(e->adapter_scales(), std::vector<float>{0.0f});
  Submitted after = e->submit(r);
  ASSERT_TRUE(before.stream && after.stream);
  const std::vector<std::vector<TokenId>> got = run(*e, {before.stream, after.stream});
  EXPECT_EQ(got[0], alone(*m->adapted, with_scale(r, 1.0f)));
  EXPECT_EQ(got[1], alone(*m->plain, r));

  EXPECT_FALSE(e->set_adapter_scales({}).is_ok());
  EXPECT_FALSE(e->set_adapter_scales({1.0f, 1.0f}).is_ok());
  EXPECT_FALSE(e->set_adapter_scales({std::numeric_limits<float>::quiet_NaN()}).is_ok());
  EXPECT_EQ(e->adapter_scales(), std::vector<float>{0.0f});
  GenerationRequest bad = r;
  bad.adapter_scales = std::vector<float>{1.0f, 2.0f};
  Submitted refused = e->submit(bad);
  EXPECT_EQ(refused.refusal, Refusal::Invalid);
  EXPECT_NE(refused.message.find("adapter scales"), std::string::npos) << refused.message;
}

// Two requests with different scales on two slots: no step decodes both, both progress
// from the start (the set that waited longest goes next), and each gets what it gets alone.
TEST(ServingLora, DifferentScalesTakeTurnsAndEachMatchesAlone) {
  NEED_MODELS(m);
  const Tokenizer& tok = *m->plain->tokenizer();
  const GenerationRequest a =
      with_scale(greedy(tok, "The little dog ran to the park and", 20), 1.0f);
  const GenerationRequest b = with_scale(greedy(tok, "One day, a big red ball rolled", 20), 0.0f);
  const GenerationRequest c = with_scale(greedy(tok, "Tom and his mom", 12), 1.0f);
  EngineParams p;
  p.n_parallel = 3;
  p.n_ctx_per_seq = 256;
  std::unique_ptr<Engine> e = make_engine(*m->adapted, p);
  Submitted sa = e->submit(a), sb = e->submit(b), sc = e->submit(c);
  ASSERT_TRUE(sa.stream && sb.stream && sc.stream);
  // The first steps: a and c (one set) decode together, then b, then a and c again.
  std::vector<size_t> n(3, 0);
  std::vector<std::vector<TokenId>> got(3);
  const std::vector<std::shared_ptr<Stream>> streams = {sa.stream, sb.stream, sc.stream};
  for (int step = 0; step < 4; ++step) {
    e->step();
    for (size_t k = 0; k < 3; ++k) {
      const std::vector<TokenId> t = tokens_of(*streams[k]);
      got[k].insert(got[k].end(), t.begin(), t.end());
    }
    const bool ac = got[0].size() > n[0] || got[2].size() > n[2];
    const bool bb = got[1].size() > n[1];
    EXPECT_FALSE(ac && bb) << "step " << step << " decoded both scale sets";
    EXPECT_EQ(got[0].size() - n[0], got[2].size() - n[2])
        << "step " << step << ": a and c share a set";
    EXPECT_EQ(ac, step % 2 == 0) << "step " << step;
    for (size_t k = 0; k < 3; ++k) n[k] = got[k].size();
  }
  const std::vector<std::vector<TokenId>> rest = run(*e, streams);
  for (size_t k = 0; k < 3; ++k) got[k].insert(got[k].end(), rest[k].begin(), rest[k].end());
  EXPECT_EQ(got[0], alone(*m->adapted, a));
  EXPECT_EQ(got[1], alone(*m->adapted, b));
  EXPECT_EQ(got[2], alone(*m->adapted, c));
  EXPECT_NE(got[1], alone(*m->adapted, with_scale(b, 1.0f)));
}

// A prompt cached under scale 1 is not reused under scale 0 (other keys and values), and
// is under scale 1 again.
TEST(ServingLora, CachedPrefixesServeOnlyTheirScales) {
  NEED_MODELS(m);
  const GenerationRequest r =
      greedy(*m->plain->tokenizer(), "There was a small bird that sang every morning", 8);
  EngineParams p;
  p.n_parallel = 1;
  p.n_ctx_per_seq = 256;
  std::unique_ptr<Engine> e = make_engine(*m->adapted, p);
  auto one = [&](std::optional<float> scale, int64_t* cached) {
    Submitted s = e->submit(with_scale(r, scale));
    EXPECT_NE(s.stream, nullptr) << s.message;
    if (!s.stream) return std::vector<TokenId>{};
    std::vector<TokenId> t = run(*e, {s.stream})[0];
    *cached = s.stream->usage().cached_tokens;
    return t;
  };
  int64_t cached = -1;
  const std::vector<TokenId> first = one(1.0f, &cached);
  EXPECT_EQ(cached, 0);
  EXPECT_EQ(one(0.0f, &cached), alone(*m->plain, r));
  EXPECT_EQ(cached, 0) << "a prefix computed with scale 1 served a request with scale 0";
  EXPECT_EQ(one(1.0f, &cached), first);
  EXPECT_EQ(cached, int64_t(r.prompt.size()) - 1);
  EXPECT_EQ(one(0.0f, &cached), alone(*m->plain, r));
  EXPECT_EQ(cached, int64_t(r.prompt.size()) - 1);
}

}  // namespace
}  // namespace tessera::serving
