// Admission over HTTP (issue 30, item 5): big multi-input requests are one admission
// each, and what the queue refuses leaves nothing behind, so clients sending big
// embedding batches do not make another client's chats fail with 429.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/server_process.h"
#include "common/test_util.h"

namespace tessera {
namespace {

using nlohmann::json;

TEST(ServerAdmission, BigEmbeddingBatchesLeaveRoomForChats) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  std::string error;
  // The defaults but for the threads: 4 slots, a queue of 64.
  auto server = test::ServerProcess::start({"-m", model, "-t", "1", "--embeddings"}, &error);
  ASSERT_TRUE(server) << error;
  json inputs = json::array();
  for (int i = 0; i < 256; ++i) inputs.push_back("a long enough input, number " + std::to_string(i));
  const std::string batch = json{{"input", inputs}}.dump();
  std::atomic<bool> done{false};
  std::atomic<int> batches{0}, batch_failures{0};
  std::vector<std::thread> embedders;
  for (int c = 0; c < 2; ++c) {
    embedders.emplace_back([&] {
      httplib::Client cli("127.0.0.1", server->port());
      cli.set_read_timeout(120, 0);
      while (!done.load()) {
        auto r = cli.Post("/v1/embeddings", batch, "application/json");
        ++batches;
        if (!r || r->status != 200) ++batch_failures;
      }
    });
  }
  httplib::Client cli("127.0.0.1", server->port());
  cli.set_read_timeout(120, 0);
  const json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 4}};
  int ok = 0;
  std::string last_failure;
  for (int i = 0; i < 10; ++i) {
    auto r = cli.Post("/v1/chat/completions", chat.dump(), "application/json");
    if (r && r->status == 200) {
      ++ok;
    } else {
      last_failure = r ? std::to_string(r->status) + " " + r->body : "no answer";
    }
  }
  done = true;
  for (std::thread& t : embedders) t.join();
  EXPECT_EQ(ok, 10) << last_failure;
  EXPECT_GT(batches.load(), 0);
  EXPECT_EQ(batch_failures.load(), 0);
  EXPECT_EQ(server->stop(), 0) << server->log();
}

}  // namespace
}  // namespace tessera
