// The transport of `tessera serve`: HTTP/1.1 over TCP, event-driven (Boost.Asio, with
// Boost.Beast's parser), so that a connection costs a socket and a buffer, never a
// thread, until its request has been read whole. Why this design and every limit with its
// default: docs/server.md, "The transport".
//
// One I/O thread runs every socket: accepting, reading with a deadline per phase,
// writing with a deadline per write. A request read whole goes to the handlers: quick
// ones (health, props, ...) run on the I/O thread, the others on a pool of workers
// (they wait on the engine). A worker writes a stream through the I/O thread and waits
// for each write; the engine never waits for a client.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "server/http_message.h"
#include "tessera/status.h"

namespace tessera::server {

struct TransportLimits {
  size_t max_body_bytes = size_t{8} << 20;   // Content-Length or chunked, counted as read
  size_t max_header_bytes = size_t{64} << 10;  // request line + headers
  size_t max_header_fields = 128;
  int max_connections = 2048;         // open at once; more are answered 503 and closed
  int max_connections_per_client = 256;  // per client address (0: no limit)
  std::chrono::milliseconds idle_timeout{30000};    // for a request's first byte (keep-alive too)
  std::chrono::milliseconds header_timeout{10000};  // first byte to the end of the headers
  std::chrono::milliseconds body_timeout{60000};    // end of the headers to the end of the body
  std::chrono::milliseconds write_timeout{30000};   // for each write to complete
  size_t workers = 16;        // threads for the handlers that wait
  size_t worker_queue = 256;  // requests read whole and waiting for a worker; more get 503
};

struct TransportHandlers {
  /// True when the request's handler returns at once (run on the I/O thread).
  std::function<bool(const HttpRequest&)> quick;
  /// Fills the response; must not throw.
  std::function<void(const HttpRequest&, HttpResponse&)> handle;
  /// A response for a request the transport refuses itself (400, 408, 413, 431, 503).
  std::function<void(int status, const std::string& message, HttpResponse&)> refuse;
  /// After the response (a stream: after its end), on the thread that handled it.
  std::function<void(const HttpRequest&, const HttpResponse&)> done;
};

class HttpTransport {
 public:
  HttpTransport(const TransportLimits& limits, TransportHandlers handlers);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  /// Binds host:port (0: a free port): the port bound, or an error with the system's
  /// reason ("Address already in use").
  Result<int> bind(const std::string& host, int port);
  /// Serves until stop() and until every request in flight has been answered.
  void run();
  /// Stops accepting and closes idle connections; safe from any thread, and before run()
  /// (then run() returns at once).
  void stop();

  struct Core;

 private:
  std::unique_ptr<Core> core_;
};

}  // namespace tessera::server
