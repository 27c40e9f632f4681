// A plain TCP client for the tests that speak HTTP the way a hostile or unusual client
// does: bytes exactly as given (trickled, pipelined, malformed), from any loopback
// address (127.0.0.0/8), half-closed; and a parser for the responses that come back.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::test {

class RawSocket {
 public:
  /// Connects to 127.0.0.1:port from `from` (a 127.x.y.z address); nullptr on failure.
  static std::unique_ptr<RawSocket> connect(int port, const std::string& from = "127.0.0.1");
  ~RawSocket();
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  /// Sends all of `data` (blocking, 10 s at most); false when the peer closed or reset.
  bool send(std::string_view data);
  /// shutdown(SHUT_WR): the end of this side's input, the socket stays open to read.
  void shutdown_write();
  /// True when something (data or the close) can be read within `wait`.
  bool readable(std::chrono::milliseconds wait) const;
  /// Reads what comes until the peer closes or `timeout` passes; `closed` says which.
  std::string read_until_close(std::chrono::milliseconds timeout, bool* closed = nullptr);
  /// Reads until `count` whole responses (1xx not counted) have come, the peer closes,
  /// or `timeout` passes.
  std::string read_responses(size_t count, std::chrono::milliseconds timeout);

 private:
  explicit RawSocket(int fd) : fd_(fd) {}
  int fd_;
};

struct RawResponse {
  int status = -1;
  std::string headers;  // the header block, as sent
  std::string body;     // de-chunked
};

/// The responses in `bytes`, in order, 1xx interim ones included; a truncated last one
/// is left out.
std::vector<RawResponse> parse_responses(std::string_view bytes);
/// The status of the first final (non-1xx) response, -1 when none came whole.
int final_status(std::string_view bytes);

/// Raises this process's soft limit on open files to at least `n`; false when the hard
/// limit does not allow it.
bool raise_open_files(size_t n);

}  // namespace tessera::test
