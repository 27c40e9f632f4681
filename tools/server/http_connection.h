// One client connection of the transport (http_transport.h), and the state the
// connections share. Everything here runs on the I/O thread except the three calls
// marked "any thread", which workers use to answer and to stream.
//
// A connection's life: wait for a request's first byte (idle deadline), read the headers
// (one deadline for all of them, however slowly they trickle; limits on bytes and
// fields), answer `Expect: 100-continue`, read the body (its own deadline; Content-Length
// past --max-body is refused before a byte of it is read, a chunked body as soon as its
// chunks pass it), hand the request over, write the answer, and then read the next
// request: bytes already buffered (pipelining) first, so answers go out in order.
// While a request is in flight the connection watches its socket: a reset ends it; the
// client's end of input (FIN) may be a half-close, so it is probed (docs/server.md).
#pragma once

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility> (C++20).
#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/http_transport.h"
#include "server/worker_pool.h"

namespace tessera::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class Connection;

struct HttpTransport::Core {
  Core(const TransportLimits& l, TransportHandlers h);

  /// Called when a connection closes (its registry entry and address count go).
  void forget(Connection* c, const std::string& addr);
  /// A worker or the I/O thread has finished a request (the stop waits for none left).
  void request_finished();
  /// Ends run() once stopping and nothing is open or in flight.
  void maybe_finish();
  void accept();
  /// A new connection: refused (503, closed) past the limits, else started.
  void admit(tcp::socket s);

  TransportLimits limits;
  TransportHandlers handlers;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard;
  tcp::acceptor acceptor;
  asio::steady_timer accept_retry;
  std::unique_ptr<WorkerPool> workers;
  std::map<Connection*, std::weak_ptr<Connection>> open;
  std::map<std::string, int> per_address;
  int in_flight = 0;
  bool stopping = false;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, HttpTransport::Core& core, std::string addr, int port);
  void start();
  /// At stop: closes now unless a request is in flight (that one closes after its answer).
  void close_when_idle();

  /// Any thread: queues `data` for the socket without waiting for it to be written,
  /// unless kMaxUnsentBytes already wait (a client reading slowly), then until they have
  /// gone; false once the connection is gone.
  bool write_streamed(std::string data);
  /// Any thread: writes `data`, then reads the next request (keep-alive) or closes.
  void finish(std::string data, bool keep_alive);
  /// Any thread: drops the connection (a stream that ended badly).
  void abort();

  const std::string& address() const { return addr_; }

 private:
  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;
  enum class Phase { Idle, Header, Body, Busy, Closing };

  void wait_for_request();
  void read_header();
  void on_header(boost::system::error_code ec);
  void read_body();
  void on_body(boost::system::error_code ec);
  void dispatch(HttpRequest req, bool keep_alive);
  /// On a worker: runs the handler and writes its answer (a stream chunk by chunk).
  void serve(const HttpRequest& req, bool keep_alive);
  void answer(std::string data, bool keep_alive);
  /// Answers with `status` and closes (after reading what the client still sends).
  void refuse(int status, const std::string& message, const HttpRequest* req = nullptr);
  void after_answer(bool keep_alive);
  void watch_peer();
  void on_peer_event(boost::system::error_code ec);
  void send_probe();
  void poll_probe();
  void arm(std::chrono::milliseconds d);
  void disarm();
  void write(std::string data, std::function<void(bool)> done);
  void write_next();
  void linger_close();
  void drain();
  void close();

  tcp::socket socket_;
  HttpTransport::Core& core_;
  std::string addr_;
  int port_;
  asio::steady_timer deadline_;
  asio::steady_timer write_deadline_;
  asio::steady_timer probe_timer_;
  boost::beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  Phase phase_ = Phase::Idle;
  unsigned deadline_gen_ = 0;  // a deadline that fired after it was disarmed is ignored
  unsigned watch_gen_ = 0;
  unsigned write_gen_ = 0;
  bool timed_out_ = false;
  bool watching_ = false;
  bool probing_ = false;
  bool answer_started_ = false;  // bytes of the answer went out (no probe after that)
  int version_ = 11;
  std::shared_ptr<PeerState> peer_;
  struct PendingWrite {
    std::string data;
    std::function<void(bool)> done;
  };
  std::deque<PendingWrite> writes_;
  bool writing_ = false;
  // Bytes queued by write_streamed and not yet written, and whether a write failed;
  // shared with the worker that streams, so guarded.
  std::mutex flow_mu_;
  std::condition_variable flow_cv_;
  size_t unsent_ = 0;
  bool flow_broken_ = false;
  std::vector<char> drain_buffer_;
  size_t drained_ = 0;
  bool closed_ = false;
};

}  // namespace tessera::server
