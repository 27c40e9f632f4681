// Model loader robustness: hand-crafted hostile model and adapter files. Each is a valid
// GGUF file (the file level is gguf_bad_files_test.cpp) that Model::load_from_memory must
// refuse with a message naming the key or tensor at fault and the problem, without
// crashing or allocating for a size it has not checked (the suite runs under ASan/UBSan).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <set>

#include "core/check.h"
#include "tessera/context.h"
#include "tessera/gguf.h"
#include "tessera/model.h"
#include "tessera/synth.h"
#include "tessera/tokenizer.h"
#include "common/lora_test_util.h"

namespace tessera {
namespace {

using Bytes = std::vector<uint8_t>;
using gguf::Value;

constexpr int64_t kEmbd = 32, kLayer = 2, kHead = 4, kHeadKv = 2, kFF = 64, kVocab = 64;
constexpr int64_t kRank = 4;  // of the adapters

// A SentencePiece ("llama") vocabulary of kVocab tokens: <unk>, <s>, </s>, then pieces.
Status add_vocab(gguf::Writer& w) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};  // unknown, control, control
  for (int64_t i = 3; i < kVocab; ++i) {
    tokens.push_back("\xe2\x96\x81t" + std::to_string(i));
    scores.push_back(-float(i));
    types.push_back(1);
  }
  w.set("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens", Value::array(tokens));
  w.set("tokenizer.ggml.scores", Value::array(scores));
  w.set("tokenizer.ggml.token_type", Value::array(types));
  w.set("tokenizer.ggml.bos_token_id", uint32_t(1));
  w.set("tokenizer.ggml.eos_token_id", uint32_t(2));
  return Status::ok();
}

// The valid base: a tiny F32 LLaMA with that vocabulary, written by the synth writer.
const Bytes& base_bytes() {
  static const Bytes bytes = [] {
    SynthParams p;
    p.n_embd = kEmbd;
    p.n_layer = kLayer;
    p.n_head = kHead;
    p.n_head_kv = kHeadKv;
    p.n_ff = kFF;
    p.n_ctx = 128;
    p.type = DType::F32;
    p.vocab = add_vocab;
    const std::string path = test::temp_gguf("model_bad_base");
    const Status s = write_random_model(p, path);
    TESSERA_CHECK_MSG(s.is_ok(), "cannot write the base model");
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  return bytes;
}

const gguf::File& base_file() {
  static const std::unique_ptr<gguf::File> file = [] {
    auto f = gguf::File::from_bytes(base_bytes(), "base.gguf");
    TESSERA_CHECK_MSG(f.is_ok(), "the base model does not parse");
    return std::move(*f);
  }();
  return *file;
}

// The base file with the keys and tensors named in `drop` left out, then `edit` applied.
Bytes rebuild(const std::set<std::string>& drop, const std::function<void(gguf::Writer&)>& edit = {}) {
  const gguf::File& base = base_file();
  gguf::Writer w;
  for (const auto& [key, value] : base.metadata()) {
    if (!drop.count(key)) w.set(key, value);
  }
  for (const gguf::TensorInfo& t : base.tensors()) {
    if (!drop.count(t.name)) w.add_tensor_ref(t.name, t.type, t.ne, t.n_dims, t.data, t.nbytes);
  }
  if (edit) edit(w);
  return w.to_bytes();
}

// Makers for the table: the base with one key set, keys dropped, or a tensor replaced.
std::function<Bytes()> key(const std::string& k, Value v) {
  return [k, v] { return rebuild({}, [&](gguf::Writer& w) { w.set(k, v); }); };
}
std::function<Bytes()> keys(std::vector<std::pair<std::string, Value>> kv, std::set<std::string> drop = {}) {
  return [kv, drop] {
    return rebuild(drop, [&](gguf::Writer& w) {
      for (const auto& [k, v] : kv) w.set(k, v);
    });
  };
}
std::function<Bytes()> without(std::set<std::string> names) {
  return [names] { return rebuild(names); };
}
std::function<Bytes()> tensor(const std::string& name, DType type, std::array<int64_t, 4> ne, int n_dims) {
  return [=] {
    return rebuild({name}, [&](gguf::Writer& w) {
      const std::vector<uint8_t> zeros(dtype_row_size(type, ne[0]) * size_t(ne[1] * ne[2] * ne[3]));
      w.add_tensor(name, type, ne, n_dims, zeros.data(), zeros.size());
    });
  };
}

// An adapter file: keys, then zero-filled F32 tensors (name, shape, n_dims).
struct Adapter {
  std::vector<std::pair<std::string, Value>> keys = {{"general.type", "adapter"},
                                                     {"adapter.type", "lora"},
                                                     {"general.architecture", "llama"},
                                                     {"adapter.lora.alpha", 8.0f}};
  struct T {
    std::string name;
    std::array<int64_t, 4> ne;
    int n_dims = 2;
  };
  // A valid rank-kRank update of blk.0.attn_q.weight [32, 32] and blk.1.ffn_down.weight [64, 32].
  std::vector<T> tensors = {{"blk.0.attn_q.weight.lora_a", {kEmbd, kRank, 1, 1}},
                            {"blk.0.attn_q.weight.lora_b", {kRank, kEmbd, 1, 1}},
                            {"blk.1.ffn_down.weight.lora_a", {kFF, kRank, 1, 1}},
                            {"blk.1.ffn_down.weight.lora_b", {kRank, kEmbd, 1, 1}}};

  void set(const std::string& k, Value v) {
    for (auto& kv : keys) {
      if (kv.first == k) kv.second = std::move(v);
    }
  }
  std::string write() const {
    gguf::Writer w;
    for (const auto& [k, v] : keys) w.set(k, v);
    for (const T& t : tensors) {
      const std::vector<float> zeros(size_t(t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]), 0.01f);
      w.add_tensor(t.name, DType::F32, t.ne, t.n_dims, zeros.data(), zeros.size() * sizeof(float));
    }
    const std::string path = test::temp_gguf("model_bad_adapter");
    TESSERA_CHECK_MSG(w.write(path).is_ok(), "cannot write an adapter");
    return path;
  }
};

struct BadCase {
  const char* name;
  std::function<Bytes()> make;      // the model file
  std::vector<const char*> expect;  // every word must appear in the message
  std::function<void(Adapter&)> adapter = {};  // set: the base model with this adapter
};

Bytes base() { return base_bytes(); }
std::function<void(Adapter&)> adapter_key(const std::string& k, Value v) {
  return [k, v](Adapter& a) { a.set(k, v); };
}
// The first pair updates `weight` instead.
std::function<void(Adapter&)> retarget(const std::string& weight) {
  return [weight](Adapter& a) {
    a.tensors[0].name = weight + ".lora_a";
    a.tensors[1].name = weight + ".lora_b";
  };
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

std::vector<BadCase> bad_cases() {
  return {
      // ---- general.architecture
      {"arch_u32", key("general.architecture", uint32_t(1)), {"general.architecture", "has type u32"}},
      {"arch_missing", without({"general.architecture"}), {"general.architecture", "missing"}},
      {"arch_unknown", key("general.architecture", "nosuch"),
       {"architecture 'nosuch'", "not supported", "llama"}},
      // ---- the shape keys: wrong types, out of range
      {"ctx_string", key("llama.context_length", "long"), {"llama.context_length", "has type string"}},
      {"ctx_missing", without({"llama.context_length"}), {"llama.context_length", "missing"}},
      {"ctx_huge", key("llama.context_length", uint64_t(1) << 40), {"llama.context_length", "out of range"}},
      {"embd_f32", key("llama.embedding_length", 32.0f), {"llama.embedding_length", "has type f32"}},
      {"embd_negative", key("llama.embedding_length", int32_t(-32)),
       {"llama.embedding_length", "-32", "out of range"}},
      {"embd_huge", key("llama.embedding_length", uint64_t(1) << 40),
       {"llama.embedding_length", "1099511627776", "out of range"}},
      {"embd_u64_max", key("llama.embedding_length", ~uint64_t(0)), {"llama.embedding_length", "out of range"}},
      {"layers_string", key("llama.block_count", "2"), {"llama.block_count", "has type string"}},
      {"layers_zero", key("llama.block_count", uint32_t(0)), {"llama.block_count", "= 0", "out of range"}},
      {"layers_2e31", key("llama.block_count", uint32_t(1) << 31),
       {"llama.block_count", "2147483648", "out of range"}},
      {"layers_more_than_tensors", key("llama.block_count", uint32_t(3)), {"blk.2.", "missing"}},
      {"ff_negative", key("llama.feed_forward_length", int32_t(-1)), {"llama.feed_forward_length", "out of range"}},
      {"ff_f32", key("llama.feed_forward_length", 64.0f), {"llama.feed_forward_length", "has type f32"}},
      {"heads_zero", key("llama.attention.head_count", uint32_t(0)), {"llama.attention.head_count", "out of range"}},
      {"heads_string", key("llama.attention.head_count", "4"), {"llama.attention.head_count", "has type string"}},
      {"heads_huge", key("llama.attention.head_count", uint64_t(1) << 40),
       {"llama.attention.head_count", "out of range"}},
      {"kv_heads_negative", key("llama.attention.head_count_kv", int32_t(-2)),
       {"llama.attention.head_count_kv", "out of range"}},
      {"kv_heads_f32", key("llama.attention.head_count_kv", 2.0f),
       {"llama.attention.head_count_kv", "has type f32"}},
      {"heads_do_not_divide_embd", key("llama.attention.head_count", uint32_t(5)),
       {"embedding_length 32", "not a multiple of head_count 5"}},
      {"kv_heads_do_not_divide_heads", key("llama.attention.head_count_kv", uint32_t(3)),
       {"head_count 4", "not a multiple of head_count_kv 3"}},
      {"kv_heads_above_heads", key("llama.attention.head_count_kv", uint32_t(8)), {"head_count_kv 8"}},
      {"key_length_huge", key("llama.attention.key_length", uint64_t(1) << 40),
       {"llama.attention.key_length", "out of range"}},
      {"heads_times_head_size_large",  // the largest of each: their product must not overflow
       keys({{"llama.attention.key_length", uint32_t(1) << 30},
             {"llama.attention.head_count", uint32_t(1) << 30},
             {"llama.attention.head_count_kv", uint32_t(1) << 30}}),
       {"blk.0.attn_q.weight", "expected [32, 1152921504606846976]"}},
      {"value_length_differs", key("llama.attention.value_length", uint32_t(4)),
       {"llama.attention.value_length", "differs"}},
      {"rope_dims_above_head", key("llama.rope.dimension_count", uint32_t(16)),
       {"rope.dimension_count 16", "head size 8"}},
      {"rope_dims_odd", key("llama.rope.dimension_count", uint32_t(7)), {"rope.dimension_count 7", "even"}},
      {"rope_base_zero", key("llama.rope.freq_base", 0.0f), {"llama.rope.freq_base", "= 0", "> 0"}},
      {"rope_scale_negative", key("llama.rope.scaling.factor", -2.0f), {"llama.rope.scaling.factor", ">= 0"}},
      {"sliding_window_negative", key("llama.attention.sliding_window", int32_t(-4)),
       {"llama.attention.sliding_window", "out of range"}},
      {"parallel_residual_u8", key("llama.use_parallel_residual", uint8_t(1)),
       {"llama.use_parallel_residual", "bool"}},
      // ---- norm epsilons
      {"eps_string", key("llama.attention.layer_norm_rms_epsilon", "1e-5"),
       {"llama.attention.layer_norm_rms_epsilon", "has type string"}},
      {"eps_negative", key("llama.attention.layer_norm_rms_epsilon", -1e-5f),
       {"llama.attention.layer_norm_rms_epsilon", ">= 0"}},
      {"eps_nan", key("llama.attention.layer_norm_epsilon", kNan),
       {"llama.attention.layer_norm_epsilon", "= nan", "finite"}},
      {"eps_beyond_f32", key("llama.attention.layer_norm_epsilon", 1e300),
       {"llama.attention.layer_norm_epsilon", "1e+300", "finite"}},
      {"alibi_negative", key("llama.attention.max_alibi_bias", -8.0f),
       {"llama.attention.max_alibi_bias", ">= 0"}},
      // ---- tensors
      {"missing_tensor", without({"blk.1.attn_q.weight"}), {"blk.1.attn_q.weight", "missing"}},
      {"missing_embedding", without({"token_embd.weight"}), {"token_embd.weight", "missing"}},
      {"transposed", tensor("blk.0.attn_k.weight", DType::F32, {16, kEmbd, 1, 1}, 2),
       {"blk.0.attn_k.weight", "[16, 32]", "expected [32, 16]"}},
      {"wrong_n_embd", tensor("token_embd.weight", DType::F32, {kEmbd + 1, kVocab, 1, 1}, 2),
       {"token_embd.weight", "[33, 64]", "expected [32, 64]"}},
      {"embd_key_disagrees", key("llama.embedding_length", uint32_t(64)),
       {"token_embd.weight", "expected [64, 64]"}},
      {"norm_3d", tensor("output_norm.weight", DType::F32, {kEmbd, 1, 2, 1}, 3),
       {"output_norm.weight", "shape [32, 1, 2]"}},
      {"quantized_norm", tensor("blk.0.attn_norm.weight", DType::Q8_0, {kEmbd, 1, 1, 1}, 1),
       {"blk.0.attn_norm.weight", "q8_0", "must be f32"}},
      {"f16_norm", tensor("output_norm.weight", DType::F16, {kEmbd, 1, 1, 1}, 1),
       {"output_norm.weight", "f16", "must be f32"}},
      {"extra_tensor", [] { return rebuild({}, [](gguf::Writer& w) {
         static const float v[kEmbd] = {};
         w.add_tensor_ref("blk.9.attn_norm.weight", DType::F32, {kEmbd, 1, 1, 1}, 1, v, sizeof v);
       }); },
       {"blk.9.attn_norm.weight", "not part of the llama architecture"}},
      // ---- vocabulary
      {"tokens_string", key("tokenizer.ggml.tokens", "abc"), {"tokenizer.ggml.tokens", "not an array"}},
      {"tokens_u32", key("tokenizer.ggml.tokens", Value::array(std::vector<uint32_t>(kVocab, 7))),
       {"tokenizer.ggml.tokens", "array of u32", "array of strings"}},
      {"tokens_empty", key("tokenizer.ggml.tokens", Value::array(std::vector<std::string>{})),
       {"tokenizer.ggml.tokens", "empty"}},
      {"tokens_fewer_than_rows",
       keys({{"tokenizer.ggml.tokens", Value::array(std::vector<std::string>(kVocab - 1, "x"))}},
            {"tokenizer.ggml.scores", "tokenizer.ggml.token_type"}),
       {"token_embd.weight", "expected [32, 63]"}},
      {"vocab_size_zero", keys({{"llama.vocab_size", uint32_t(0)}}, {"tokenizer.ggml.tokens"}),
       {"llama.vocab_size", "out of range"}},
      {"vocab_size_disagrees", key("llama.vocab_size", uint32_t(kVocab + 1)),
       {"token_embd.weight", "expected [32, 65]"}},
      {"scores_short", key("tokenizer.ggml.scores", Value::array(std::vector<float>(kVocab - 1, 0.f))),
       {"tokenizer.ggml.scores", "63 entries", "64"}},
      {"scores_i32", key("tokenizer.ggml.scores", Value::array(std::vector<int32_t>(kVocab, 0))),
       {"tokenizer.ggml.scores", "array of i32"}},
      {"types_long", key("tokenizer.ggml.token_type", Value::array(std::vector<int32_t>(kVocab + 1, 1))),
       {"tokenizer.ggml.token_type", "65 entries", "64"}},
      {"types_string", key("tokenizer.ggml.token_type", "normal"),
       {"tokenizer.ggml.token_type", "has type string"}},
      {"bos_string", key("tokenizer.ggml.bos_token_id", "1"), {"tokenizer.ggml.bos_token_id", "has type string"}},
      {"eos_f32", key("tokenizer.ggml.eos_token_id", 2.0f), {"tokenizer.ggml.eos_token_id", "has type f32"}},
      {"add_bos_u32", key("tokenizer.ggml.add_bos_token", uint32_t(1)),
       {"tokenizer.ggml.add_bos_token", "bool"}},
      {"model_unknown", key("tokenizer.ggml.model", "nosuch"),
       {"tokenizer.ggml.model", "nosuch", "unsupported"}},
      {"model_u32", key("tokenizer.ggml.model", uint32_t(1)), {"tokenizer.ggml.model", "has type u32"}},
      {"gpt2_no_merges", key("tokenizer.ggml.model", "gpt2"), {"tokenizer.ggml.merges", "missing"}},
      {"merges_u32",
       keys({{"tokenizer.ggml.model", "gpt2"}, {"tokenizer.ggml.merges", Value::array(std::vector<uint32_t>{1})}}),
       {"tokenizer.ggml.merges", "array of u32"}},
      {"merge_without_space",
       keys({{"tokenizer.ggml.model", "gpt2"},
             {"tokenizer.ggml.merges", Value::array(std::vector<std::string>{"t 1", "t1"})}}),
       {"tokenizer.ggml.merges", "entry 1", "\"t1\"", "space"}},
      // ---- adapters (given with the valid base)
      {"lora_a_without_b", base, {"blk.0.attn_q.weight.lora_a", "no partner"},
       [](Adapter& a) { a.tensors.erase(a.tensors.begin() + 1); }},
      {"lora_b_without_a", base, {"blk.0.attn_q.weight.lora_b", "no partner"},
       [](Adapter& a) { a.tensors.erase(a.tensors.begin()); }},
      {"lora_rank_mismatch", base, {"blk.0.attn_q.weight.lora_a", "do not fit", "blk.0.attn_q.weight"},
       [](Adapter& a) { a.tensors[1].ne = {kRank + 1, kEmbd, 1, 1}; }},
      {"lora_wrong_n_in", base, {"blk.1.ffn_down.weight.lora_a", "do not fit", "[64, r]"},
       [](Adapter& a) { a.tensors[2].ne = {kEmbd, kRank, 1, 1}; }},
      {"lora_wrong_n_out", base, {"blk.0.attn_q.weight.lora_b", "do not fit"},
       [](Adapter& a) { a.tensors[1].ne = {kRank, kEmbd + 1, 1, 1}; }},
      {"lora_3d", base, {"blk.0.attn_q.weight.lora_a", "do not fit"},
       [](Adapter& a) { a.tensors[0] = {"blk.0.attn_q.weight.lora_a", {kEmbd, kRank, 2, 1}, 3}; }},
      {"lora_missing_layer", base, {"blk.7.attn_q.weight.lora_a", "updates 'blk.7.attn_q.weight'", "not"},
       retarget("blk.7.attn_q.weight")},
      {"lora_of_a_norm", base, {"blk.0.attn_norm.weight.lora_a", "not an attention or feed-forward projection"},
       retarget("blk.0.attn_norm.weight")},
      {"lora_stray_tensor", base, {"blk.0.attn_q.weight.lora_c", "neither"},
       [](Adapter& a) { a.tensors.push_back({"blk.0.attn_q.weight.lora_c", {kEmbd, 1, 1, 1}, 1}); }},
      {"lora_general_type", base, {"general.type", "not 'adapter'"}, adapter_key("general.type", "model")},
      {"lora_general_type_u32", base, {"general.type", "not 'adapter'"}, adapter_key("general.type", uint32_t(1))},
      {"lora_adapter_type", base, {"adapter.type", "not 'lora'"}, adapter_key("adapter.type", "ia3")},
      {"lora_arch", base, {"architecture 'gpt2'", "'llama'"}, adapter_key("general.architecture", "gpt2")},
      {"lora_alpha_string", base, {"adapter.lora.alpha", "has type string"}, adapter_key("adapter.lora.alpha", "8")},
      {"lora_alpha_nan", base, {"adapter.lora.alpha", "= nan", "finite"}, adapter_key("adapter.lora.alpha", kNan)},
      {"lora_alpha_beyond_f32", base, {"adapter.lora.alpha", "1e+300", "finite"},
       adapter_key("adapter.lora.alpha", 1e300)},
  };
}

TEST(ModelBadFiles, BaseFileLoadsAndRuns) {
  Result<std::unique_ptr<Model>> m = Model::load_from_memory(base_bytes(), "base.gguf");
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ((*m)->info().n_vocab, kVocab);
  EXPECT_EQ((*m)->info().n_layer, kLayer);
  ASSERT_NE((*m)->tokenizer(), nullptr);
  EXPECT_EQ((*m)->tokenizer()->bos(), 1);
  Result<std::unique_ptr<Context>> ctx = Context::create(**m, ContextParams{});
  ASSERT_TRUE(ctx) << ctx.status().message();
  const TokenId prompt[] = {1, 5, 9};
  EXPECT_TRUE((*ctx)->decode(prompt).is_ok());
}

TEST(ModelBadFiles, BaseFileLoadsWithTheValidAdapter) {
  ModelParams params;
  params.adapters.push_back({Adapter{}.write(), 0.5f});
  Result<std::unique_ptr<Model>> m = Model::load_from_memory(base_bytes(), "base.gguf", params);
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ((*m)->info().adapters.size(), 1u);
}

TEST(ModelBadFiles, CorpusIsRefusedNamingTheField) {
  const std::vector<BadCase> cases = bad_cases();
  ASSERT_GE(cases.size(), 25u);
  std::set<std::string> names;
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate case name";
    Bytes bytes = c.make();
    EXPECT_TRUE(gguf::File::from_bytes(bytes)) << "the case should be a valid GGUF file";
    ModelParams params;
    std::string prefix = "bad.gguf: ";
    if (c.adapter) {
      Adapter a;
      c.adapter(a);
      params.adapters.push_back({a.write(), 1.0f});
      prefix = params.adapters[0].path + ": lora: ";
    }
    Result<std::unique_ptr<Model>> m = Model::load_from_memory(std::move(bytes), "bad.gguf", params);
    if (m) {
      ADD_FAILURE() << "accepted";
      continue;
    }
    const std::string& msg = m.status().message();
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg;
    for (const char* word : c.expect) {
      EXPECT_NE(msg.find(word), std::string::npos) << "'" << word << "' not in: " << msg;
    }
  }
}

// Special ids outside the vocabulary are ignored with a warning, as llama.cpp does (real
// files carry e.g. a padding id equal to n_vocab): the model loads with the defaults.
TEST(ModelBadFiles, OutOfRangeSpecialIdsKeepTheirDefaults) {
  const Bytes bytes = keys({{"tokenizer.ggml.bos_token_id", int32_t(-5)},
                            {"tokenizer.ggml.eos_token_id", uint32_t(kVocab)},
                            {"tokenizer.ggml.padding_token_id", uint64_t(1) << 40}})();
  Result<std::unique_ptr<Model>> m = Model::load_from_memory(bytes, "ids.gguf");
  ASSERT_TRUE(m) << m.status().message();
  ASSERT_NE((*m)->tokenizer(), nullptr);
  EXPECT_EQ((*m)->tokenizer()->bos(), 1);  // the "llama" defaults
  EXPECT_EQ((*m)->tokenizer()->eos(), 2);
}

// A file without a vocabulary (no tokenizer.ggml.model, or llama.cpp's "none") still
// loads, for token ids only.
TEST(ModelBadFiles, NoVocabularyLoadsWithoutATokenizer) {
  for (const Bytes& bytes : {without({"tokenizer.ggml.model"})(), key("tokenizer.ggml.model", "none")()}) {
    Result<std::unique_ptr<Model>> m = Model::load_from_memory(bytes, "novocab.gguf");
    ASSERT_TRUE(m) << m.status().message();
    EXPECT_EQ((*m)->tokenizer(), nullptr);
  }
}

}  // namespace
}  // namespace tessera
