// Noticing that the client of a non-streaming request went away.
//
// cpp-httplib 0.11 gives a handler no access to its connection (streams have
// DataSink::is_writable, plain handlers nothing). So the watch finds the handler's
// socket itself: the descriptor under /proc/self/fd whose local and peer addresses are
// the request's (the 4-tuple is unique, and the connection cannot close while its
// handler runs). closed() then polls it for POLLRDHUP / POLLHUP / POLLERR: the peer shut
// its side down. A client that half-closes after sending its request would be taken for
// gone; HTTP clients do not do that.
#pragma once

namespace httplib {
struct Request;
}

namespace tessera::server {

class ConnectionWatch {
 public:
  /// Looks the socket up; when it cannot be found, closed() is always false.
  explicit ConnectionWatch(const httplib::Request& req);
  /// A watch that never reports a close.
  ConnectionWatch() = default;
  /// True once the peer has closed the connection.
  bool closed();

 private:
  int fd_ = -1;
  bool closed_ = false;
};

}  // namespace tessera::server
