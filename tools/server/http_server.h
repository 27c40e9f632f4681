// The HTTP side of `tessera serve`: routes, API keys, CORS, errors, the log line, over
// the event-driven transport (http_transport.h).
//
// Every method and path reaches one dispatcher, so that unknown paths answer 404, known
// paths with another method 405, and every error has the JSON shape; what the transport
// refuses itself (400 malformed, 408 too slow, 413 body too large, 431 headers too large,
// 503 too many connections) gets the same shape.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera::server {

struct ServerContext;
class HttpTransport;

class HttpServer {
 public:
  explicit HttpServer(ServerContext& ctx);
  ~HttpServer();

  /// Binds host:port (0: a free port): the port bound, or why not.
  Result<int> bind(const std::string& host, int port);
  /// Serves until stop(); returns when every request in flight has been answered.
  void listen();
  /// Stops accepting; safe from any thread, and before listen() started (then listen()
  /// returns at once).
  void stop();

 private:
  ServerContext& ctx_;
  std::unique_ptr<HttpTransport> transport_;
};

/// True when `given` is one of `keys`; every key is compared in full, in constant time
/// for a given length.
bool api_key_matches(const std::string& given, const std::vector<std::string>& keys);

}  // namespace tessera::server
