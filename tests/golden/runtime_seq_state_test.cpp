// Saving and loading one sequence (Context::save_seq_state / load_seq_state): a loaded
// sequence continues with the logits of recomputing it, and bad files (truncated, wrong
// magic, another model, another cache type) are refused with a message, the context
// unchanged.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/runtime_test_util.h"

namespace tessera {
namespace {

using test::make_context;
using test::some_tokens;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "tessera_seq_state_" + std::to_string(getpid()) + "_" + name;
}

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

/// The logits of decoding `next` at position `pos` of `seq`.
std::vector<float> logits_after(Context& ctx, TokenId next, Pos pos, SeqId seq) {
  Batch b;
  b.add(next, pos, seq, true);
  EXPECT_TRUE(ctx.decode(b).is_ok());
  const std::span<const float> l = ctx.logits_at(0);
  return {l.begin(), l.end()};
}

class RuntimeSeqState : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = test::shared_model("stories260K.gguf");
    if (!model_) GTEST_SKIP() << "shared model absent: stories260K.gguf";
    tokens_ = some_tokens(14, 3, 512);
    ctx_ = make_context(*model_, 128, 3);
    Batch b;
    b.add_sequence(tokens_, 0, 0);
    b.add_sequence(some_tokens(5, 4, 512), 0, 1);  // another sequence: not saved
    ASSERT_TRUE(ctx_->decode(b).is_ok());
    path_ = temp_path("seq.bin");
    Result<SeqStateInfo> info = ctx_->save_seq_state(0, path_);
    ASSERT_TRUE(info) << info.status().message();
    EXPECT_EQ(info->n_tokens, 14);
    EXPECT_EQ(info->n_bytes, int64_t(std::filesystem::file_size(path_)));
  }
  void TearDown() override { std::remove(path_.c_str()); }

  /// Loading `path` into sequence 1 of a fresh context fails; its message. The context stays empty.
  std::string load_error(const std::string& path, const Model& m, DType kv = DType::F16) {
    std::unique_ptr<Context> ctx = make_context(m, 128, 3, kv);
    Result<SeqStateInfo> r = ctx->load_seq_state(path, 1);
    EXPECT_FALSE(r);
    EXPECT_EQ(ctx->n_cells_used(), 0);
    return r ? std::string() : r.status().message();
  }

  const Model* model_ = nullptr;
  std::unique_ptr<Context> ctx_;
  std::vector<TokenId> tokens_;
  std::string path_;
};

TEST_F(RuntimeSeqState, LoadedSequenceContinuesAsRecomputed) {
  std::unique_ptr<Context> fresh = make_context(*model_, 128, 3);
  Result<SeqStateInfo> info = fresh->load_seq_state(path_, 2);
  ASSERT_TRUE(info) << info.status().message();
  EXPECT_EQ(info->n_tokens, 14);
  EXPECT_EQ(fresh->seq_tokens(2), tokens_);
  EXPECT_EQ(fresh->n_cells_used(), 14);
  const std::vector<float> loaded = logits_after(*fresh, 7, 14, 2);

  std::unique_ptr<Context> recomputed = make_context(*model_, 128, 3);
  Batch b;
  b.add_sequence(tokens_, 0, 2);
  ASSERT_TRUE(recomputed->decode(b).is_ok());
  EXPECT_EQ(logits_after(*recomputed, 7, 14, 2), loaded);
}

TEST_F(RuntimeSeqState, EmptySequenceSavesZeroTokens) {
  const std::string p = temp_path("empty.bin");
  Result<SeqStateInfo> info = ctx_->save_seq_state(2, p);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->n_tokens, 0);
  std::unique_ptr<Context> fresh = make_context(*model_, 128, 3);
  Result<SeqStateInfo> loaded = fresh->load_seq_state(p, 0);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->n_tokens, 0);
  EXPECT_EQ(fresh->n_cells_used(), 0);
  std::remove(p.c_str());
}

TEST_F(RuntimeSeqState, BadFilesAreRefusedAndChangeNothing) {
  const std::vector<char> good = read_all(path_);
  const std::string p = temp_path("bad.bin");
  write_all(p, std::vector<char>(good.begin(), good.end() - 9));
  EXPECT_NE(load_error(p, *model_).find("truncated"), std::string::npos);
  std::vector<char> magic = good;
  magic[0] = 'X';
  write_all(p, magic);
  EXPECT_NE(load_error(p, *model_).find("bad magic"), std::string::npos);
  // A whole-context state file is not a sequence file.
  ASSERT_TRUE(ctx_->save_state(p).is_ok());
  EXPECT_NE(load_error(p, *model_).find("bad magic"), std::string::npos);
  EXPECT_NE(load_error(path_, *model_, DType::F32).find("cache of other types"), std::string::npos);
  std::remove(p.c_str());
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp." + std::to_string(getpid())));
}

TEST_F(RuntimeSeqState, FileOfAnotherModelIsRefused) {
  const Model* other = test::shared_model("mini-llama-Q8_0.gguf");
  if (!other) GTEST_SKIP() << "shared model absent: mini-llama-Q8_0.gguf";
  const std::string msg = load_error(path_, *other);
  EXPECT_NE(msg.find("another model"), std::string::npos) << msg;
}

TEST_F(RuntimeSeqState, NonEmptyDestinationOrTooFewCellsIsRefused) {
  Result<SeqStateInfo> r = ctx_->load_seq_state(path_, 1);  // sequence 1 holds 5 tokens
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("not empty"), std::string::npos);
  std::unique_ptr<Context> small = make_context(*model_, 8, 1);
  Result<SeqStateInfo> s = small->load_seq_state(path_, 0);
  ASSERT_FALSE(s);
  EXPECT_EQ(small->n_cells_used(), 0);
}

}  // namespace
}  // namespace tessera
