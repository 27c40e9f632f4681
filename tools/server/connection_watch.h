// Noticing that the client of a request went away, while its handler waits on the
// engine. The transport watches the socket (http_connection.h): a reset, a failed or
// stalled write, or a close that the probe after the client's FIN finds. A client that
// only half-closed (`shutdown(SHUT_WR)` after its request) is not gone: it gets its answer.
#pragma once

#include <memory>

#include "server/http_message.h"

namespace tessera::server {

class ConnectionWatch {
 public:
  explicit ConnectionWatch(const HttpRequest& req) : peer_(req.peer) {}
  /// A watch that never reports a close.
  ConnectionWatch() = default;
  /// True once the client is known to be gone.
  bool closed() const { return peer_ && peer_->gone.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<const PeerState> peer_;
};

}  // namespace tessera::server
