// LoRA adapters at run time over real HTTP, as llama-server has them (docs/server.md):
// GET/POST /lora-adapters and the per-request `lora` field, against `tessera serve` on
// stories260K.gguf with a random adapter of every projection. References come from
// servers started with the adapter at a fixed scale (--lora FILE:S) and without it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/lora_test_util.h"
#include "golden/server_api.h"
#include "tessera/model.h"
#include "tessera/mpi.h"

namespace tessera {
namespace {

using nlohmann::json;
using test::Api;
using test::expect_error;
using test::kKey;
using test::Reply;
using test::ServerProcess;

constexpr const char* kModel = "models/stories260K.gguf";

/// A random adapter of every projection of the model, strong enough to change its
/// greedy output.
std::string write_adapter() {
  const std::string base = test::shared_file(kModel);
  Result<std::unique_ptr<Model>> m = Model::load(base);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  if (!m) return {};
  Result<test::AdapterFile> f =
      test::adapter_for(base, test::llama_projections((*m)->info().n_layer), 4);
  EXPECT_TRUE(f.is_ok()) << f.status().message();
  if (!f) return {};
  f->stddev = 0.4f;
  f->alpha = 8;
  const std::string path = test::temp_gguf("server_lora");
  EXPECT_TRUE(test::write_adapter(*f, path).is_ok());
  return path;
}

/// Three servers: with the adapter at scale 1 (the one under test), with it at 0.5, and
/// without it.
class ServerHttpLora : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::shared_file(kModel).empty()) return;
    adapter_ = write_adapter();
    if (adapter_.empty()) return;
    // Room in each slot's region for several cached prompts (a full region evicts them).
    server_ = test::start_server(
        {"-np", "2", "-c", "1024", "--ctx-per-seq", "128", "--api-key", kKey, "--lora", adapter_});
    half_ = test::start_server({"-np", "1", "--api-key", kKey, "--lora", adapter_ + ":0.5"});
    plain_ = test::start_server({"-np", "1", "--api-key", kKey});
  }
  static void TearDownTestSuite() {
    for (std::unique_ptr<ServerProcess>* s : {&server_, &half_, &plain_}) {
      if (*s) {
        EXPECT_EQ((*s)->stop(), 0) << (*s)->log();
      }
      s->reset();
    }
  }
  void SetUp() override {
    if (test::shared_file(kModel).empty()) GTEST_SKIP() << "shared file absent: " << kModel;
    ASSERT_TRUE(server_ && half_ && plain_);
    // Every test starts from the defaults of the command line.
    ASSERT_EQ(
        api().post("/lora-adapters", json::array({{{"id", 0}, {"scale", 1.0}}}).dump()).status,
        200);
  }
  static Api api() { return Api(server_->port()); }

  /// The greedy text of `prompt` on the server at `port`, with `extra` fields.
  static std::string complete(int port, const std::string& prompt, json extra = json::object()) {
    json body = {
        {"prompt", prompt}, {"n_predict", 24}, {"temperature", 0}, {"cache_prompt", false}};
    body.update(extra);
    Api a(port);
    const Reply r = a.post("/completion", body);
    EXPECT_EQ(r.status, 200) << r.text;
    return r.body.value("content", std::string());
  }

  static std::string adapter_;
  static std::unique_ptr<ServerProcess> server_, half_, plain_;
};

std::string ServerHttpLora::adapter_;
std::unique_ptr<ServerProcess> ServerHttpLora::server_, ServerHttpLora::half_,
    ServerHttpLora::plain_;

json lora(float scale) { return json::array({{{"id", 0}, {"scale", scale}}}); }

TEST_F(ServerHttpLora, GetListsTheAdaptersAndPostSetsTheirScales) {
  Api a = api();
  Reply r = a.get("/lora-adapters");
  ASSERT_EQ(r.status, 200) << r.text;
  ASSERT_TRUE(r.body.is_array() && r.body.size() == 1) << r.text;
  EXPECT_EQ(r.body[0]["id"], 0);
  EXPECT_EQ(r.body[0]["path"], adapter_);
  EXPECT_EQ(r.body[0]["scale"], 1.0);

  r = a.post("/lora-adapters", lora(0.25f).dump());
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body, json({{"success", true}}));
  EXPECT_EQ(a.get("/lora-adapters").body[0]["scale"], 0.25);
  EXPECT_EQ(a.get("/props").body["lora_adapters"][0]["scale"], 0.25);
  EXPECT_EQ(a.get("/v1/models").body["data"][0]["meta"]["lora_adapters"][0]["scale"], 0.25);

  // Adapters left out of the list get scale 0, as in llama-server.
  ASSERT_EQ(a.post("/lora-adapters", std::string("[]")).status, 200);
  EXPECT_EQ(a.get("/lora-adapters").body[0]["scale"], 0.0);

  // Both need the key.
  Api nokey(server_->port(), "");
  expect_error(nokey.get("/lora-adapters"), 401);
  expect_error(nokey.post("/lora-adapters", lora(1).dump()), 401);
  EXPECT_EQ(a.get("/lora-adapters").body[0]["scale"], 0.0);
}

TEST_F(ServerHttpLora, PostedScalesGiveTheModelLoadedWithThem) {
  const std::string prompt = "Once upon a time";
  const std::string adapted = complete(server_->port(), prompt);
  const std::string base = complete(plain_->port(), prompt);
  const std::string half = complete(half_->port(), prompt);
  ASSERT_NE(adapted, base) << "the adapter changes nothing: the test cannot tell scales apart";
  Api a = api();
  ASSERT_EQ(a.post("/lora-adapters", lora(0).dump()).status, 200);
  EXPECT_EQ(complete(server_->port(), prompt), base);
  ASSERT_EQ(a.post("/lora-adapters", lora(0.5f).dump()).status, 200);
  EXPECT_EQ(complete(server_->port(), prompt), half);
  ASSERT_EQ(a.post("/lora-adapters", lora(1).dump()).status, 200);
  EXPECT_EQ(complete(server_->port(), prompt), adapted);
}

TEST_F(ServerHttpLora, RequestScalesOverrideTheDefaultsOnEveryRoute) {
  const std::string prompt = "Lily went to the park";
  const std::string base = complete(plain_->port(), prompt);
  const std::string half = complete(half_->port(), prompt);
  EXPECT_EQ(complete(server_->port(), prompt, {{"lora", lora(0)}}), base);
  EXPECT_EQ(complete(server_->port(), prompt, {{"lora", json::array()}}), base);  // not listed: 0
  EXPECT_EQ(complete(server_->port(), prompt, {{"lora", lora(0.5f)}}), half);
  EXPECT_EQ(complete(server_->port(), prompt, {{"lora", nullptr}}),
            complete(server_->port(), prompt));

  Api a = api();
  const json v1 = {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}, {"lora", lora(0)}};
  Reply r = a.post("/v1/completions", v1);
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["choices"][0]["text"], base);
  r = a.post("/completions",
             json{{"prompt", prompt}, {"n_predict", 24}, {"temperature", 0}, {"lora", lora(0)}});
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["content"], base);

  const json chat = {
      {"messages", json::array({{{"role", "user"}, {"content", "Tell me a story"}}})},
      {"max_tokens", 16},
      {"temperature", 0}};
  json chat0 = chat;
  chat0["lora"] = lora(0);
  const Reply want = Api(plain_->port()).post("/v1/chat/completions", chat);
  r = a.post("/v1/chat/completions", chat0);
  ASSERT_EQ(r.status, 200) << r.text;
  ASSERT_EQ(want.status, 200) << want.text;
  EXPECT_EQ(r.body["choices"][0]["message"]["content"],
            want.body["choices"][0]["message"]["content"]);
}

// Two clients with different scales at once, each several times: each gets exactly what
// it gets alone (the engine never decodes the two sets in one step).
TEST_F(ServerHttpLora, ConcurrentClientsWithDifferentScalesGetWhatTheyGetAlone) {
  const std::string p0 = "The little dog ran to the park and",
                    p1 = "One day, a big red ball rolled";
  const std::string want0 = complete(server_->port(), p0, {{"lora", lora(1)}});
  const std::string want1 = complete(plain_->port(), p1);
  std::vector<std::string> got0(4), got1(4);
  std::thread t0([&] {
    for (std::string& g : got0)
      g = complete(server_->port(), p0, {{"lora", lora(1)}, {"cache_prompt", true}});
  });
  std::thread t1([&] {
    for (std::string& g : got1)
      g = complete(server_->port(), p1, {{"lora", lora(0)}, {"cache_prompt", true}});
  });
  t0.join();
  t1.join();
  for (size_t i = 0; i < got0.size(); ++i) {
    EXPECT_EQ(got0[i], want0) << "round " << i;
    EXPECT_EQ(got1[i], want1) << "round " << i;
  }
}

// The same prompt with scale 1, then 0: the second is not served from the first's cached
// prefix (other keys and values); with scale 1 again it is. The prompt is token ids
// without BOS, so that no other test's cached prompt shares its start.
TEST_F(ServerHttpLora, APromptCachedUnderOneScaleIsNotReusedUnderAnother) {
  Api a = api();
  const Reply tok =
      a.post("/tokenize", json{{"content", "Tom had a red kite that flew high above the houses"}});
  ASSERT_EQ(tok.status, 200) << tok.text;
  const json prompt = tok.body["tokens"];
  const int64_t n_prompt = int64_t(prompt.size());
  auto once = [&](int port, const json& lora_field) {
    json body = {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}};
    if (!lora_field.is_null()) body["lora"] = lora_field;
    const Reply r = Api(port).post("/v1/completions", body);
    EXPECT_EQ(r.status, 200) << r.text;
    return r;
  };
  auto cached = [](const Reply& r) {
    return r.body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  };
  const Reply base = once(plain_->port(), nullptr);
  const Reply first = once(server_->port(), lora(1));
  EXPECT_EQ(cached(first), 0) << first.text;
  const Reply zero = once(server_->port(), lora(0));
  EXPECT_EQ(cached(zero), 0) << "a prefix computed with scale 1 served scale 0: " << zero.text;
  EXPECT_EQ(zero.body["choices"][0]["text"], base.body["choices"][0]["text"]);
  const Reply again = once(server_->port(), lora(1));
  EXPECT_EQ(cached(again), n_prompt - 1) << again.text;
  EXPECT_EQ(again.body["choices"][0]["text"], first.body["choices"][0]["text"]);
  const Reply zero_again = once(server_->port(), lora(0));
  EXPECT_EQ(cached(zero_again), n_prompt - 1) << zero_again.text;
  EXPECT_EQ(zero_again.body["choices"][0]["text"], base.body["choices"][0]["text"]);
}

TEST_F(ServerHttpLora, BadListsAre400sNamingTheField) {
  Api a = api();
  const json ok = {{"prompt", "hi"}, {"n_predict", 2}};
  auto with = [&](json lora_value) {
    json body = ok;
    body["lora"] = std::move(lora_value);
    return a.post("/completion", body);
  };
  expect_error(with("0:1"), 400, "lora");
  expect_error(with(json::object({{"id", 0}})), 400, "lora");
  expect_error(with(json::array({{{"id", 0}, {"scale", 1}}, {{"id", 7}, {"scale", 1}}})), 400,
               "lora[1].id");
  const Reply r = with(json::array({{{"id", 0}}, {{"id", 7}}}));
  EXPECT_NE(r.text.find("no adapter with id 7"), std::string::npos) << r.text;
  expect_error(with(json::array({{{"id", -1}, {"scale", 1}}})), 400, "lora[0].id");
  expect_error(with(json::array({{{"scale", 1}}})), 400, "lora[0].id");
  expect_error(with(json::array({{{"id", "0"}, {"scale", 1}}})), 400, "lora[0].id");
  expect_error(with(json::array({{{"id", 0}, {"scale", "high"}}})), 400, "lora[0].scale");
  expect_error(with(json::array({{{"id", 0}, {"scale", 1e300}}})), 400, "lora[0].scale");
  expect_error(with(json::array({1})), 400, "lora[0]");
  expect_error(a.post("/v1/chat/completions",
                      json{{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                           {"lora", json::array({{{"id", 3}}})}}),
               400, "lora[0].id");

  expect_error(a.post("/lora-adapters", std::string(R"({"id": 0, "scale": 1})")), 400, "body");
  expect_error(a.post("/lora-adapters", std::string(R"([{"id": 1, "scale": 1}])")), 400,
               "body[0].id");
  expect_error(a.post("/lora-adapters",
                      std::string(R"([{"id": 0, "scale": null}, {"id": 0, "scale": [1]}])")),
               400, "body[1].scale");
  expect_error(a.post("/lora-adapters", std::string("[{")), 400);
  EXPECT_EQ(a.get("/lora-adapters").body[0]["scale"], 1.0);  // a refused list changes nothing
}

TEST_F(ServerHttpLora, AServerWithoutAdapters) {
  Api a(plain_->port());
  const Reply r = a.get("/lora-adapters");
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body, json::array());
  EXPECT_EQ(a.post("/lora-adapters", std::string("[]")).status, 200);
  const json body = {{"prompt", "hi"}, {"n_predict", 2}, {"lora", json::array()}};
  EXPECT_EQ(a.post("/completion", body).status, 200);
  json one = body;
  one["lora"] = lora(1);
  expect_error(a.post("/completion", one), 400, "lora[0].id");
  expect_error(a.post("/lora-adapters", lora(1).dump()), 400, "body[0].id");
}

// A model split across two MPI ranks: the scales a request or POST /lora-adapters sets
// reach the other rank (its context computes the later layers), so the answers are those
// of one process. Skips without an MPI build or mpirun.
TEST_F(ServerHttpLora, ScalesReachEveryMpiRank) {
  if (!mpi::built()) GTEST_SKIP() << "this build has no MPI (-DTESSERA_MPI=ON)";
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun absent";
  const std::vector<std::string> mpirun = {"mpirun",
                                           "--allow-run-as-root",
                                           "--oversubscribe",
                                           "--bind-to",
                                           "none",
                                           "-x",
                                           "ASAN_OPTIONS=detect_leaks=0",
                                           "-n",
                                           "2"};
  std::string error;
  auto split = ServerProcess::start(
      {"-m", test::shared_file(kModel), "-t", "1", "--mpi", "--api-key", kKey, "--lora", adapter_},
      &error, mpirun);
  ASSERT_TRUE(split) << error;
  const std::string prompt = "The little dog";
  const std::string adapted = complete(server_->port(), prompt, {{"lora", lora(1)}});
  const std::string base = complete(plain_->port(), prompt);
  ASSERT_NE(adapted, base);
  EXPECT_EQ(complete(split->port(), prompt), adapted);
  EXPECT_EQ(complete(split->port(), prompt, {{"lora", lora(0)}}), base);
  EXPECT_EQ(complete(split->port(), prompt, {{"lora", lora(1)}}), adapted);
  ASSERT_EQ(Api(split->port()).post("/lora-adapters", lora(0).dump()).status, 200);
  EXPECT_EQ(complete(split->port(), prompt), base);
  split->stop(std::chrono::seconds(20));  // mpirun passes the SIGTERM to every rank
  EXPECT_FALSE(split->running());
}

// Slot files with adapters: saved and restored under the server's default scales, a
// restored cache serves the requests of those scales; a slot whose cache was computed
// under other scales is not saved (a slot file does not record them).
TEST(ServerHttpLoraSlots, ASlotCacheIsSavedAndRestoredUnderTheDefaultScales) {
  if (test::shared_file(kModel).empty()) GTEST_SKIP() << "shared file absent: " << kModel;
  const std::string adapter = write_adapter();
  ASSERT_FALSE(adapter.empty());
  const std::string dir = ::testing::TempDir() + "tessera_lora_slots_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  auto server = test::start_server({"-np", "1", "--api-key", kKey, "--lora", adapter, "--slot-save-path", dir});
  ASSERT_TRUE(server);
  Api a(server->port());
  const json request = {{"prompt", "Once upon a time there was"}, {"n_predict", 8}, {"temperature", 0}};
  const Reply first = a.post("/completion", request);
  ASSERT_EQ(first.status, 200) << first.text;
  ASSERT_EQ(a.post("/slots/0?action=save", json{{"filename", "one.bin"}}).status, 200);
  ASSERT_EQ(a.post("/slots/0?action=erase", std::string()).status, 200);
  const Reply restored = a.post("/slots/0?action=restore", json{{"filename", "one.bin"}});
  ASSERT_EQ(restored.status, 200) << restored.text;
  const Reply reused = a.post("/completion", request);
  ASSERT_EQ(reused.status, 200) << reused.text;
  EXPECT_GT(reused.body["tokens_cached"].get<int64_t>(), 0) << reused.text;
  EXPECT_EQ(reused.body["content"], first.body["content"]);
  // A cache computed under scale 0.5 while the default is 1: refused, naming the scales.
  ASSERT_EQ(a.post("/slots/0?action=erase", std::string()).status, 200);
  json half = request;
  half["lora"] = lora(0.5f);
  ASSERT_EQ(a.post("/completion", half).status, 200);
  const Reply refused = a.post("/slots/0?action=save", json{{"filename", "two.bin"}});
  EXPECT_EQ(refused.status, 400) << refused.text;
  EXPECT_NE(refused.text.find("adapter scales"), std::string::npos) << refused.text;
  EXPECT_EQ(server->stop(), 0) << server->log();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace tessera
