// The training loop end to end through tessera::train_model on a tiny model: it learns a
// repetitive text, a resumed run repeats the uninterrupted one exactly, thread counts
// agree, and what it writes is a model the runtime loads and that continues the text.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "tessera/context.h"
#include "tessera/model.h"
#include "tessera/tokenizer.h"
#include "tessera/train.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

// A text with a few recurring sentences: a tiny model can learn it nearly by heart.
std::string repetitive_text() {
  const char* lines[] = {"the quick brown fox jumps over the lazy dog.\n",
                         "a bird in the hand is worth two in the bush.\n",
                         "all that glitters is not gold.\n"};
  std::string s;
  for (int i = 0; i < 240; ++i) s += lines[(i * 7) % 3];
  return s;
}

class TrainLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_train_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "text.txt") << repetitive_text();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A tiny model's options: 300 tokens, 2 layers of 32, windows of 32.
  TrainOptions tiny(const std::string& out, int64_t steps) const {
    TrainOptions o;
    o.text_path = (dir_ / "text.txt").string();
    o.output_path = (dir_ / out).string();
    o.vocab_size = 300;
    o.n_embd = 32;
    o.n_layer = 2;
    o.n_head = 4;
    o.n_ff = 64;
    o.n_ctx = 32;
    o.steps = steps;
    o.batch = 4;
    o.lr = 3e-3f;
    o.warmup = 10;
    o.eval_every = 50;
    o.eval_windows = 4;
    o.val_fraction = 0.05;
    o.seed = 7;
    o.n_threads = 2;
    return o;
  }

  // Runs train_model; returns the loss and validation loss of every step.
  std::map<int64_t, std::pair<double, double>> run(const TrainOptions& o) {
    std::map<int64_t, std::pair<double, double>> losses;
    const Status s = train_model(o, [&](const TrainProgress& p) {
      if (p.phase == TrainProgress::Phase::Training) losses[p.step] = {p.loss, p.val_loss};
    });
    EXPECT_TRUE(s.is_ok()) << s.message();
    return losses;
  }

  fs::path dir_;
};

// Loss bound: at initialisation the loss is ln(300) = 5.7. The text is three sentences
// in a fixed cycle, so every token is predictable from the window except the first few
// after BOS (a random offset); 200 steps reach about 0.53.
constexpr double kLearnedLoss = 0.8;

TEST_F(TrainLoop, ATinyModelLearnsARepetitiveText) {
  const auto losses = run(tiny("m.gguf", 200));
  ASSERT_EQ(losses.size(), 200u);
  EXPECT_GT(losses.at(1).first, 4.0);
  EXPECT_LT(losses.at(200).first, kLearnedLoss);
  EXPECT_GE(losses.at(200).second, 0.0);  // validated at the last step
  EXPECT_LT(losses.at(200).second, kLearnedLoss);
  EXPECT_LT(losses.at(100).second, losses.at(50).second);
}

TEST_F(TrainLoop, AResumedRunRepeatsTheUninterruptedOne) {
  const auto whole = run(tiny("whole.gguf", 200));
  TrainOptions first = tiny("half.gguf", 200);
  first.stop_at = 100;
  const auto head = run(first);
  ASSERT_EQ(head.size(), 100u);
  TrainOptions second = tiny("resumed.gguf", 200);
  second.resume_path = first.output_path + ".ckpt";
  second.vocab_size = 999;  // ignored: the checkpoint's vocabulary and shape are kept
  const auto tail = run(second);
  ASSERT_EQ(tail.size(), 100u);
  for (int64_t step = 1; step <= 100; ++step) EXPECT_EQ(head.at(step).first, whole.at(step).first) << step;
  for (int64_t step = 101; step <= 200; ++step) {
    EXPECT_EQ(tail.at(step).first, whole.at(step).first) << step;
    EXPECT_EQ(tail.at(step).second, whole.at(step).second) << step;
  }
}

// Every kernel gives the same bits for any thread count (the op tests check it), so one
// and two threads train identically; a tolerance of 0.
TEST_F(TrainLoop, OneAndTwoThreadsAgree) {
  TrainOptions one = tiny("one.gguf", 30);
  one.n_threads = 1;
  TrainOptions two = tiny("two.gguf", 30);
  const auto a = run(one);
  const auto b = run(two);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [step, l] : a) EXPECT_EQ(l.first, b.at(step).first) << step;
}

TEST_F(TrainLoop, TheWrittenModelLoadsAndContinuesTheText) {
  run(tiny("m.gguf", 200));
  Result<std::unique_ptr<Model>> m = Model::load((dir_ / "m.gguf").string());
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ((*m)->info().arch, "llama");
  EXPECT_EQ((*m)->info().n_vocab, 300);
  const Tokenizer* tok = (*m)->tokenizer();
  ASSERT_NE(tok, nullptr);
  ContextParams cp;
  cp.n_ctx = 32;
  Result<std::unique_ptr<Context>> c = Context::create(**m, cp);
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  std::vector<TokenId> ids = tok->encode("the quick brown", true);
  std::vector<TokenId> out;
  ASSERT_TRUE((*c)->decode(ids).is_ok());
  for (int i = 0; i < 14; ++i) {
    const std::span<const float> l = (*c)->logits();
    const TokenId next = TokenId(std::max_element(l.begin(), l.end()) - l.begin());
    out.push_back(next);
    const TokenId one[] = {next};
    ASSERT_TRUE((*c)->decode(one).is_ok());
  }
  // decode drops the space that starts the first piece.
  EXPECT_EQ(tok->decode(out).rfind("fox jumps over", 0), 0u) << tok->decode(out);
}

TEST_F(TrainLoop, ErrorsNameTheProblem) {
  TrainOptions o = tiny("m.gguf", 10);
  o.text_path = (dir_ / "absent.txt").string();
  Status s = train_model(o, {});
  EXPECT_NE(s.message().find("absent.txt"), std::string::npos) << s.message();
  o = tiny("m.gguf", 10);
  o.n_ctx = 100000;  // more than the text holds
  s = train_model(o, {});
  EXPECT_NE(s.message().find("fewer than one window"), std::string::npos) << s.message();
  run(tiny("m.gguf", 2));
  o = tiny("again.gguf", 10);
  o.resume_path = (dir_ / "m.gguf").string();  // a model, not a checkpoint
  s = train_model(o, {});
  EXPECT_NE(s.message().find("training checkpoint"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tessera::test
