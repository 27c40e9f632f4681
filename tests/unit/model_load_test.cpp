// Model loading: hyper-parameters and the declared tensor list are checked, and every
// problem is reported with the key or tensor it concerns.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>

#include "tessera/context.h"
#include "tessera/gguf.h"
#include "tessera/model.h"

namespace tessera {
namespace {

constexpr int64_t kEmbd = 32, kFF = 48, kVocab = 64, kHead = 4, kHeadKv = 2;

/// A valid tiny LLaMA; `edit` may change the writer before it is written.
std::string write_model(const std::string& name, const std::function<void(gguf::Writer&)>& edit,
                        bool with_output = true, bool extra_tensor = false) {
  gguf::Writer w;
  w.set("general.architecture", "llama");
  w.set("llama.context_length", uint32_t(64));
  w.set("llama.embedding_length", uint32_t(kEmbd));
  w.set("llama.block_count", uint32_t(1));
  w.set("llama.feed_forward_length", uint32_t(kFF));
  w.set("llama.attention.head_count", uint32_t(kHead));
  w.set("llama.attention.head_count_kv", uint32_t(kHeadKv));
  w.set("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set("llama.vocab_size", uint32_t(kVocab));
  const int64_t kv = kEmbd / kHead * kHeadKv;
  auto add = [&](const std::string& n, int64_t a, int64_t b) {
    std::vector<float> v(static_cast<size_t>(a * b), 0.01f);
    w.add_tensor(n, DType::F32, {a, b, 1, 1}, b == 1 ? 1 : 2, v.data(), v.size() * 4);
  };
  add("token_embd.weight", kEmbd, kVocab);
  add("output_norm.weight", kEmbd, 1);
  if (with_output) add("output.weight", kEmbd, kVocab);
  add("blk.0.attn_norm.weight", kEmbd, 1);
  add("blk.0.attn_q.weight", kEmbd, kEmbd);
  add("blk.0.attn_k.weight", kEmbd, kv);
  add("blk.0.attn_v.weight", kEmbd, kv);
  add("blk.0.attn_output.weight", kEmbd, kEmbd);
  add("blk.0.ffn_norm.weight", kEmbd, 1);
  add("blk.0.ffn_gate.weight", kEmbd, kFF);
  add("blk.0.ffn_up.weight", kEmbd, kFF);
  add("blk.0.ffn_down.weight", kFF, kEmbd);
  if (extra_tensor) add("blk.7.attn_q.weight", kEmbd, kEmbd);
  edit(w);
  const std::string path = ::testing::TempDir() + name + ".gguf";
  EXPECT_TRUE(w.write(path).is_ok());
  return path;
}

std::string load_error(const std::string& path) {
  Result<std::unique_ptr<Model>> m = Model::load(path);
  std::remove(path.c_str());
  return m.is_ok() ? std::string() : m.status().message();
}

TEST(ModelLoad, TinyModelLoadsAndRuns) {
  const std::string path = write_model("ok", [](gguf::Writer&) {});
  Result<std::unique_ptr<Model>> m = Model::load(path);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ((*m)->info().n_vocab, kVocab);
  EXPECT_EQ((*m)->info().n_head_kv, kHeadKv);
  EXPECT_EQ((*m)->tokenizer(), nullptr);  // no vocabulary in this file
  Result<std::unique_ptr<Context>> ctx = Context::create(**m, ContextParams{});
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().message();
  const TokenId prompt[] = {1, 2, 3};
  ASSERT_TRUE((*ctx)->decode(prompt).is_ok());
  EXPECT_EQ((*ctx)->logits().size(), size_t(kVocab));
  const TokenId bad[] = {kVocab};
  const Status s = (*ctx)->decode(bad);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("outside the vocabulary"), std::string::npos) << s.message();
  std::remove(path.c_str());
}

TEST(ModelLoad, TiedOutputFallsBackToTokenEmbedding) {
  const std::string path = write_model("tied", [](gguf::Writer&) {}, /*with_output=*/false);
  Result<std::unique_ptr<Model>> m = Model::load(path);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  Result<std::unique_ptr<Context>> ctx = Context::create(**m, ContextParams{});
  ASSERT_TRUE(ctx.is_ok());
  const TokenId prompt[] = {5};
  EXPECT_TRUE((*ctx)->decode(prompt).is_ok());
  std::remove(path.c_str());
}

TEST(ModelLoad, ContextFullIsAnError) {
  const std::string path = write_model("full", [](gguf::Writer&) {});
  Result<std::unique_ptr<Model>> m = Model::load(path);
  ASSERT_TRUE(m.is_ok());
  ContextParams cp;
  cp.n_ctx = 4;
  Result<std::unique_ptr<Context>> ctx = Context::create(**m, cp);
  ASSERT_TRUE(ctx.is_ok());
  const TokenId five[] = {1, 2, 3, 4, 5};
  const Status s = (*ctx)->decode(five);
  EXPECT_NE(s.message().find("context full"), std::string::npos) << s.message();
  std::remove(path.c_str());
}

TEST(ModelLoad, ProblemsAreNamed) {
  struct Case {
    const char* name;
    std::function<void(gguf::Writer&)> edit;
    bool with_output;
    bool extra;
    const char* expect;
  };
  const Case cases[] = {
      {"arch", [](gguf::Writer& w) { w.set("general.architecture", "nosuch"); }, true, false, "nosuch"},
      {"nolayers", [](gguf::Writer& w) { w.set("llama.block_count", uint32_t(0)); }, true, false,
       "llama.block_count"},
      {"heads", [](gguf::Writer& w) { w.set("llama.attention.head_count_kv", uint32_t(3)); }, true,
       false, "head_count"},
      {"ctxtype", [](gguf::Writer& w) { w.set("llama.context_length", "long"); }, true, false,
       "llama.context_length"},
      {"extra", [](gguf::Writer&) {}, true, true, "blk.7.attn_q.weight"},
      {"shape", [](gguf::Writer& w) { w.set("llama.feed_forward_length", uint32_t(50)); }, true,
       false, "ffn_gate"},
  };
  for (const Case& c : cases) {
    const std::string err = load_error(write_model(c.name, c.edit, c.with_output, c.extra));
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.name << ": '" << err << "'";
  }
}

}  // namespace
}  // namespace tessera
