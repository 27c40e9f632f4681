// quantize_model against the reference quantizer: mini-llama-f16.gguf quantized here must
// get the per-tensor types of ../shared/models/mini-llama-<TYPE>.gguf (made by llama.cpp's
// quantizer at its default recipe), nearly the same blocks, and logits within the golden
// tolerance. Plus the recipe rules on a larger layer count, fallbacks and clean errors.
#include "tessera/quantize.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "common/test_util.h"
#include "model/quant_recipe.h"
#include "tessera/context.h"
#include "tessera/gguf.h"
#include "tessera/model.h"

namespace tessera {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "tessera_quantize_" + std::to_string(getpid()) + "_" + name;  // parallel ctest
}

Result<QuantizeReport> quantize(const std::string& in, const std::string& out,
                                const std::string& type, int threads = 2,
                                bool allow_requantize = false) {
  QuantizeParams p;
  p.type_name = type;
  p.n_threads = threads;
  p.allow_requantize = allow_requantize;
  return quantize_model(in, out, p);
}

std::unique_ptr<gguf::File> open_or_fail(const std::string& path) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open(path);
  EXPECT_TRUE(f.is_ok()) << f.status().message();
  return f ? std::move(*f) : nullptr;
}

double nmse(std::span<const float> a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return num / den;
}

/// Blocks of `a` identical to those of `b` (same type and shape required), and all blocks.
std::pair<size_t, size_t> identical_blocks(const gguf::TensorInfo& a, const gguf::TensorInfo& b) {
  const size_t block = dtype_traits(a.type).type_size;
  const size_t n = a.nbytes / block;
  size_t same = 0;
  for (size_t i = 0; i < n; ++i)
    same += std::memcmp(a.data + i * block, b.data + i * block, block) == 0;
  return {same, n};
}

struct QuantCase {
  const char* type;    // the name given to quantize, and the reference file's suffix
  uint32_t file_type;  // llama.cpp's file type of that recipe
};

class QuantizeGolden : public ::testing::TestWithParam<QuantCase> {};

/// (1) and (2): per-tensor types equal the reference's, and the blocks nearly so: at least
/// 99% in every tensor (one odd block in a small tensor is 1%) and 99.9% over the file.
void compare_with_reference(const gguf::File& ours, const gguf::File& ref) {
  ASSERT_EQ(ours.tensors().size(), ref.tensors().size());
  size_t same_total = 0, blocks_total = 0;
  for (const gguf::TensorInfo& t : ours.tensors()) {
    const gguf::TensorInfo* r = ref.find_tensor(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    ASSERT_EQ(dtype_name(t.type), dtype_name(r->type)) << t.name;
    ASSERT_EQ(t.ne, r->ne) << t.name;
    ASSERT_EQ(t.nbytes, r->nbytes) << t.name;
    if (!dtype_traits(t.type).is_quantized) {  // norms: copied byte for byte
      EXPECT_EQ(std::memcmp(t.data, r->data, t.nbytes), 0) << t.name;
      continue;
    }
    const auto [same, blocks] = identical_blocks(t, *r);
    const double frac = blocks ? double(same) / double(blocks) : 1.0;
    std::printf("  %-28s %-5s identical blocks %6zu / %6zu = %.4f\n", t.name.c_str(),
                std::string(dtype_name(t.type)).c_str(), same, blocks, frac);
    ::testing::Test::RecordProperty("identical_" + t.name, std::to_string(frac));
    EXPECT_GE(frac, 0.99) << t.name;
    same_total += same;
    blocks_total += blocks;
  }
  const double frac = double(same_total) / double(blocks_total);
  std::printf("  all quantized tensors: identical blocks %zu / %zu = %.4f\n", same_total,
              blocks_total, frac);
  ::testing::Test::RecordProperty("identical_all", std::to_string(frac));
  EXPECT_GE(frac, 0.999);
}

/// (4): the output loads and its logits meet the golden tolerance for quantized models.
void check_logits(const std::string& path, const std::string& golden_path) {
  std::ifstream in(golden_path);
  const nlohmann::json golden = nlohmann::json::parse(in);
  Result<std::unique_ptr<Model>> model = Model::load(path);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  ContextParams cp;
  cp.n_threads = 2;
  cp.n_ctx = 64;
  Result<std::unique_ptr<Context>> ctx = Context::create(**model, cp);
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().message();
  const auto prompt = golden["prompt_ids"].get<std::vector<TokenId>>();
  const auto ref = golden["logits_last_prompt"].get<std::vector<float>>();
  ASSERT_TRUE((*ctx)->decode(prompt).is_ok());
  ASSERT_EQ((*ctx)->logits().size(), ref.size());
  const double e = nmse((*ctx)->logits(), ref);
  std::printf("  logits NMSE vs golden: %.3g\n", e);
  ::testing::Test::RecordProperty("nmse", std::to_string(e));
  EXPECT_LE(e, 1e-3);
}

TEST_P(QuantizeGolden, MatchesReferenceQuantizer) {
  const QuantCase& c = GetParam();
  TESSERA_REQUIRE_SHARED(f16, "models/mini-llama-f16.gguf");
  TESSERA_REQUIRE_SHARED(ref_path, std::string("models/mini-llama-") + c.type + ".gguf");
  TESSERA_REQUIRE_SHARED(golden, std::string("golden/mini-llama-") + c.type + ".hello.json");
  const std::string out = temp_path(std::string(c.type) + ".gguf");
  Result<QuantizeReport> report = quantize(f16, out, c.type);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  EXPECT_EQ(report->n_fallbacks, 0u);

  std::unique_ptr<gguf::File> ours = open_or_fail(out);
  std::unique_ptr<gguf::File> ref = open_or_fail(ref_path);
  ASSERT_TRUE(ours && ref);
  compare_with_reference(*ours, *ref);

  // (3) the keys: the reference's file type, quantization version 2 (u32), metadata kept.
  ASSERT_NE(ours->find("general.file_type"), nullptr);
  EXPECT_EQ(ours->find("general.file_type")->type(), gguf::ValueType::U32);
  EXPECT_EQ(*ours->get_int("general.file_type"), int64_t(c.file_type));
  EXPECT_EQ(*ref->get_int("general.file_type"), int64_t(c.file_type));
  ASSERT_NE(ours->find("general.quantization_version"), nullptr);
  EXPECT_EQ(*ours->find("general.quantization_version"), gguf::Value(uint32_t(2)));
  for (const auto& [key, value] : ref->metadata()) {
    if (key == "general.file_type" || key == "general.quantization_version") continue;
    ASSERT_NE(ours->find(key), nullptr) << key;
    EXPECT_EQ(*ours->find(key), value) << key;
  }
  check_logits(out, golden);
  std::filesystem::remove(out);
}

// Measured: every block of every tensor identical to the reference file, for all ten
// types (GCC 12, 1 to 3 threads); the floors above leave room for a compiler that rounds
// one block differently.
INSTANTIATE_TEST_SUITE_P(MiniLlama, QuantizeGolden,
                         ::testing::Values(QuantCase{"Q4_0", 2}, QuantCase{"Q8_0", 7},
                                           QuantCase{"Q4_1", 3}, QuantCase{"Q5_0", 8},
                                           QuantCase{"Q5_1", 9}, QuantCase{"Q2_K", 10},
                                           QuantCase{"Q3_K", 12}, QuantCase{"Q4_K", 15},
                                           QuantCase{"Q5_K", 17}, QuantCase{"Q6_K", 18}),
                         [](const auto& test_info) { return std::string(test_info.param.type); });

TEST(Quantize, ThreadCountDoesNotChangeTheFile) {
  TESSERA_REQUIRE_SHARED(f16, "models/mini-llama-f16.gguf");
  const std::string a = temp_path("t1.gguf"), b = temp_path("t3.gguf");
  ASSERT_TRUE(quantize(f16, a, "Q4_K_M", 1).is_ok());
  ASSERT_TRUE(quantize(f16, b, "q4_k_m", 3).is_ok());  // names are case-insensitive
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  const std::vector<char> da{std::istreambuf_iterator<char>(fa), {}},
      db{std::istreambuf_iterator<char>(fb), {}};
  EXPECT_FALSE(da.empty());
  EXPECT_TRUE(da == db);
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

// (5) clean errors.
TEST(Quantize, RefusesRequantizingUnlessAllowed) {
  TESSERA_REQUIRE_SHARED(q4, "models/mini-llama-Q4_0.gguf");
  const std::string out = temp_path("requant.gguf");
  Result<QuantizeReport> r = quantize(q4, out, "Q8_0");
  ASSERT_FALSE(r.is_ok());
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find(q4), std::string::npos) << msg;
  EXPECT_NE(msg.find("'output.weight'"), std::string::npos) << msg;  // the first tensor there, q6_K
  EXPECT_NE(msg.find("already quantized (q6_K)"), std::string::npos) << msg;
  EXPECT_FALSE(std::filesystem::exists(out));

  Result<QuantizeReport> ok = quantize(q4, out, "Q4_0", 2, true);
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_EQ(ok->n_converted, 0u);  // every tensor already has its recipe's type: copied
  std::unique_ptr<gguf::File> in = open_or_fail(q4), copy = open_or_fail(out);
  ASSERT_TRUE(in && copy);
  for (const gguf::TensorInfo& t : copy->tensors()) {
    EXPECT_EQ(std::memcmp(t.data, in->find_tensor(t.name)->data, t.nbytes), 0) << t.name;
  }
  ASSERT_TRUE(quantize(q4, out, "Q8_0", 2, true).is_ok());  // dequantized, then requantized
  EXPECT_TRUE(Model::load(out).is_ok());
  std::filesystem::remove(out);
}

TEST(Quantize, UnknownTypeListsTheValidOnes) {
  Result<QuantizeReport> r = quantize("whatever.gguf", temp_path("x.gguf"), "Q4_K_X");
  ASSERT_FALSE(r.is_ok());
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("unknown type 'Q4_K_X'"), std::string::npos) << msg;
  for (const std::string& name : quantize_type_names())
    EXPECT_NE(msg.find(name), std::string::npos) << name;
}

TEST(Quantize, MissingInputAndSamePathAreCleanErrors) {
  const std::string missing = temp_path("does-not-exist.gguf");
  Result<QuantizeReport> r = quantize(missing, temp_path("y.gguf"), "Q8_0");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find(missing), std::string::npos) << r.status().message();

  TESSERA_REQUIRE_SHARED(f16, "models/mini-llama-f16.gguf");
  const std::string copy = temp_path("same.gguf");
  std::filesystem::copy_file(f16, copy, std::filesystem::copy_options::overwrite_existing);
  Result<QuantizeReport> same = quantize(copy, copy, "Q8_0");
  ASSERT_FALSE(same.is_ok());
  EXPECT_NE(same.status().message().find("is the input file"), std::string::npos)
      << same.status().message();
  std::filesystem::remove(copy);
}

// Rows that do not fit the blocks: stories260K has n_embd 64 and n_ff 172.
TEST(Quantize, FallbackTypesForRowsThatDoNotFit) {
  TESSERA_REQUIRE_SHARED(stories, "models/stories260K.gguf");
  const std::string out = temp_path("stories-q4km.gguf");
  std::vector<std::string> notes;
  QuantizeParams p;
  p.type_name = "Q4_K_M";
  p.n_threads = 2;
  p.progress = [&](const QuantizeProgress& q) {
    if (!q.note.empty()) notes.push_back(std::string(q.name) + ": " + std::string(q.note));
  };
  Result<QuantizeReport> r = quantize_model(stories, out, p);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->n_fallbacks, notes.size());
  std::unique_ptr<gguf::File> f = open_or_fail(out);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->find_tensor("blk.0.ffn_gate.weight")->type, DType::Q5_0);  // 64 % 256 != 0
  EXPECT_EQ(f->find_tensor("blk.0.ffn_down.weight")->type, DType::F16);   // 172 % 32 != 0
  EXPECT_EQ(f->find_tensor("blk.0.attn_norm.weight")->type, DType::F32);
  bool named = false;
  for (const std::string& n : notes)
    named = named || n.find("blk.0.ffn_down.weight: row length 172") == 0;
  EXPECT_TRUE(named);
  Result<std::unique_ptr<Model>> model = Model::load(out);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  Result<std::unique_ptr<Context>> ctx = Context::create(**model, ContextParams{});
  ASSERT_TRUE(ctx.is_ok());
  const TokenId prompt[] = {1, 482, 100};
  EXPECT_TRUE((*ctx)->decode(prompt).is_ok());
  std::filesystem::remove(out);
}

// The layer-counting rules on a 32-layer LLaMA with 8 KV groups (as llama.cpp gives them).
TEST(QuantRecipe, MoreBitsLayersOfALargerModel) {
  std::vector<std::string> names = {"token_embd.weight", "output.weight", "output_norm.weight"};
  for (int il = 0; il < 32; ++il) {
    for (const char* w : {"attn_v", "ffn_down", "attn_q", "attn_output", "attn_norm"}) {
      names.push_back("blk." + std::to_string(il) + "." + w + ".weight");
    }
  }
  std::vector<TensorDesc> descs;
  for (const std::string& n : names) {
    descs.push_back({n, DType::F16, n.find("norm") == std::string::npos ? 2 : 1, 4096});
  }
  QuantModelFacts facts{"llama", 32, 4, 0, false};
  auto type_of = [&](const char* recipe, const std::string& name) {
    const std::vector<TensorPlan> plans =
        plan_quantization(*find_quant_recipe(recipe), facts, descs);
    for (size_t i = 0; i < descs.size(); ++i) {
      if (descs[i].name == name) return plans[i].type;
    }
    return DType::F32;
  };
  // more bits: i < 4, i >= 28, and (i - 4) % 3 == 2: 6, 9, ..., 27
  EXPECT_EQ(type_of("Q4_K_M", "blk.3.ffn_down.weight"), DType::Q6_K);
  EXPECT_EQ(type_of("Q4_K_M", "blk.4.ffn_down.weight"), DType::Q4_K);
  EXPECT_EQ(type_of("Q4_K_M", "blk.6.attn_v.weight"), DType::Q6_K);
  EXPECT_EQ(type_of("Q4_K_M", "blk.7.attn_v.weight"), DType::Q4_K);
  EXPECT_EQ(type_of("Q4_K_M", "blk.28.ffn_down.weight"), DType::Q6_K);
  EXPECT_EQ(type_of("Q3_K_M", "blk.1.ffn_down.weight"), DType::Q5_K);  // i < n/16
  EXPECT_EQ(type_of("Q3_K_M", "blk.2.ffn_down.weight"), DType::Q4_K);
  EXPECT_EQ(type_of("Q3_K_M", "blk.2.attn_v.weight"), DType::Q4_K);
  EXPECT_EQ(type_of("Q2_K", "blk.5.attn_v.weight"), DType::Q4_K);  // n_gqa >= 4
  EXPECT_EQ(type_of("Q4_K_S", "blk.3.attn_v.weight"), DType::Q5_K);
  EXPECT_EQ(type_of("Q4_K_S", "blk.4.attn_v.weight"), DType::Q4_K);
  EXPECT_EQ(type_of("Q3_K_L", "blk.9.attn_output.weight"), DType::Q5_K);
  EXPECT_EQ(type_of("Q8_0", "output.weight"), DType::Q8_0);
  EXPECT_EQ(type_of("Q5_0", "output.weight"), DType::Q6_K);
  EXPECT_EQ(type_of("F16", "output.weight"), DType::F16);
  EXPECT_EQ(type_of("Q4_K_M", "blk.0.attn_norm.weight"), DType::F16);  // 1-D: kept
}

// The command: a summary on success, one error line otherwise.
TEST(Quantize, CommandLine) {
  TESSERA_REQUIRE_SHARED(f16, "models/mini-llama-f16.gguf");
  const std::string out = temp_path("cli.gguf"), err = temp_path("cli.err");
  auto run = [&](const std::string& args, std::string* text) {
    const int raw =
        std::system((test::cli_path() + " quantize " + args + " 2>" + err + " >/dev/null").c_str());
    std::ifstream in(err);
    text->assign(std::istreambuf_iterator<char>(in), {});
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  };
  std::string text;
  ASSERT_EQ(run(f16 + " " + out + " Q4_K -t 2 -v", &text), 0) << text;
  EXPECT_NE(text.find("as Q4_K_M (file type 15)"), std::string::npos) << text;
  EXPECT_NE(text.find("blk.1.ffn_down.weight"), std::string::npos)
      << text;  // -v: a line per tensor
  EXPECT_NE(text.find("bits per weight"), std::string::npos) << text;
  EXPECT_EQ(run(f16 + " " + out + " Q9_9", &text), 1);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("valid: Q4_0"), std::string::npos) << text;
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace tessera
