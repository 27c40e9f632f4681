#include "server/http_transport.h"

#include <sys/socket.h>

#include <cerrno>

#include "server/http_connection.h"
#include "server/http_wire.h"

namespace tessera::server {
using boost::system::error_code;

namespace {

constexpr int kListenBacklog = 1024;
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);  // after EMFILE and the like

/// Best effort, never blocking: a refused connection gets its 503 if the socket takes it.
void refuse_connection(HttpTransport::Core& core, tcp::socket& s, const std::string& why) {
  HttpResponse res;
  core.handlers.refuse(503, why, res);
  HttpRequest req;
  const std::string bytes = serialize_response(res, req, /*keep_alive=*/false);
  (void)::send(s.native_handle(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  error_code ec;
  s.shutdown(tcp::socket::shutdown_both, ec);
  s.close(ec);
}

}  // namespace

HttpTransport::Core::Core(const TransportLimits& l, TransportHandlers h)
    : limits(l), handlers(std::move(h)), guard(asio::make_work_guard(io)), acceptor(io), accept_retry(io) {}

void HttpTransport::Core::forget(Connection* c, const std::string& addr) {
  open.erase(c);
  if (auto it = per_address.find(addr); it != per_address.end() && --it->second <= 0) per_address.erase(it);
  maybe_finish();
}

void HttpTransport::Core::request_finished() {
  --in_flight;
  maybe_finish();
}

void HttpTransport::Core::maybe_finish() {
  if (stopping && open.empty() && in_flight == 0) guard.reset();
}

void HttpTransport::Core::admit(tcp::socket s) {
  error_code ec;
  const tcp::endpoint peer = s.remote_endpoint(ec);
  if (ec) return;
  const std::string addr = peer.address().to_string();
  s.set_option(tcp::no_delay(true), ec);
  if (int(open.size()) >= limits.max_connections) {
    return refuse_connection(*this, s, "too many connections: " + std::to_string(open.size()) +
                                           " are open (--max-connections)");
  }
  const int from_here = per_address.count(addr) ? per_address[addr] : 0;
  if (limits.max_connections_per_client > 0 && from_here >= limits.max_connections_per_client) {
    return refuse_connection(*this, s, "too many connections from " + addr + ": " + std::to_string(from_here) +
                                           " are open (--max-connections-per-client)");
  }
  ++per_address[addr];
  auto c = std::make_shared<Connection>(std::move(s), *this, addr, int(peer.port()));
  open[c.get()] = c;
  c->start();
}

void HttpTransport::Core::accept() {
  acceptor.async_accept([this](error_code ec, tcp::socket s) {
    if (stopping || !acceptor.is_open()) return;
    if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space || ec == asio::error::no_memory ||
        ec.value() == ENFILE) {
      accept_retry.expires_after(kAcceptRetry);
      accept_retry.async_wait([this](error_code e) {
        if (!e) accept();
      });
      return;
    }
    if (!ec) admit(std::move(s));
    accept();
  });
}

HttpTransport::HttpTransport(const TransportLimits& limits, TransportHandlers handlers)
    : core_(std::make_unique<Core>(limits, std::move(handlers))) {}

HttpTransport::~HttpTransport() = default;

Result<int> HttpTransport::bind(const std::string& host, int port) {
  error_code ec;
  tcp::resolver resolver(core_->io);
  const auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || found.empty()) {
    return Status::error("cannot resolve '" + host + "'" + (ec ? ": " + ec.message() : std::string()));
  }
  const tcp::endpoint ep = *found.begin();
  tcp::acceptor& a = core_->acceptor;
  a.open(ep.protocol(), ec);
  if (ec) return Status::error(ec.message());
  a.set_option(tcp::acceptor::reuse_address(true), ec);
  a.bind(ep, ec);
  if (!ec) a.listen(kListenBacklog, ec);
  if (ec) {
    const std::string why = ec.message();  // e.g. "Address already in use"
    a.close(ec);
    return Status::error(why);
  }
  return int(a.local_endpoint(ec).port());
}

void HttpTransport::run() {
  Core& c = *core_;
  c.workers = std::make_unique<WorkerPool>(c.limits.workers, c.limits.worker_queue);
  if (c.acceptor.is_open()) c.accept();
  c.io.run();
  c.workers.reset();  // idle by now: every request in flight has finished
}

void HttpTransport::stop() {
  asio::post(core_->io, [c = core_.get()] {
    if (c->stopping) return;
    c->stopping = true;
    error_code ec;
    c->acceptor.close(ec);
    c->accept_retry.cancel();
    std::vector<std::shared_ptr<Connection>> all;
    for (auto& [raw, weak] : c->open) {
      if (auto s = weak.lock()) all.push_back(s);
    }
    for (auto& s : all) s->close_when_idle();
    c->maybe_finish();
  });
}

}  // namespace tessera::server
