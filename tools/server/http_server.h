// The HTTP side of `tessera serve`: routes, API keys, CORS, errors, the log line.
//
// Every method and path reaches one dispatcher (catch-all patterns), so that unknown
// paths answer 404, known paths with another method 405, and every error has the JSON
// shape; httplib's own errors (413 body too large, 400 bad request line) get the same
// shape from the error handler.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace httplib {
class Server;
}

namespace tessera::server {

struct ServerContext;

class HttpServer {
 public:
  explicit HttpServer(ServerContext& ctx);
  ~HttpServer();

  /// Binds host:port (0: a free port); the port bound, or -1.
  int bind(const std::string& host, int port);
  /// Serves until stop(); returns when every worker has finished its request.
  void listen();
  /// Stops accepting; safe from any thread, and before listen() started (then listen()
  /// returns at once).
  void stop();

 private:
  ServerContext& ctx_;
  std::unique_ptr<httplib::Server> svr_;
};

/// True when `given` is one of `keys`; every key is compared in full, in constant time
/// for a given length.
bool api_key_matches(const std::string& given, const std::vector<std::string>& keys);

}  // namespace tessera::server
