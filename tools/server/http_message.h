// The HTTP messages of `tessera serve` as the routes see them: a request that has been
// read whole (headers within their limits, body within --max-body), and the response a
// handler fills in, either a whole body or a stream written while it is produced.
// No socket or library type appears here: http_transport.h moves these over the wire.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

/// What a handler may learn about its client while it works. The transport sets it (from
/// its own thread); handlers read it to stop work nobody will read.
struct PeerState {
  /// The connection is gone: a reset, a failed or stalled write, or a close found by the
  /// probe that follows the client's end of input (see docs/server.md, "Half-close").
  std::atomic<bool> gone{false};
  /// The client ended its side (a FIN): either a half-close (`shutdown(SHUT_WR)`, nc -N)
  /// that still waits for the answer, or a close; the probe tells them apart.
  std::atomic<bool> input_ended{false};
};

struct HttpRequest {
  std::string method;   // as sent: "GET", "POST", ...
  std::string target;   // the request target as sent, query included
  std::string path;     // the target's path, percent-decoded
  std::string query;    // after '?', undecoded ("" when none)
  int version = 11;     // 10 or 11
  HttpHeaders headers;  // in the order sent
  std::string body;
  std::string remote_addr;
  int remote_port = -1;
  std::shared_ptr<const PeerState> peer;  // never null for a request read from a socket

  /// The first header of that name (names compare case-insensitively), else "".
  std::string get_header_value(std::string_view name) const;
};

/// Where a streamed response writes; each write is sent as one chunk and returns once
/// the transport has handed it to the socket (so a slow reader slows the writer, never
/// the engine: the engine's events wait in their stream).
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  /// False when the client is gone (the stream should end).
  virtual bool write(std::string_view data) = 0;
  /// False once the client is known to be gone.
  virtual bool is_writable() const = 0;
};

struct HttpResponse {
  int status = 200;
  HttpHeaders headers;  // besides Content-Type, Content-Length / Transfer-Encoding, Connection
  std::string content_type;
  std::string body;
  /// Set for a streamed response: runs after the headers are sent, on the handler's
  /// thread; true when it ended the stream properly (false: the connection is dropped).
  std::function<bool(StreamSink&)> stream;
  /// Runs once after the stream, whether it ran, ended or the client left before it.
  std::function<void()> stream_release;

  void set_header(std::string name, std::string value) { headers.emplace_back(std::move(name), std::move(value)); }
  void set_content(std::string text, std::string type) {
    body = std::move(text);
    content_type = std::move(type);
  }
  void set_stream(std::string type, std::function<bool(StreamSink&)> provider, std::function<void()> release) {
    content_type = std::move(type);
    stream = std::move(provider);
    stream_release = std::move(release);
  }
};

/// "%41b" -> "Ab"; a '%' not followed by two hex digits is kept as it is.
std::string percent_decode(std::string_view text);
/// The reason phrase of a status ("Not Found"); "Unknown" for codes it does not know.
const char* reason_phrase(int status);

}  // namespace tessera::server
