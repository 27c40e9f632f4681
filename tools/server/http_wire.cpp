#include "server/http_wire.h"

#include <cstdio>

namespace tessera::server {
namespace {

std::string head(const HttpResponse& res, const HttpRequest& req, bool keep_alive) {
  std::string out = "HTTP/1.1 " + std::to_string(res.status) + " " + reason_phrase(res.status) + "\r\n";
  if (!res.content_type.empty()) out += "Content-Type: " + res.content_type + "\r\n";
  for (const auto& [name, value] : res.headers) out += name + ": " + value + "\r\n";
  if (!keep_alive) {
    out += "Connection: close\r\n";
  } else if (req.version < 11) {
    out += "Connection: keep-alive\r\n";
  }
  return out;
}

}  // namespace

std::string serialize_response(const HttpResponse& res, const HttpRequest& req, bool keep_alive) {
  std::string out = head(res, req, keep_alive);
  const bool no_body = res.status == 204 || res.status == 304 || res.status < 200;
  if (!no_body) out += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  out += "\r\n";
  if (!no_body && req.method != "HEAD") out += res.body;
  return out;
}

std::string serialize_stream_head(const HttpResponse& res, const HttpRequest& req, bool keep_alive, bool chunked) {
  std::string out = head(res, req, keep_alive);
  if (chunked) out += "Transfer-Encoding: chunked\r\n";
  return out + "\r\n";
}

std::string chunk(std::string_view data) {
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out = size;
  out.append(data);
  out += "\r\n";
  return out;
}

std::string body_too_large(size_t limit) {
  return "request body too large: more than " + std::to_string(limit) + " bytes (--max-body)";
}

}  // namespace tessera::server
