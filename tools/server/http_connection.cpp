#include "server/http_connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "server/http_wire.h"

namespace tessera::server {
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

constexpr auto kLingerTime = std::chrono::seconds(2);  // reading what a refused client still sends
constexpr size_t kLingerBytes = size_t{16} << 20;
constexpr auto kProbePoll = std::chrono::milliseconds(50);
constexpr size_t kMaxUnsentBytes = size_t{256} << 10;  // a stream's backlog before its worker waits

bool is_parse_error(const error_code& ec) {
  return ec.category() == make_error_code(http::error::bad_method).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

std::string seconds(std::chrono::milliseconds d) { return std::to_string(d.count() / 1000.0).substr(0, 4) + " s"; }

/// The request as the routes see it; `target` may be absolute-form ("http://host/path").
HttpRequest to_request(http::request<http::string_body>&& m) {
  HttpRequest r;
  r.method = std::string(m.method_string());
  r.target = std::string(m.target());
  std::string_view t = r.target;
  if (const size_t scheme = t.find("://"); scheme != std::string_view::npos && t.front() != '/') {
    const size_t slash = t.find('/', scheme + 3);
    t = slash == std::string_view::npos ? std::string_view("/") : t.substr(slash);
  }
  const size_t q = t.find('?');
  r.path = percent_decode(t.substr(0, q));
  if (q != std::string_view::npos) r.query = std::string(t.substr(q + 1));
  r.version = int(m.version());
  for (const auto& f : m) r.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  r.body = std::move(m.body());
  return r;
}

/// A stream's writes, as chunks (HTTP/1.1) or raw until the close (HTTP/1.0).
class ConnectionSink final : public StreamSink {
 public:
  ConnectionSink(Connection& c, const PeerState& peer, bool chunked) : c_(c), peer_(peer), chunked_(chunked) {}
  bool write(std::string_view data) override {
    if (data.empty()) return !peer_.gone;
    return c_.write_streamed(chunked_ ? chunk(data) : std::string(data));
  }
  bool is_writable() const override { return !peer_.gone; }

 private:
  Connection& c_;
  const PeerState& peer_;
  bool chunked_;
};

}  // namespace

Connection::Connection(tcp::socket socket, HttpTransport::Core& core, std::string addr, int port)
    : socket_(std::move(socket)),
      core_(core),
      addr_(std::move(addr)),
      port_(port),
      deadline_(core.io),
      write_deadline_(core.io),
      probe_timer_(core.io),
      peer_(std::make_shared<PeerState>()) {}

void Connection::start() { wait_for_request(); }

void Connection::close_when_idle() {
  if (phase_ != Phase::Busy) close();
}

void Connection::wait_for_request() {
  phase_ = Phase::Idle;
  if (core_.stopping) return close();
  if (buffer_.size() > 0) return read_header();
  arm(core_.limits.idle_timeout);
  socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](error_code ec) {
    if (self->closed_) return;
    self->disarm();
    if (ec || self->timed_out_) return self->close();
    self->read_header();
  });
}

void Connection::read_header() {
  phase_ = Phase::Header;
  parser_.emplace();
  parser_->header_limit(uint32_t(core_.limits.max_header_bytes));
  parser_->body_limit(uint64_t(core_.limits.max_body_bytes));
  arm(core_.limits.header_timeout);
  http::async_read_header(socket_, buffer_, *parser_,
                          [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
}

void Connection::on_header(error_code ec) {
  if (closed_) return;
  disarm();
  const TransportLimits& l = core_.limits;
  if (timed_out_) return refuse(408, "the request's headers did not arrive within " + seconds(l.header_timeout));
  if (ec == http::error::header_limit) {
    return refuse(431, "the request's headers are longer than " + std::to_string(l.max_header_bytes) + " bytes");
  }
  if (ec == http::error::body_limit) return refuse(413, body_too_large(l.max_body_bytes));
  if (is_parse_error(ec)) return refuse(400, "malformed HTTP request: " + ec.message());
  if (ec) return close();  // the client closed or reset the connection
  const auto& h = parser_->get();
  version_ = int(h.version());
  if (size_t(std::distance(h.begin(), h.end())) > l.max_header_fields) {
    return refuse(431, "the request has more than " + std::to_string(l.max_header_fields) + " header fields");
  }
  if (parser_->content_length() && *parser_->content_length() > l.max_body_bytes) {
    return refuse(413, body_too_large(l.max_body_bytes));
  }
  const auto expect = h.find(http::field::expect);
  if (expect != h.end() && !parser_->is_done()) {
    if (!boost::beast::iequals(expect->value(), "100-continue")) return refuse(417, "unsupported Expect header");
    write("HTTP/1.1 100 Continue\r\n\r\n", nullptr);
  }
  read_body();
}

void Connection::read_body() {
  phase_ = Phase::Body;
  if (parser_->is_done()) return on_body({});
  arm(core_.limits.body_timeout);
  http::async_read(socket_, buffer_, *parser_, [self = shared_from_this()](error_code ec, size_t) { self->on_body(ec); });
}

void Connection::on_body(error_code ec) {
  if (closed_) return;
  disarm();
  const TransportLimits& l = core_.limits;
  if (timed_out_) return refuse(408, "the request's body did not arrive within " + seconds(l.body_timeout));
  if (ec == http::error::body_limit) return refuse(413, body_too_large(l.max_body_bytes));
  if (is_parse_error(ec)) return refuse(400, "malformed HTTP request body: " + ec.message());
  if (ec) return close();
  const bool keep_alive = parser_->keep_alive();
  HttpRequest req = to_request(parser_->release());
  parser_.reset();
  req.remote_addr = addr_;
  req.remote_port = port_;
  req.peer = peer_;
  dispatch(std::move(req), keep_alive);
}

void Connection::dispatch(HttpRequest req, bool keep_alive) {
  phase_ = Phase::Busy;
  answer_started_ = false;
  if (core_.handlers.quick(req)) {
    HttpResponse res;
    core_.handlers.handle(req, res);
    answer(serialize_response(res, req, keep_alive), keep_alive);
    core_.handlers.done(req, res);
    return;
  }
  auto shared = std::make_shared<HttpRequest>(std::move(req));
  auto self = shared_from_this();
  ++core_.in_flight;
  if (!core_.workers->submit([self, shared, keep_alive] { self->serve(*shared, keep_alive); })) {
    --core_.in_flight;
    return refuse(503, "the server is busy: every worker is taken and " +
                           std::to_string(core_.limits.worker_queue) + " requests wait for one",
                  shared.get());
  }
  watch_peer();
}

void Connection::serve(const HttpRequest& req, bool keep_alive) {
  HttpResponse res;
  core_.handlers.handle(req, res);
  if (!res.stream) {
    finish(serialize_response(res, req, keep_alive), keep_alive);
  } else {
    const bool chunked = req.version >= 11;
    if (!chunked) keep_alive = false;
    bool ok = write_streamed(serialize_stream_head(res, req, keep_alive, chunked));
    if (ok) {
      ConnectionSink sink(*this, *req.peer, chunked);
      ok = res.stream(sink);
    }
    if (res.stream_release) res.stream_release();
    if (ok && chunked) {
      finish("0\r\n\r\n", keep_alive);
    } else if (ok) {
      finish({}, false);
    } else {
      abort();
    }
  }
  core_.handlers.done(req, res);
  asio::post(core_.io, [self = shared_from_this()] { self->core_.request_finished(); });
}

// A stream writes a chunk per token: waiting for each to reach the socket would cost a
// round trip between the threads per token (measured: 1-client streams 10-35% slower
// than writing from the worker as before); so chunks are queued, and only a backlog
// (a client not reading) makes the worker wait. The engine never waits either way.
bool Connection::write_streamed(std::string data) {
  const size_t n = data.size();
  {
    std::unique_lock<std::mutex> lock(flow_mu_);
    flow_cv_.wait(lock, [&] { return unsent_ < kMaxUnsentBytes || flow_broken_; });
    if (flow_broken_) return false;
    unsent_ += n;
  }
  asio::post(core_.io, [self = shared_from_this(), data = std::move(data), n]() mutable {
    self->answer_started_ = true;
    self->write(std::move(data), [self, n](bool ok) {
      {
        std::lock_guard<std::mutex> lock(self->flow_mu_);
        self->unsent_ -= n;
        if (!ok) self->flow_broken_ = true;
      }
      self->flow_cv_.notify_all();
    });
  });
  return true;
}

void Connection::finish(std::string data, bool keep_alive) {
  asio::post(core_.io, [self = shared_from_this(), data = std::move(data), keep_alive]() mutable {
    self->answer(std::move(data), keep_alive);
  });
}

void Connection::abort() {
  asio::post(core_.io, [self = shared_from_this()] { self->close(); });
}

void Connection::answer(std::string data, bool keep_alive) {
  answer_started_ = true;
  write(std::move(data), [self = shared_from_this(), keep_alive](bool ok) {
    if (ok) self->after_answer(keep_alive);
  });
}

void Connection::refuse(int status, const std::string& message, const HttpRequest* req) {
  HttpResponse res;
  core_.handlers.refuse(status, message, res);
  HttpRequest seen;
  if (!req && parser_ && parser_->is_header_done()) {
    seen.method = std::string(parser_->get().method_string());
    seen.path = seen.target = std::string(parser_->get().target());
  } else if (!req) {
    seen.method = seen.path = "-";
  }
  const HttpRequest& shown = req ? *req : seen;
  phase_ = Phase::Closing;
  answer_started_ = true;
  write(serialize_response(res, shown, /*keep_alive=*/false), [self = shared_from_this()](bool ok) {
    if (ok) self->linger_close();
  });
  core_.handlers.done(shown, res);
}

void Connection::after_answer(bool keep_alive) {
  if (closed_) return;
  ++watch_gen_;
  if (watching_) {
    watching_ = false;
    error_code ec;
    socket_.cancel(ec);  // the watch (no write is pending: this was the last)
  }
  probing_ = false;
  probe_timer_.cancel();
  if (!keep_alive || peer_->input_ended.load() || core_.stopping) {
    error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    return close();
  }
  peer_ = std::make_shared<PeerState>();
  wait_for_request();
}

void Connection::watch_peer() {
  if (buffer_.size() > 0 || closed_) return;  // pipelined bytes wait: nothing to watch
  watching_ = true;
  socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this(), gen = watch_gen_](error_code ec) {
    if (gen == self->watch_gen_) self->on_peer_event(ec);
  });
}

void Connection::on_peer_event(error_code ec) {
  watching_ = false;
  if (closed_ || phase_ != Phase::Busy || ec) return;
  char byte;
  const ssize_t n = ::recv(socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return;  // the next request (pipelined): read after this answer
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return watch_peer();
  if (n < 0) {
    peer_->gone = true;  // reset
    return;
  }
  peer_->input_ended = true;
  if (version_ >= 11 && !answer_started_) send_probe();
}

// A FIN is a half-close or a close; only a write tells them apart: a closed socket
// answers it with a reset. So the client gets an interim "102 Processing" (every HTTP/1.1
// client must accept 1xx responses before the final one), and the socket is polled for
// the hang-up that a reset brings.
void Connection::send_probe() {
  probing_ = true;
  write("HTTP/1.1 102 Processing\r\n\r\n", [self = shared_from_this()](bool ok) {
    if (!ok) {
      self->peer_->gone = true;
      return;
    }
    self->poll_probe();
  });
}

void Connection::poll_probe() {
  if (closed_ || phase_ != Phase::Busy || !probing_) return;
  pollfd p = {socket_.native_handle(), short(POLLRDHUP), 0};
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)) != 0) {
    peer_->gone = true;
    return;
  }
  probe_timer_.expires_after(kProbePoll);
  probe_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec) self->poll_probe();
  });
}

void Connection::arm(std::chrono::milliseconds d) {
  timed_out_ = false;
  deadline_.expires_after(d);
  deadline_.async_wait([self = shared_from_this(), gen = ++deadline_gen_](error_code ec) {
    if (ec || gen != self->deadline_gen_ || self->closed_) return;
    self->timed_out_ = true;
    error_code ignored;
    self->socket_.cancel(ignored);
  });
}

void Connection::disarm() {
  ++deadline_gen_;
  deadline_.cancel();
}

void Connection::write(std::string data, std::function<void(bool)> done) {
  if (closed_) {
    if (done) done(false);
    return;
  }
  writes_.push_back({std::move(data), std::move(done)});
  if (!writing_) write_next();
}

void Connection::write_next() {
  if (writes_.empty() || closed_) {
    writing_ = false;
    return;
  }
  writing_ = true;
  write_deadline_.expires_after(core_.limits.write_timeout);
  write_deadline_.async_wait([self = shared_from_this(), gen = ++write_gen_](error_code ec) {
    if (ec || gen != self->write_gen_) return;
    self->peer_->gone = true;  // the client stopped reading
    self->close();
  });
  asio::async_write(socket_, asio::buffer(writes_.front().data), [self = shared_from_this()](error_code ec, size_t) {
    ++self->write_gen_;
    self->write_deadline_.cancel();
    PendingWrite w = std::move(self->writes_.front());
    self->writes_.pop_front();
    self->writing_ = false;
    if (ec || self->closed_) {
      self->peer_->gone = true;
      if (w.done) w.done(false);
      return self->close();
    }
    if (w.done) w.done(true);
    self->write_next();
  });
}

// After a refusal the client may still be sending (the rest of a body too large):
// closing at once would reset the connection and could destroy the answer before the
// client reads it. So the sending side is shut, and what comes is read and dropped for
// a while.
void Connection::linger_close() {
  if (closed_) return;
  phase_ = Phase::Closing;
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  arm(std::chrono::duration_cast<std::chrono::milliseconds>(kLingerTime));
  drain();
}

void Connection::drain() {
  drain_buffer_.resize(4096);
  socket_.async_read_some(asio::buffer(drain_buffer_), [self = shared_from_this()](error_code ec, size_t n) {
    self->drained_ += n;
    if (ec || self->timed_out_ || self->drained_ > kLingerBytes) return self->close();
    self->drain();
  });
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  phase_ = Phase::Closing;
  peer_->gone = true;
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  deadline_.cancel();
  write_deadline_.cancel();
  probe_timer_.cancel();
  // Writes not started yet learn that they failed; one in progress learns it from its handler.
  while (writes_.size() > (writing_ ? 1u : 0u)) {
    PendingWrite w = std::move(writes_.back());
    writes_.pop_back();
    if (w.done) w.done(false);
  }
  core_.forget(this, addr_);
}

}  // namespace tessera::server
