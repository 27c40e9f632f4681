// tessera::finetune_model: a LoRA on a frozen (here also quantized) base lowers the loss
// on its text, and the adapter is one the runtime applies.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "tessera/context.h"
#include "tessera/gguf.h"
#include "tessera/model.h"
#include "tessera/quantize.h"
#include "tessera/tokenizer.h"
#include "tessera/train.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

// One base (trained, then quantized to Q8_0) and one finetune over the quantized base,
// shared by the tests: the base knows "the cat sat on the mat." and "a dog ran in the
// park."; the finetuning text swaps what the cat and the dog do.
class Finetune : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("tessera_finetune_" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    std::string base_text, new_text;
    for (int i = 0; i < 200; ++i) base_text += i % 2 ? "the cat sat on the mat.\n" : "a dog ran in the park.\n";
    for (int i = 0; i < 200; ++i) new_text += i % 2 ? "the cat ran to the park.\n" : "a dog sat on a mat.\n";
    std::ofstream(*dir_ / "base.txt") << base_text;
    std::ofstream(*dir_ / "new.txt") << new_text;
    TrainOptions o;
    o.text_path = (*dir_ / "base.txt").string();
    o.output_path = (*dir_ / "base.gguf").string();
    o.vocab_size = 290;
    o.n_embd = 32;
    o.n_layer = 2;
    o.n_head = 4;
    o.n_ff = 64;
    o.n_ctx = 32;
    o.steps = 200;
    o.batch = 4;
    o.lr = 3e-3f;
    o.warmup = 5;
    o.eval_every = 0;
    o.n_threads = 2;
    ASSERT_TRUE(train_model(o, {}).is_ok());
    QuantizeParams qp;
    qp.type_name = "Q8_0";
    qp.n_threads = 1;
    ASSERT_TRUE(quantize_model(o.output_path, (*dir_ / "base-q8_0.gguf").string(), qp).is_ok());
    const Status s = finetune_model(options("base-q8_0.gguf"), [](const TrainProgress& p) {
      if (p.phase != TrainProgress::Phase::Training) return;
      loss_[p.step] = p.loss;
      if (p.val_loss >= 0) val_[p.step] = p.val_loss;
    });
    ASSERT_TRUE(s.is_ok()) << s.message();
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }

  static FinetuneOptions options(const std::string& base) {
    FinetuneOptions f;
    f.base_path = (*dir_ / base).string();
    f.text_path = (*dir_ / "new.txt").string();
    f.output_path = (*dir_ / "adapter.gguf").string();
    f.n_ctx = 32;
    f.steps = 150;
    f.lr = 2e-2f;
    f.warmup = 10;
    f.eval_every = 50;
    f.eval_windows = 2;
    f.n_threads = 2;
    return f;
  }

  // The greedy continuation of `prompt` by the F32 base, with the adapter or without.
  static std::string greedy(const std::string& prompt, bool adapter) {
    ModelParams mp;
    if (adapter) mp.adapters.push_back({(*dir_ / "adapter.gguf").string(), 1.0f});
    Result<std::unique_ptr<Model>> m = Model::load((*dir_ / "base.gguf").string(), mp);
    EXPECT_TRUE(m.is_ok()) << m.status().message();
    if (!m) return "";
    ContextParams cp;
    cp.n_ctx = 32;
    Result<std::unique_ptr<Context>> c = Context::create(**m, cp);
    std::vector<TokenId> out;
    EXPECT_TRUE((*c)->decode((*m)->tokenizer()->encode(prompt, true)).is_ok());
    for (int i = 0; i < 10; ++i) {
      const std::span<const float> l = (*c)->logits();
      out.push_back(TokenId(std::max_element(l.begin(), l.end()) - l.begin()));
      const TokenId one[] = {out.back()};
      EXPECT_TRUE((*c)->decode(one).is_ok());
    }
    return (*m)->tokenizer()->decode(out);
  }

  static fs::path* dir_;
  static std::map<int64_t, double> loss_, val_;
};

fs::path* Finetune::dir_ = nullptr;
std::map<int64_t, double> Finetune::loss_, Finetune::val_;

// Step 1's loss is the base's (b starts at zero), to which the sentences are new; what is
// left at the end is mostly the first tokens of a window (a random offset after BOS).
TEST_F(Finetune, LowersTheLossOnItsTextOverAQuantizedBase) {
  ASSERT_EQ(loss_.size(), 150u);
  double last = 0;
  for (int64_t step = 141; step <= 150; ++step) last += loss_.at(step) / 10;
  EXPECT_LT(last, 0.7 * loss_.at(1)) << loss_.at(1) << " -> " << last;
  EXPECT_LT(val_.at(150), 0.7 * loss_.at(1));
}

TEST_F(Finetune, WritesAGgufLoraAdapter) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open((*dir_ / "adapter.gguf").string());
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  EXPECT_EQ(*(*f)->get_string("general.type"), "adapter");
  EXPECT_EQ(*(*f)->get_string("adapter.type"), "lora");
  EXPECT_EQ(*(*f)->get_float("adapter.lora.alpha"), 16.0);
  const gguf::TensorInfo* a = (*f)->find_tensor("blk.1.ffn_down.weight.lora_a");
  const gguf::TensorInfo* b = (*f)->find_tensor("blk.1.ffn_down.weight.lora_b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->ne[0], 64);  // n_ff in
  EXPECT_EQ(a->ne[1], 8);   // r
  EXPECT_EQ(b->ne[0], 8);
  EXPECT_EQ(b->ne[1], 32);  // n_embd out
  EXPECT_EQ((*f)->tensors().size(), 2u * 7 * 2);  // a and b of 7 projections, 2 layers
}

// Trained over the Q8_0 base, applied over the F32 one: it steers the continuations.
TEST_F(Finetune, TheAdapterAppliesAtRunTime) {
  EXPECT_EQ(greedy("the cat", false).rfind("sat on the mat.", 0), 0u) << greedy("the cat", false);
  EXPECT_EQ(greedy("the cat", true).rfind("ran to the park.", 0), 0u) << greedy("the cat", true);
  EXPECT_EQ(greedy("a dog", true).rfind("sat on a mat.", 0), 0u) << greedy("a dog", true);
}

TEST_F(Finetune, ErrorsNameTheProblem) {
  FinetuneOptions o = options("base.gguf");
  o.output_path = (*dir_ / "unused.gguf").string();
  o.targets = "q,attn";
  Status s = finetune_model(o, {});
  EXPECT_NE(s.message().find("unknown LoRA target 'attn'"), std::string::npos) << s.message();
  o = options("absent.gguf");
  s = finetune_model(o, {});
  EXPECT_NE(s.message().find("absent.gguf"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tessera::test
