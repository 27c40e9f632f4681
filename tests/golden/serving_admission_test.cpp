// Admission to the serving Engine: a group of requests submitted together is one place in
// the queue, admitted whole or refused whole; refused and cancelled work leaves nothing
// in the queue.
#include <gtest/gtest.h>

#include "common/runtime_test_util.h"
#include "common/serving_test_util.h"
#include "tessera/serving.h"
#include "tessera/tokenizer.h"

namespace tessera::serving {
namespace {

using test::greedy;
using test::make_engine;

std::vector<GenerationRequest> group_of(const GenerationRequest& r, size_t n) {
  return std::vector<GenerationRequest>(n, r);
}

/// Steps until nothing is left to do (bounded).
void run_idle(Engine& e) {
  for (int i = 0; i < 100000 && e.step(); ++i) {
  }
}

/// The finish reasons a stream delivered, and whether Done came.
struct Ending {
  std::vector<FinishReason> finish;
  bool done = false;
};

Ending ending(Stream& s) {
  Ending out;
  for (const Event& e : s.wait(std::chrono::milliseconds(0))) {
    if (e.kind == Event::Kind::ChoiceDone) out.finish.push_back(e.finish);
    if (e.kind == Event::Kind::Done) out.done = true;
  }
  return out;
}

TEST(ServingAdmission, GroupLargerThanTheQueueIsOneAdmission) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  EngineParams p;  // the server's defaults: 4 slots, a queue of 64
  p.embeddings = true;
  p.n_ctx_per_seq = 64;
  ASSERT_EQ(p.max_queue, 64);
  std::unique_ptr<Engine> e = make_engine(*m, p);
  GenerationRequest r = greedy(*m->tokenizer(), "Once upon a time", 0);
  r.embedding = true;
  SubmittedGroup g = e->submit_group(group_of(r, 256));
  ASSERT_EQ(g.refusal, Refusal::None) << g.message;
  ASSERT_EQ(g.streams.size(), 256u);
  EXPECT_EQ(e->stats().waiting, 1);  // one place, however many requests
  // Another client still finds room.
  GenerationRequest chat = greedy(*m->tokenizer(), "Lily", 3);
  Submitted other = e->submit(chat);
  ASSERT_NE(other.stream, nullptr) << other.message;
  EXPECT_EQ(e->stats().waiting, 2);
  run_idle(*e);
  for (const auto& s : g.streams) {
    ASSERT_TRUE(s->done());
    EXPECT_EQ(int64_t(s->embedding().size()), m->info().n_embd);
  }
  EXPECT_TRUE(other.stream->done());
  EXPECT_EQ(e->stats().waiting, 0);
  EXPECT_EQ(e->stats().running, 0);
  // The group's ids are consecutive and in order; the later request's come after.
  for (size_t i = 1; i < g.streams.size(); ++i) EXPECT_EQ(g.streams[i]->id(), g.streams[i - 1]->id() + 1);
  EXPECT_GT(other.stream->id(), g.streams.back()->id());
}

TEST(ServingAdmission, RefusedGroupLeavesTheQueueAsItWas) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  const Tokenizer& tok = *m->tokenizer();
  EngineParams p;
  p.n_parallel = 1;
  p.max_queue = 2;
  p.n_ctx_per_seq = 64;
  std::unique_ptr<Engine> e = make_engine(*m, p);
  Submitted a = e->submit(greedy(tok, "Once upon a time", 3));
  Submitted b = e->submit(greedy(tok, "Lily", 3));
  ASSERT_NE(a.stream, nullptr);
  ASSERT_NE(b.stream, nullptr);
  SubmittedGroup full = e->submit_group(group_of(greedy(tok, "Tom", 2), 10));
  EXPECT_EQ(full.refusal, Refusal::QueueFull);
  EXPECT_TRUE(full.streams.empty());
  EXPECT_EQ(e->stats().waiting, 2);
  e->step();  // `a` is admitted: one place is free
  EXPECT_EQ(e->stats().waiting, 1);
  // One bad request refuses the whole group, and names it.
  std::vector<GenerationRequest> bad = group_of(greedy(tok, "Tom", 2), 10);
  bad[5].max_tokens = 100;
  SubmittedGroup too_long = e->submit_group(bad);
  EXPECT_EQ(too_long.refusal, Refusal::TooLong);
  EXPECT_NE(too_long.message.find("request 5 of 10"), std::string::npos) << too_long.message;
  SubmittedGroup too_many = e->submit_group(group_of(greedy(tok, "Tom", 2), size_t(Engine::kMaxGroup) + 1));
  EXPECT_EQ(too_many.refusal, Refusal::Invalid);
  EXPECT_NE(too_many.message.find("kMaxGroup = " + std::to_string(Engine::kMaxGroup)), std::string::npos)
      << too_many.message;
  EXPECT_EQ(e->submit_group({}).refusal, Refusal::Invalid);
  EXPECT_EQ(e->stats().waiting, 1);
  SubmittedGroup ok = e->submit_group(group_of(greedy(tok, "Tom", 2), 10));
  ASSERT_EQ(ok.refusal, Refusal::None) << ok.message;
  EXPECT_EQ(e->stats().waiting, 2);
  run_idle(*e);
  // Exactly what was accepted ran: the refused groups left no request behind.
  EXPECT_TRUE(a.stream->done() && b.stream->done());
  for (const auto& s : ok.streams) EXPECT_TRUE(s->done());
  EXPECT_EQ(e->stats().waiting, 0);
  EXPECT_EQ(ok.streams.front()->id(), b.stream->id() + 1);  // ids: the refused groups took none
}

TEST(ServingAdmission, CancelledQueuedRequestFreesItsPlaceAtOnce) {
  const Model* m = test::shared_model("stories260K.gguf");
  if (!m) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  const Tokenizer& tok = *m->tokenizer();
  EngineParams p;
  p.n_parallel = 1;
  p.max_queue = 2;
  p.n_ctx_per_seq = 64;
  std::unique_ptr<Engine> e = make_engine(*m, p);
  Submitted a = e->submit(greedy(tok, "Once upon a time", 3));
  SubmittedGroup g = e->submit_group(group_of(greedy(tok, "Lily", 3), 3));
  ASSERT_NE(a.stream, nullptr);
  ASSERT_EQ(g.refusal, Refusal::None);
  EXPECT_EQ(e->submit(greedy(tok, "Tom", 2)).refusal, Refusal::QueueFull);
  // No step in between: the cancelled group's place is taken at once.
  for (const auto& s : g.streams) s->cancel();
  Submitted c = e->submit(greedy(tok, "Tom", 2));
  ASSERT_NE(c.stream, nullptr) << c.message;
  EXPECT_EQ(e->stats().waiting, 2);
  // A cancelled request alone, too.
  a.stream->cancel();
  Submitted d = e->submit(greedy(tok, "Sue", 2));
  ASSERT_NE(d.stream, nullptr) << d.message;
  EXPECT_EQ(e->stats().waiting, 2);
  e->step();  // the cancelled streams end; `c` is admitted
  for (const auto& s : g.streams) {
    const Ending end = ending(*s);
    EXPECT_TRUE(end.done);
    ASSERT_EQ(end.finish.size(), 1u);
    EXPECT_EQ(end.finish[0], FinishReason::Cancelled);
  }
  EXPECT_TRUE(ending(*a.stream).done);
  EXPECT_EQ(e->stats().running, 1);
  EXPECT_EQ(e->stats().slots[0].request, c.stream->id());
  run_idle(*e);
  EXPECT_TRUE(c.stream->done() && d.stream->done());
}

}  // namespace
}  // namespace tessera::serving
