// Helpers of the `tessera serve` HTTP tests: a client that sends the API key, the JSON
// of a reply, SSE frames, the error shape, starting a server on stories260K.gguf.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/server_process.h"
#include "common/test_util.h"

namespace tessera::test {

using nlohmann::json;

inline constexpr const char* kKey = "test-key-123";

struct Reply {
  int status = -1;
  json body;
  std::string text;
  httplib::Headers headers;
};

/// A client of one server that sends the API key.
class Api {
 public:
  explicit Api(int port, std::string key = kKey) : cli_("127.0.0.1", port), key_(std::move(key)) {
    cli_.set_read_timeout(120, 0);
    cli_.set_write_timeout(60, 0);
  }

  Reply post(const std::string& path, const std::string& body) {
    return wrap(cli_.Post(path.c_str(), headers(), body, "application/json"));
  }
  Reply post(const std::string& path, const json& body) { return post(path, body.dump()); }
  Reply get(const std::string& path) { return wrap(cli_.Get(path.c_str(), headers())); }
  Reply send(const std::string& method, const std::string& path, httplib::Headers extra = {}) {
    httplib::Request req;
    req.method = method;
    req.path = path;
    req.headers = headers();
    for (const auto& h : extra) req.headers.insert(h);
    return wrap(cli_.send(req));
  }
  httplib::Client& client() { return cli_; }

 private:
  httplib::Headers headers() const {
    if (key_.empty()) return {};
    return {{"Authorization", "Bearer " + key_}};
  }
  static Reply wrap(const httplib::Result& r) {
    Reply out;
    if (!r) return out;
    out.status = r->status;
    out.text = r->body;
    out.headers = r->headers;
    out.body = json::parse(r->body, nullptr, false);
    return out;
  }

  httplib::Client cli_;
  std::string key_;
};

/// The JSON objects of an SSE body, and whether it ended with data: [DONE].
inline std::vector<json> sse_chunks(const std::string& text, bool* done) {
  std::vector<json> out;
  *done = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find("\n\n", pos);
    if (end == std::string::npos) end = text.size();
    const std::string frame = text.substr(pos, end - pos);
    pos = end + 2;
    if (frame.empty()) continue;
    EXPECT_EQ(frame.rfind("data: ", 0), 0u) << frame;
    EXPECT_FALSE(*done) << "a frame after [DONE]";
    if (frame == "data: [DONE]") {
      *done = true;
      continue;
    }
    out.push_back(json::parse(frame.substr(6), nullptr, false));
    EXPECT_FALSE(out.back().is_discarded()) << frame;
  }
  return out;
}

inline void expect_error(const Reply& r, int status, const std::string& param = {}) {
  EXPECT_EQ(r.status, status) << r.text;
  ASSERT_TRUE(r.body.is_object()) << r.text;
  ASSERT_TRUE(r.body.contains("error")) << r.text;
  const json& e = r.body["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r.text;
  EXPECT_TRUE(e["type"].is_string()) << r.text;
  EXPECT_TRUE(e.contains("param") && e.contains("code")) << r.text;
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << r.text;
  }
}

/// A server on models/stories260K.gguf with `-t 2` and `extra` (a failed start fails the test).
inline std::unique_ptr<ServerProcess> start_server(const std::vector<std::string>& extra) {
  const std::string model = test::shared_file("models/stories260K.gguf");
  std::vector<std::string> args = {"-m", model, "-t", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::string error;
  auto s = ServerProcess::start(args, &error);
  EXPECT_TRUE(s) << error;
  return s;
}

}  // namespace tessera::test
