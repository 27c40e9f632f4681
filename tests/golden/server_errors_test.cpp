// Client-caused errors are 4xx on every endpoint (issue 30): a table over every POST
// route and the bodies a careless or hostile client sends (no body, not JSON, not an
// object, truncated JSON), and a table over every required field of every endpoint,
// left out, sent as null, or of the wrong type. Each answer is a 400 in the error shape,
// naming the field where there is one; and a valid body of each row is answered 200 first,
// so that the table cannot pass by testing bodies that fail for another reason.
#include <gtest/gtest.h>

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
using test::Reply;

/// One server for the file's tests: stories260K with embeddings on (so that the
/// embedding routes reach their field checks instead of a 501) and a key.
class ServerErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::shared_file("models/stories260K.gguf").empty()) return;
    server_ = test::start_server({"--api-key", test::kKey, "-np", "2", "--embeddings"});
  }
  static void TearDownTestSuite() {
    if (server_) {
      EXPECT_EQ(server_->stop(), 0) << server_->log();
    }
    server_.reset();
  }
  void SetUp() override {
    if (test::shared_file("models/stories260K.gguf").empty()) {
      GTEST_SKIP() << "shared file absent: models/stories260K.gguf";
    }
    ASSERT_TRUE(server_);
  }
  static Api api() { return Api(server_->port()); }
  static std::unique_ptr<test::ServerProcess> server_;
};
std::unique_ptr<test::ServerProcess> ServerErrors::server_;

const json kChat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 2}};
const json kPrompt = {{"prompt", "Once upon"}, {"max_tokens", 2}};
const json kLlamaPrompt = {{"prompt", "Once upon"}, {"n_predict", 2}};

/// A valid body of each POST route.
struct Route {
  const char* path;
  json valid;
};
const std::vector<Route> kPostRoutes = {
    {"/v1/chat/completions", kChat},
    {"/chat/completions", kChat},
    {"/v1/completions", kPrompt},
    {"/completion", kLlamaPrompt},
    {"/completions", kLlamaPrompt},
    {"/v1/embeddings", {{"input", "Once upon"}}},
    {"/embeddings", {{"input", "Once upon"}}},
    {"/embedding", {{"input", "Once upon"}}},
    {"/tokenize", {{"content", "Once upon"}}},
    {"/detokenize", {{"tokens", {1, 2}}}},
    {"/apply-template", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}}},
};

TEST_F(ServerErrors, EveryPostRouteAnswersBodiesThatAreNotAnObjectWith400) {
  Api a = api();
  const std::vector<std::string> bodies = {"",     "null", "[]",     "[{}]", "1",          "\"text\"",
                                           "true", "{",    "{\"a\":", "}{",  std::string(100, '[')};
  for (const Route& r : kPostRoutes) {
    SCOPED_TRACE(r.path);
    EXPECT_EQ(a.post(r.path, r.valid).status, 200) << "the row's valid body";
    for (const std::string& body : bodies) {
      SCOPED_TRACE("body: " + body.substr(0, 20));
      expect_error(a.post(r.path, body), 400);
    }
  }
  // /infill with a vocabulary without FIM tokens: a 400 whatever the body.
  for (const std::string& body : bodies) expect_error(a.post("/infill", body), 400);
}

/// A required field: `field` ('.'-separated, with list indices) of the row's valid body.
struct Required {
  const char* path;
  json valid;
  std::vector<std::string> field;  // the path to the member inside `valid`
  std::string param;               // how the error names it
  json wrong;                      // a value of the wrong type
};

json& member(json& body, const std::vector<std::string>& field) {
  json* at = &body;
  for (const std::string& key : field) {
    at = at->is_array() ? &(*at)[std::stoul(key)] : &(*at)[key];
  }
  return *at;
}

void erase_member(json& body, const std::vector<std::string>& field) {
  std::vector<std::string> parent(field.begin(), field.end() - 1);
  member(body, parent).erase(field.back());
}

TEST_F(ServerErrors, EveryRequiredFieldLeftOutNullOrMistypedIs400NamingIt) {
  json schema_format = kChat;
  schema_format["response_format"] = {{"type", "json_schema"},
                                      {"json_schema", {{"schema", {{"type", "string"}}}}}};
  const std::vector<Required> rows = {
      {"/v1/chat/completions", kChat, {"messages"}, "messages", "hi"},
      {"/v1/chat/completions", kChat, {"messages", "0", "role"}, "messages[0].role", 5},
      {"/v1/chat/completions", kChat, {"messages", "0", "content"}, "messages[0].content", 5},
      {"/v1/chat/completions", schema_format, {"response_format", "json_schema"}, "response_format.json_schema", 5},
      {"/chat/completions", kChat, {"messages"}, "messages", json::object()},
      {"/v1/completions", kPrompt, {"prompt"}, "prompt", json::object()},
      {"/completion", kLlamaPrompt, {"prompt"}, "prompt", json::object()},
      {"/completions", kLlamaPrompt, {"prompt"}, "prompt", true},
      {"/v1/embeddings", {{"input", "Once upon"}}, {"input"}, "input", json::object()},
      {"/embeddings", {{"input", "Once upon"}}, {"input"}, "input", 5.5},
      {"/embedding", {{"input", "Once upon"}}, {"input"}, "input", true},
      {"/tokenize", {{"content", "Once upon"}}, {"content"}, "content", 5},
      {"/detokenize", {{"tokens", {1, 2}}}, {"tokens"}, "tokens", "1 2"},
      {"/apply-template", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}}, {"messages"}, "messages", 5},
      {"/apply-template",
       {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}},
       {"messages", "0", "role"},
       "messages[0].role",
       json::array()},
  };
  Api a = api();
  for (const Required& row : rows) {
    SCOPED_TRACE(std::string(row.path) + " " + row.param);
    EXPECT_EQ(a.post(row.path, row.valid).status, 200) << "the row's valid body";
    json body = row.valid;
    erase_member(body, row.field);
    expect_error(a.post(row.path, body), 400, row.param);
    body = row.valid;
    member(body, row.field) = nullptr;  // null is absent
    expect_error(a.post(row.path, body), 400, row.param);
    body = row.valid;
    member(body, row.field) = row.wrong;
    expect_error(a.post(row.path, body), 400, row.param);
  }
}

// Every route answers an unknown method with 405 and every unknown path with 404, in
// the error shape, before and after the key check alike.
TEST_F(ServerErrors, UnknownPathsAndMethodsAre404And405) {
  Api a = api();
  Api no_key(server_->port(), "");
  for (const Route& r : kPostRoutes) {
    SCOPED_TRACE(r.path);
    expect_error(a.get(r.path), 405);
    expect_error(a.send("PUT", r.path), 405);
  }
  for (const char* path : {"/health", "/v1/models", "/props", "/slots"}) {
    SCOPED_TRACE(path);
    expect_error(a.send("DELETE", path), 405);
  }
  for (const char* path : {"/v2/chat/completions", "/completion/x", "/v1", "/../etc/passwd", "/%00"}) {
    SCOPED_TRACE(path);
    expect_error(a.get(path), 404);
    expect_error(a.post(path, kChat), 404);
  }
  expect_error(no_key.post("/v1/chat/completions", kChat), 401);
}

}  // namespace
}  // namespace tessera
