// POST /slots/{id}?action=save|restore|erase against `tessera serve` on stories260K.gguf:
// a slot's cached prefix saved to --slot-save-path, erased, restored (in this server and
// in a fresh one, where the next request reuses it as if computed), and the refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "golden/server_api.h"

namespace tessera {
namespace {

using nlohmann::json;
using test::Api;
using test::expect_error;
using test::kKey;
using test::Reply;
using test::ServerProcess;

const json kRequest = {{"prompt", "Once upon a time, a little girl named Lily"}, {"n_predict", 8},
                       {"temperature", 0}, {"cache_prompt", true}};

/// One server for the suite: 1 slot, a key, --slot-save-path in a fresh directory.
class ServerSlots : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::shared_file("models/stories260K.gguf").empty()) return;
    dir_ = ::testing::TempDir() + "tessera_slots_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    server_ = test::start_server({"-np", "1", "--api-key", kKey, "--slot-save-path", dir_});
  }
  static void TearDownTestSuite() {
    if (server_) {
      EXPECT_EQ(server_->stop(), 0) << server_->log();
    }
    server_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  void SetUp() override {
    if (test::shared_file("models/stories260K.gguf").empty()) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
    ASSERT_TRUE(server_);
  }
  Api api() { return Api(server_->port()); }
  static Reply action(Api& a, const std::string& what, const std::string& file, int slot = 0) {
    const std::string path = "/slots/" + std::to_string(slot) + "?action=" + what;
    return file.empty() ? a.post(path, std::string()) : a.post(path, json{{"filename", file}});
  }

  static std::unique_ptr<ServerProcess> server_;
  static std::string dir_;
};

std::unique_ptr<ServerProcess> ServerSlots::server_;
std::string ServerSlots::dir_;

TEST_F(ServerSlots, SaveEraseRestoreReuseTheSlotsPrefix) {
  Api a = api();
  action(a, "erase", "");
  const Reply first = a.post("/completion", kRequest);
  ASSERT_EQ(first.status, 200) << first.text;
  EXPECT_EQ(first.body["tokens_cached"], 0);
  const int64_t n_prompt = first.body["tokens_evaluated"];
  const int64_t n_gen = first.body["tokens_predicted"];
  ASSERT_GT(n_gen, 1);

  // The conversation's cells: the prompt and every generated token but the last (sampled,
  // never decoded).
  const Reply saved = action(a, "save", "conv.bin");
  ASSERT_EQ(saved.status, 200) << saved.text;
  EXPECT_EQ(saved.body["id_slot"], 0);
  EXPECT_EQ(saved.body["filename"], "conv.bin");
  EXPECT_EQ(saved.body["n_saved"], n_prompt + n_gen - 1);
  EXPECT_EQ(saved.body["n_written"], int64_t(std::filesystem::file_size(dir_ + "/conv.bin")));
  EXPECT_TRUE(saved.body["timings"]["save_ms"].is_number());

  const Reply erased = action(a, "erase", "");
  ASSERT_EQ(erased.status, 200) << erased.text;
  EXPECT_EQ(erased.body, (json{{"id_slot", 0}, {"n_erased", n_prompt + n_gen - 1}}));
  const Reply again = a.post("/completion", kRequest);
  ASSERT_EQ(again.status, 200) << again.text;
  EXPECT_EQ(again.body["tokens_cached"], 0);  // nothing left to reuse
  EXPECT_EQ(again.body["content"], first.body["content"]);

  ASSERT_EQ(action(a, "erase", "").status, 200);
  EXPECT_EQ(action(a, "erase", "").body["n_erased"], 0);
  const Reply empty = action(a, "save", "empty.bin");  // an idle slot without a cache
  ASSERT_EQ(empty.status, 200) << empty.text;
  EXPECT_EQ(empty.body["n_saved"], 0);

  const Reply restored = action(a, "restore", "conv.bin");
  ASSERT_EQ(restored.status, 200) << restored.text;
  EXPECT_EQ(restored.body["n_restored"], n_prompt + n_gen - 1);
  EXPECT_EQ(restored.body["n_read"], saved.body["n_written"]);
  EXPECT_EQ(restored.body["filename"], "conv.bin");
  EXPECT_TRUE(restored.body["timings"]["restore_ms"].is_number());
  const Reply reused = a.post("/completion", kRequest);
  ASSERT_EQ(reused.status, 200) << reused.text;
  EXPECT_EQ(reused.body["tokens_cached"], n_prompt - 1);  // the last prompt token is always computed
  EXPECT_EQ(reused.body["content"], first.body["content"]);
}

TEST_F(ServerSlots, AFreshServerReusesARestoredFile) {
  Api a = api();
  action(a, "erase", "");
  const Reply first = a.post("/completion", kRequest);
  ASSERT_EQ(first.status, 200) << first.text;
  ASSERT_EQ(action(a, "save", "restart.bin").status, 200);

  // --no-slots hides GET /slots only, as in llama-server: the actions still work.
  auto fresh = test::start_server({"-np", "1", "--api-key", kKey, "--slot-save-path", dir_, "--no-slots"});
  ASSERT_TRUE(fresh);
  Api b(fresh->port());
  const Reply restored = action(b, "restore", "restart.bin");
  ASSERT_EQ(restored.status, 200) << restored.text;
  const Reply reused = b.post("/completion", kRequest);
  ASSERT_EQ(reused.status, 200) << reused.text;
  EXPECT_EQ(reused.body["tokens_cached"], first.body["tokens_evaluated"].get<int64_t>() - 1);
  EXPECT_EQ(reused.body["content"], first.body["content"]);
  EXPECT_EQ(fresh->stop(), 0) << fresh->log();
}

TEST_F(ServerSlots, RefusesBadRequests) {
  Api a = api();
  for (const std::string& name : std::vector<std::string>{"../x.bin", "a/b.bin", "a\\b.bin", "..", std::string(256, 'a')}) {
    expect_error(action(a, "save", name), 400, "filename");
  }
  expect_error(a.post("/slots/0?action=save", json{{"filename", ""}}), 400, "filename");
  expect_error(a.post("/slots/0?action=restore", json::object()), 400, "filename");
  expect_error(action(a, "restore", "absent.bin"), 404);
  expect_error(action(a, "erase", "", 1), 400, "id_slot");
  expect_error(a.post("/slots/x?action=erase", std::string()), 400, "id_slot");
  expect_error(a.post("/slots/0?action=delete", std::string()), 400, "action");
  expect_error(a.post("/slots/0", std::string()), 400, "action");
  // Not a sequence file.
  {
    std::ofstream out(dir_ + "/junk.bin", std::ios::binary);
    out << "not a state file at all";
  }
  const Reply junk = action(a, "restore", "junk.bin");
  expect_error(junk, 400);
  EXPECT_NE(junk.text.find("bad magic"), std::string::npos) << junk.text;
  EXPECT_EQ(Api(server_->port(), "").post("/slots/0?action=erase", std::string()).status, 401);
  EXPECT_EQ(a.get("/slots").status, 200);  // GET /slots still answers
}

TEST_F(ServerSlots, RefusesAFileOfAnotherModel) {
  const std::string other = test::shared_file("models/mini-llama-Q8_0.gguf");
  if (other.empty()) GTEST_SKIP() << "shared file absent: models/mini-llama-Q8_0.gguf";
  std::string error;
  auto s = ServerProcess::start({"-m", other, "-t", "2", "-np", "1", "--slot-save-path", dir_}, &error);
  ASSERT_TRUE(s) << error;
  Api b(s->port(), "");
  ASSERT_EQ(b.post("/completion", kRequest).status, 200);
  ASSERT_EQ(action(b, "save", "other.bin").status, 200);
  EXPECT_EQ(s->stop(), 0) << s->log();

  Api a = api();
  const Reply r = action(a, "restore", "other.bin");
  expect_error(r, 400);
  EXPECT_NE(r.text.find("another model"), std::string::npos) << r.text;
}

TEST(ServerSlotsFlags, WithoutSlotSavePathEveryActionIs501) {
  if (test::shared_file("models/stories260K.gguf").empty()) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  auto s = test::start_server({"-np", "1", "--no-slots"});
  ASSERT_TRUE(s);
  Api a(s->port(), "");
  for (const char* what : {"save", "restore", "erase"}) {
    const Reply r = a.post(std::string("/slots/0?action=") + what, json{{"filename", "x.bin"}});
    expect_error(r, 501);
    EXPECT_NE(r.text.find("--slot-save-path"), std::string::npos) << r.text;
  }
  EXPECT_EQ(s->stop(), 0) << s->log();
}

TEST(ServerSlotsFlags, AMissingSaveDirectoryIsAStartupError) {
  if (test::shared_file("models/stories260K.gguf").empty()) GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
  const std::string dir = ::testing::TempDir() + "tessera_no_such_dir_" + std::to_string(getpid());
  std::string error;
  auto s = ServerProcess::start({"-m", test::shared_file("models/stories260K.gguf"), "--slot-save-path", dir}, &error);
  EXPECT_FALSE(s);
  EXPECT_NE(error.find(dir), std::string::npos) << error;
}

}  // namespace
}  // namespace tessera
