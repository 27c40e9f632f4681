// Saving and restoring a context: a restored context continues bit-identically, and bad
// files (truncated, wrong magic or version, another model, too small a context) are
// refused with a message naming the problem, leaving the context as it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "common/runtime_test_util.h"
#include "tessera/sampler.h"

namespace tessera {
namespace {

using test::make_context;
using test::some_tokens;

// ctest runs the tests of this suite in parallel processes, each with its own files.
std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "tessera_state_" + std::to_string(getpid()) + "_" + name;
}

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

struct Steps {
  std::vector<TokenId> tokens;
  std::vector<std::vector<float>> logits;
};

/// Greedy steps of sequences 0 and 1 decoded together: the logits each step chose from.
Steps continue_greedy(Context& ctx, int n) {
  Steps out;
  TokenId next[2] = {argmax(ctx.logits_at(0)), argmax(ctx.logits_at(1))};
  for (int i = 0; i < n; ++i) {
    Batch b;
    for (SeqId s = 0; s < 2; ++s) b.add(next[s], ctx.seq_pos_max(s) + 1, s, true);
    EXPECT_TRUE(ctx.decode(b).is_ok());
    for (SeqId s = 0; s < 2; ++s) {
      const std::span<const float> l = ctx.logits_at(s);
      out.logits.emplace_back(l.begin(), l.end());
      next[s] = argmax(l);
      out.tokens.push_back(next[s]);
    }
  }
  return out;
}

class RuntimeState : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = test::shared_model("stories260K.gguf");
    if (!model_) GTEST_SKIP() << "shared model absent: stories260K.gguf";
    // Two sequences, one of them shifted (so the file holds re-rotated keys).
    ctx_ = make_context(*model_, 96, 2);
    Batch b;
    b.add_sequence(some_tokens(12, 1, 512), 0, 0);
    b.add_sequence(some_tokens(9, 2, 512), 20, 1);
    ASSERT_TRUE(ctx_->decode(b).is_ok());
    ASSERT_TRUE(ctx_->seq_add(1, -1, -1, -20).is_ok());
    Batch last;  // outputs at batch indices 0 and 1, as continue_greedy reads them
    last.add(3, 12, 0, true);
    last.add(4, 9, 1, true);
    ASSERT_TRUE(ctx_->decode(last).is_ok());
    path_ = temp_path("ok.bin");
    ASSERT_TRUE(ctx_->save_state(path_, user_).is_ok());
  }
  void TearDown() override { std::remove(path_.c_str()); }

  /// The message of loading `path` into a fresh context (which must refuse it and stay empty).
  std::string load_error(const std::string& path, int n_ctx = 96, int n_seq = 2, DType kv = DType::F16) {
    auto fresh = make_context(*model_, n_ctx, n_seq, kv);
    Batch b;
    b.add(1, 0, 0, true);
    EXPECT_TRUE(fresh->decode(b).is_ok());
    Result<std::vector<uint8_t>> r = fresh->load_state(path);
    EXPECT_FALSE(r.is_ok());
    EXPECT_EQ(fresh->n_cells_used(), 1);  // untouched
    return r ? std::string() : r.status().message();
  }

  const Model* model_ = nullptr;
  std::unique_ptr<Context> ctx_;
  std::string path_;
  const std::vector<uint8_t> user_ = {1, 2, 3, 250, 0, 7};
};

TEST_F(RuntimeState, RestoredContextContinuesIdentically) {
  auto restored = make_context(*model_, 96, 2);
  Result<std::vector<uint8_t>> user = restored->load_state(path_);
  ASSERT_TRUE(user.is_ok()) << user.status().message();
  EXPECT_EQ(*user, user_);
  EXPECT_EQ(restored->n_cells_used(), ctx_->n_cells_used());
  for (SeqId s = 0; s < 2; ++s) {
    EXPECT_EQ(restored->seq_tokens(s), ctx_->seq_tokens(s));
    EXPECT_EQ(restored->seq_pos_max(s), ctx_->seq_pos_max(s));
  }
  for (int64_t i = 0; i < 2; ++i) {
    const std::span<const float> a = ctx_->logits_at(i), b = restored->logits_at(i);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << i;
  }
  const Steps original = continue_greedy(*ctx_, 12);
  const Steps again = continue_greedy(*restored, 12);
  EXPECT_EQ(again.tokens, original.tokens);
  EXPECT_EQ(again.logits, original.logits);  // bit-identical
}

TEST_F(RuntimeState, DamagedFilesAreRefused) {
  const std::vector<char> good = read_all(path_);
  ASSERT_GT(good.size(), 200u);
  const std::string bad = temp_path("bad.bin");
  struct Case {
    std::vector<char> bytes;
    const char* expect;
  };
  std::vector<Case> cases;
  cases.push_back({std::vector<char>(good.begin(), good.begin() + 6), "truncated"});
  cases.push_back({std::vector<char>(good.begin(), good.begin() + 40), "truncated"});
  cases.push_back({std::vector<char>(good.begin(), good.end() - 1), "truncated"});
  std::vector<char> longer = good;
  longer.push_back('x');
  cases.push_back({longer, "trailing"});
  std::vector<char> magic = good;
  magic[0] = 'X';
  cases.push_back({magic, "bad magic"});
  std::vector<char> version = good;
  version[8] = 9;
  cases.push_back({version, "version 9"});
  for (const Case& c : cases) {
    write_all(bad, c.bytes);
    const std::string err = load_error(bad);
    EXPECT_NE(err.find(c.expect), std::string::npos) << err;
    EXPECT_NE(err.find(bad), std::string::npos) << err;  // names the file
  }
  EXPECT_NE(load_error(temp_path("absent.bin")).find("cannot read"), std::string::npos);
  std::remove(bad.c_str());
}

TEST_F(RuntimeState, MismatchedContextsAreRefused) {
  EXPECT_NE(load_error(path_, 96, 2, DType::F32).find("cache of other types"), std::string::npos);
  EXPECT_NE(load_error(path_, 96, 1).find("sequences"), std::string::npos);
  EXPECT_NE(load_error(path_, 16, 2).find("cells"), std::string::npos);
  const Model* other = test::shared_model("mini-llama-f16.gguf");
  if (!other) GTEST_SKIP() << "shared model absent: mini-llama-f16.gguf";
  auto ctx = make_context(*other, 96, 2);
  Result<std::vector<uint8_t>> r = ctx->load_state(path_);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("another model: n_vocab 512 in the file, 1024 here"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace tessera
