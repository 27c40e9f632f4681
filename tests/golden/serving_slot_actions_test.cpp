// Engine::slot_action without HTTP: an action on a busy slot waits until the slot is idle
// (it runs between steps, before the slot is admitted again), gives up past its timeout,
// and is answered ShuttingDown when the engine shuts down.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "common/runtime_test_util.h"
#include "common/serving_test_util.h"
#include "tessera/serving.h"

namespace tessera::serving {
namespace {

using namespace std::chrono_literals;
using test::greedy;
using test::make_engine;

class ServingSlotActions : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = test::shared_model("stories260K.gguf");
    if (!model_) GTEST_SKIP() << "shared model absent: stories260K.gguf";
    EngineParams p;
    p.n_parallel = 1;
    p.n_ctx_per_seq = 128;
    engine_ = make_engine(*model_, p);  // stepped by hand: deterministic
  }
  /// Submits a request and steps until it holds slot 0.
  std::shared_ptr<Stream> start_request(int32_t max_tokens) {
    Submitted s = engine_->submit(greedy(*model_->tokenizer(), "Once upon a time", max_tokens));
    EXPECT_NE(s.stream, nullptr) << s.message;
    engine_->step();
    EXPECT_TRUE(engine_->stats().slots[0].busy);
    return s.stream;
  }
  /// Gives another thread time to queue its action (no loop thread runs: none is taken).
  static void settle() { std::this_thread::sleep_for(100ms); }

  const Model* model_ = nullptr;
  std::unique_ptr<Engine> engine_;
};

TEST_F(ServingSlotActions, WaitsForTheSlotToBeIdle) {
  std::shared_ptr<Stream> s = start_request(6);
  auto erased = std::async(std::launch::async, [&] { return engine_->slot_action(SlotActionKind::Erase, 0, "", 30s); });
  settle();
  int steps = 0;
  while (!s->done()) {
    EXPECT_EQ(erased.wait_for(0ms), std::future_status::timeout) << "ran while the slot was busy";
    engine_->step();
    ++steps;
  }
  EXPECT_GT(steps, 2);
  engine_->step();  // the slot is idle now: the action runs before anything else
  ASSERT_EQ(erased.wait_for(10s), std::future_status::ready);
  const SlotActionResult r = erased.get();
  EXPECT_EQ(r.error, SlotActionResult::Error::None) << r.message;
  EXPECT_EQ(r.n_tokens, s->usage().prompt_tokens + s->usage().completion_tokens - 1);
  EXPECT_EQ(engine_->stats().cached_prefixes, 0);
}

TEST_F(ServingSlotActions, GivesUpOnABusySlotPastTheTimeout) {
  std::shared_ptr<Stream> s = start_request(6);
  const SlotActionResult r = engine_->slot_action(SlotActionKind::Erase, 0, "", 50ms);
  EXPECT_EQ(r.error, SlotActionResult::Error::Busy);
  EXPECT_NE(r.message.find("busy"), std::string::npos) << r.message;
  // Withdrawn: it does not run later either.
  while (!s->done()) engine_->step();
  engine_->step();
  EXPECT_EQ(engine_->stats().cached_prefixes, 1);
}

TEST_F(ServingSlotActions, BadSlotIdAndShutdown) {
  EXPECT_EQ(engine_->slot_action(SlotActionKind::Erase, 1, "", 1s).error, SlotActionResult::Error::Invalid);
  EXPECT_EQ(engine_->slot_action(SlotActionKind::Erase, -1, "", 1s).error, SlotActionResult::Error::Invalid);
  start_request(6);
  auto pending = std::async(std::launch::async, [&] { return engine_->slot_action(SlotActionKind::Erase, 0, "", 30s); });
  settle();
  engine_->shutdown(true);
  ASSERT_EQ(pending.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(pending.get().error, SlotActionResult::Error::ShuttingDown);
  EXPECT_EQ(engine_->slot_action(SlotActionKind::Erase, 0, "", 1s).error, SlotActionResult::Error::ShuttingDown);
}

}  // namespace
}  // namespace tessera::serving
