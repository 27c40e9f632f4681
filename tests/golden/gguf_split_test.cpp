// Split GGUF models (tessera/gguf_split.h, `tessera gguf-split`): mini-llama-f16 split
// into 3 parts by the command loads from its first part and meets the single file's
// golden by golden_test.cpp's rules (NMSE <= 1e-5, greedy tokens up to the reference's
// first near-tie), with logits bit-identical to the single file's; merging the parts
// gives the single file back byte for byte; the layout is the reference tool's (keys,
// key order, names, 32-byte padding); a missing, foreign, renumbered or non-first part,
// a tensor in two parts and a wrong tensor count are refused, naming the file.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cli_run.h"
#include "common/test_util.h"
#include "tessera/context.h"
#include "tessera/gguf.h"
#include "tessera/gguf_split.h"
#include "tessera/model.h"
#include "tessera/sampler.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "tessera_split_" + std::to_string(getpid()) + "_" + name;  // parallel ctest
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Logits {
  std::vector<float> last_prompt;
  std::vector<TokenId> greedy;
};

Logits run(const Model& model, const std::vector<TokenId>& prompt, size_t n_greedy) {
  ContextParams cp;
  cp.n_threads = 2;
  cp.n_ctx = int64_t(prompt.size() + n_greedy);
  Result<std::unique_ptr<Context>> ctx = Context::create(model, cp);
  EXPECT_TRUE(ctx.is_ok()) << ctx.status().message();
  Logits out;
  if (!ctx) return out;
  Context& c = **ctx;
  EXPECT_TRUE(c.decode(prompt).is_ok());
  out.last_prompt.assign(c.logits().begin(), c.logits().end());
  for (size_t i = 0; i < n_greedy; ++i) {
    const TokenId next = argmax(c.logits());
    out.greedy.push_back(next);
    const TokenId one[] = {next};
    if (i + 1 < n_greedy) {
      EXPECT_TRUE(c.decode(one).is_ok());
    }
  }
  return out;
}

// The parts of mini-llama-f16 (21 tensors) written by `tessera gguf-split` at 7 tensors a
// part: 7 + 7 + 7. Made once for the suite.
class GgufSplitTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    source_ = test::shared_file("models/mini-llama-f16.gguf");
    if (source_.empty()) return;
    prefix_ = temp_path("mini");
    split_ = test::run_tessera("gguf-split --split --split-max-tensors 7 '" + source_ + "' '" + prefix_ + "'");
  }
  static void TearDownTestSuite() {
    for (int i = 0; i < 3; ++i) fs::remove(gguf::split_part_path(prefix_, i, 3));
  }
  void SetUp() override {
    if (source_.empty()) {
      TESSERA_REQUIRE_SHARED(f16, "models/mini-llama-f16.gguf");
    }
    ASSERT_EQ(split_.status, 0) << split_.err;
  }
  static std::string part(int i) { return gguf::split_part_path(prefix_, i, 3); }

  // A copy of the parts under a new prefix, to break one of them.
  static std::string copy_parts(const std::string& name) {
    const std::string prefix = temp_path(name);
    for (int i = 0; i < 3; ++i) {
      fs::copy_file(part(i), gguf::split_part_path(prefix, i, 3), fs::copy_options::overwrite_existing);
    }
    return prefix;
  }
  static void remove_parts(const std::string& prefix) {
    for (int i = 0; i < 3; ++i) fs::remove(gguf::split_part_path(prefix, i, 3));
  }

  static inline std::string source_, prefix_;
  static inline test::CliOutput split_;
};

TEST_F(GgufSplitTest, PartsHaveTheReferenceLayout) {
  Result<std::unique_ptr<gguf::File>> single = gguf::File::open(source_);
  ASSERT_TRUE(single.is_ok());
  size_t tensors = 0;
  const size_t expected[] = {7, 7, 7};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(fs::exists(part(i))) << part(i);
    Result<std::unique_ptr<gguf::File>> p = gguf::File::open(part(i));
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    const gguf::File& f = **p;
    EXPECT_EQ(f.tensors().size(), expected[i]);
    // The split keys come last, in the reference's order and types.
    const auto& md = f.metadata();
    ASSERT_GE(md.size(), 3u);
    EXPECT_EQ(md[md.size() - 3].first, "split.no");
    EXPECT_EQ(md[md.size() - 2].first, "split.tensors.count");
    EXPECT_EQ(md[md.size() - 1].first, "split.count");
    EXPECT_EQ(md[md.size() - 3].second.type(), gguf::ValueType::U16);
    EXPECT_EQ(md[md.size() - 2].second.type(), gguf::ValueType::I32);
    EXPECT_EQ(md[md.size() - 1].second.type(), gguf::ValueType::U16);
    EXPECT_EQ(*f.get_int("split.no"), i);
    EXPECT_EQ(*f.get_int("split.count"), 3);
    EXPECT_EQ(*f.get_int("split.tensors.count"), 21);
    // Only the first part carries the model's metadata.
    EXPECT_EQ(md.size(), i == 0 ? (*single)->metadata().size() + 3 : 3u);
    for (const gguf::TensorInfo& t : f.tensors()) {
      const gguf::TensorInfo& orig = (*single)->tensors()[tensors++];
      EXPECT_EQ(t.name, orig.name);  // the original order
      EXPECT_EQ(t.offset % 32, 0u);
      EXPECT_EQ(std::memcmp(t.data, orig.data, t.nbytes), 0) << t.name;
    }
    EXPECT_EQ(f.file_size() % 32, 0u) << "each part ends padded, as the reference writes it";
  }
  EXPECT_EQ(tensors, 21u);
}

TEST_F(GgufSplitTest, FirstPartLoadsAllAndMeetsTheGolden) {
  TESSERA_REQUIRE_SHARED(golden_path, "golden/mini-llama-f16.hello.json");
  std::ifstream in(golden_path);
  const nlohmann::json golden = nlohmann::json::parse(in);
  const auto prompt = golden["prompt_ids"].get<std::vector<TokenId>>();
  const auto ref_logits = golden["logits_last_prompt"].get<std::vector<float>>();
  const auto ref_greedy = golden["greedy"].get<std::vector<TokenId>>();

  Result<std::unique_ptr<Model>> split = Model::load(part(0));
  ASSERT_TRUE(split.is_ok()) << split.status().message();
  EXPECT_EQ((*split)->file().part_count(), 3u);
  EXPECT_EQ((*split)->file().tensors().size(), 21u);
  EXPECT_EQ((*split)->file().find("split.count"), nullptr) << "the split keys are not model metadata";
  Result<std::unique_ptr<Model>> single = Model::load(source_);
  ASSERT_TRUE(single.is_ok()) << single.status().message();

  const Logits a = run(**split, prompt, ref_greedy.size());
  const Logits b = run(**single, prompt, ref_greedy.size());
  ASSERT_EQ(a.last_prompt.size(), ref_logits.size());
  EXPECT_EQ(a.last_prompt, b.last_prompt) << "the same weights, the same logits";
  EXPECT_EQ(a.greedy, b.greedy);
  double num = 0, den = 0;
  for (size_t i = 0; i < ref_logits.size(); ++i) {
    num += (double(a.last_prompt[i]) - ref_logits[i]) * (double(a.last_prompt[i]) - ref_logits[i]);
    den += double(ref_logits[i]) * ref_logits[i];
  }
  EXPECT_LE(num / den, 1e-5);
  // Greedy tokens up to the reference's first near-tie (gap < 0.02), as golden_test.cpp.
  const auto& steps = golden["top5_per_step"];
  for (size_t i = 0; i < steps.size() && i < a.greedy.size(); ++i) {
    if (steps[i][0][1].get<double>() - steps[i][1][1].get<double>() < 0.02) break;
    EXPECT_EQ(a.greedy[i], ref_greedy[i]) << "greedy step " << i;
  }
}

TEST_F(GgufSplitTest, RunCommandLoadsTheFirstPart) {
  const test::CliOutput out =
      test::run_tessera("run -m '" + part(0) + "' -p 'Hello' -n 4 --temp 0 -t 2 --ids");
  EXPECT_EQ(out.status, 0) << out.err;
  const test::CliOutput ref = test::run_tessera("run -m '" + source_ + "' -p 'Hello' -n 4 --temp 0 -t 2 --ids");
  EXPECT_EQ(out.out, ref.out);
  // --no-mmap reads every part into memory instead.
  const test::CliOutput read =
      test::run_tessera("run -m '" + part(0) + "' -p 'Hello' -n 4 --temp 0 -t 2 --ids --no-mmap");
  EXPECT_EQ(read.status, 0) << read.err;
  EXPECT_EQ(read.out, ref.out);
}

TEST_F(GgufSplitTest, PartsReadIntoMemoryGiveTheMappedModel) {
  ModelParams params;
  params.mmap = false;
  Result<std::unique_ptr<Model>> read = Model::load(part(0), params);
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_EQ((*read)->file().part_count(), 3u);
  Result<std::unique_ptr<Model>> mapped = Model::load(part(0));
  ASSERT_TRUE(mapped.is_ok()) << mapped.status().message();
  const std::vector<TokenId> prompt = {1, 450, 302, 17};
  EXPECT_EQ(run(**read, prompt, 2).last_prompt, run(**mapped, prompt, 2).last_prompt);
  // A missing part is refused by name this way too.
  const std::string prefix = copy_parts("missing-read");
  fs::remove(gguf::split_part_path(prefix, 2, 3));
  Result<std::unique_ptr<Model>> m = Model::load(gguf::split_part_path(prefix, 0, 3), params);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find(gguf::split_part_path(prefix, 2, 3)), std::string::npos)
      << m.status().message();
  remove_parts(prefix);
}

TEST_F(GgufSplitTest, MergeGivesTheSingleFileBack) {
  const std::string merged = temp_path("merged.gguf");
  fs::remove(merged);
  const test::CliOutput out = test::run_tessera("gguf-split --merge '" + part(0) + "' '" + merged + "'");
  ASSERT_EQ(out.status, 0) << out.err;
  EXPECT_TRUE(read_bytes(merged) == read_bytes(source_)) << "merged file differs from " << source_;
  // The output is never overwritten (as the reference's tool).
  const test::CliOutput again = test::run_tessera("gguf-split --merge '" + part(0) + "' '" + merged + "'");
  EXPECT_EQ(again.status, 1);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  fs::remove(merged);
}

TEST_F(GgufSplitTest, MissingPartIsRefusedByName) {
  const std::string prefix = copy_parts("missing");
  fs::remove(gguf::split_part_path(prefix, 1, 3));
  Result<std::unique_ptr<Model>> m = Model::load(gguf::split_part_path(prefix, 0, 3));
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find(gguf::split_part_path(prefix, 1, 3)), std::string::npos)
      << m.status().message();
  const test::CliOutput out =
      test::run_tessera("run -m '" + gguf::split_part_path(prefix, 0, 3) + "' -p Hi -n 1");
  EXPECT_EQ(out.status, 1);
  EXPECT_NE(out.err.find("-00002-of-00003.gguf"), std::string::npos) << out.err;
  remove_parts(prefix);
}

TEST_F(GgufSplitTest, MismatchedPartIsRefusedByName) {
  // Part 2's file in part 3's place: its split.no says 1.
  const std::string prefix = copy_parts("renumbered");
  fs::copy_file(part(1), gguf::split_part_path(prefix, 2, 3), fs::copy_options::overwrite_existing);
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open_model(gguf::split_part_path(prefix, 0, 3));
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find(gguf::split_part_path(prefix, 2, 3)), std::string::npos)
      << f.status().message();
  EXPECT_NE(f.status().message().find("split.no 1"), std::string::npos) << f.status().message();
  remove_parts(prefix);

  // A part of another split (2 parts) in part 2's place: split.count says 2.
  const std::string other = temp_path("other");
  const test::CliOutput two =
      test::run_tessera("gguf-split --split-max-tensors 11 '" + source_ + "' '" + other + "'");
  ASSERT_EQ(two.status, 0) << two.err;
  const std::string foreign = copy_parts("foreign");
  fs::copy_file(gguf::split_part_path(other, 1, 2), gguf::split_part_path(foreign, 1, 3),
                fs::copy_options::overwrite_existing);
  f = gguf::File::open_model(gguf::split_part_path(foreign, 0, 3));
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find(gguf::split_part_path(foreign, 1, 3)), std::string::npos)
      << f.status().message();
  EXPECT_NE(f.status().message().find("split.count 2"), std::string::npos) << f.status().message();
  remove_parts(foreign);
  for (int i = 0; i < 2; ++i) fs::remove(gguf::split_part_path(other, i, 2));
}

TEST_F(GgufSplitTest, LaterPartIsRefusedWithTheFirstNamed) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open_model(part(1));
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("part 2 of 3"), std::string::npos) << f.status().message();
  EXPECT_NE(f.status().message().find(part(0)), std::string::npos) << f.status().message();
}

// Parts built by hand: a tensor in two parts, and fewer tensors than split.tensors.count.
TEST(GgufSplitFiles, DuplicateAndMissingTensorsAreRefused) {
  const float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  auto write_part = [&](const std::string& prefix, int no, const std::vector<std::string>& names, int total) {
    gguf::Writer w;
    w.set("split.no", uint16_t(no));
    w.set("split.tensors.count", int32_t(total));
    w.set("split.count", uint16_t(2));
    for (const std::string& n : names) w.add_tensor(n, DType::F32, {8, 1, 1, 1}, 1, data, sizeof data);
    ASSERT_TRUE(w.write(gguf::split_part_path(prefix, no, 2)).is_ok());
  };
  const std::string dup = temp_path("dup");
  write_part(dup, 0, {"a", "b"}, 3);
  write_part(dup, 1, {"c", "a"}, 3);
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open_model(gguf::split_part_path(dup, 0, 2));
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("'a'"), std::string::npos) << f.status().message();
  EXPECT_NE(f.status().message().find(gguf::split_part_path(dup, 1, 2)), std::string::npos) << f.status().message();

  const std::string few = temp_path("few");
  write_part(few, 0, {"a", "b"}, 4);
  write_part(few, 1, {"c"}, 4);
  f = gguf::File::open_model(gguf::split_part_path(few, 0, 2));
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("split.tensors.count is 4"), std::string::npos) << f.status().message();

  write_part(few, 0, {"a", "b"}, 3);  // now right: the parts load, tensors placed by part
  f = gguf::File::open_model(gguf::split_part_path(few, 0, 2));
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  EXPECT_EQ((*f)->tensors().size(), 3u);
  EXPECT_EQ((*f)->find_tensor("c")->part, 1);
  EXPECT_EQ(std::memcmp((*f)->find_tensor("c")->data, data, sizeof data), 0);
  for (const std::string& p : {dup, few}) {
    for (int i = 0; i < 2; ++i) fs::remove(gguf::split_part_path(p, i, 2));
  }
}

// The size rule: a new part when the next tensor (padded to 32) would go past the limit;
// a tensor over the limit alone in its part.
TEST(GgufSplitFiles, PlanBySize) {
  gguf::Writer w;
  std::vector<float> data(1000, 1.0f);  // 4000 bytes, 4000 padded
  for (const char* n : {"a", "b", "c", "d"}) w.add_tensor(n, DType::F32, {1000, 1, 1, 1}, 1, data.data(), 4000);
  std::vector<float> big(3000, 2.0f);  // 12000 bytes
  w.add_tensor("e", DType::F32, {3000, 1, 1, 1}, 1, big.data(), 12000);
  w.add_tensor("f", DType::F32, {1000, 1, 1, 1}, 1, data.data(), 4000);
  Result<std::unique_ptr<gguf::File>> f = gguf::File::from_bytes(w.to_bytes());
  ASSERT_TRUE(f.is_ok());
  gguf::SplitOptions o;
  o.max_bytes = 8000;
  Result<std::vector<gguf::SplitPart>> plan = gguf::plan_split(**f, "/x/m", o);
  ASSERT_TRUE(plan.is_ok());
  ASSERT_EQ(plan->size(), 4u);
  EXPECT_EQ((*plan)[0].tensors, (std::vector<size_t>{0, 1}));
  EXPECT_EQ((*plan)[1].tensors, (std::vector<size_t>{2, 3}));
  EXPECT_EQ((*plan)[2].tensors, (std::vector<size_t>{4}));
  EXPECT_EQ((*plan)[3].tensors, (std::vector<size_t>{5}));
  EXPECT_EQ((*plan)[3].path, "/x/m-00004-of-00004.gguf");
  o.no_tensor_first_split = true;
  plan = gguf::plan_split(**f, "/x/m", o);
  ASSERT_TRUE(plan.is_ok());
  ASSERT_EQ(plan->size(), 5u);
  EXPECT_TRUE((*plan)[0].tensors.empty());
  EXPECT_EQ((*plan)[1].tensors, (std::vector<size_t>{0, 1}));
}

TEST(GgufSplitFiles, NamesAsTheReference) {
  EXPECT_EQ(gguf::split_part_path("dir/model", 0, 3), "dir/model-00001-of-00003.gguf");
  EXPECT_EQ(gguf::split_prefix("dir/model-00002-of-00003.gguf", 1, 3), "dir/model");
  EXPECT_FALSE(gguf::split_prefix("dir/model-00002-of-00003.gguf", 0, 3).has_value());
  EXPECT_FALSE(gguf::split_prefix("-00001-of-00003.gguf", 0, 3).has_value());
}

TEST(GgufSplitCli, UsageErrors) {
  const test::CliOutput both = test::run_tessera("gguf-split --split --merge /dev/null /tmp/x");
  EXPECT_EQ(both.status, 2);
  const test::CliOutput unit = test::run_tessera("gguf-split --split-max-size 2K /dev/null /tmp/x");
  EXPECT_EQ(unit.status, 2);
  EXPECT_NE(unit.err.find("--split-max-size"), std::string::npos) << unit.err;
  const test::CliOutput help = test::run_tessera("gguf-split --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("--split-max-tensors"), std::string::npos);
}

}  // namespace
}  // namespace tessera
