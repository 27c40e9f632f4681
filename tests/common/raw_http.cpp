#include "common/raw_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <strings.h>

namespace tessera::test {
namespace {

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point end) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
  return left > 0 ? int(left) : 0;
}

/// The value of header `name` in a header block, "" when absent.
std::string header_value(std::string_view block, std::string_view name) {
  size_t at = 0;
  while ((at = block.find("\r\n", at)) != std::string_view::npos) {
    at += 2;
    const size_t colon = block.find(':', at);
    const size_t eol = block.find("\r\n", at);
    if (colon == std::string_view::npos || eol == std::string_view::npos || colon > eol) continue;
    if (colon - at == name.size() && strncasecmp(block.data() + at, name.data(), name.size()) == 0) {
      const size_t v = block.find_first_not_of(' ', colon + 1);
      return std::string(block.substr(v, eol - v));
    }
  }
  return {};
}

/// A chunked body starting at `at`; the index past it, or npos when incomplete.
size_t dechunk(std::string_view bytes, size_t at, std::string& body) {
  for (;;) {
    const size_t eol = bytes.find("\r\n", at);
    if (eol == std::string_view::npos) return std::string_view::npos;
    const size_t n = std::strtoul(std::string(bytes.substr(at, eol - at)).c_str(), nullptr, 16);
    if (n == 0) return bytes.size() >= eol + 4 ? eol + 4 : std::string_view::npos;
    if (bytes.size() < eol + 2 + n + 2) return std::string_view::npos;
    body.append(bytes.substr(eol + 2, n));
    at = eol + 2 + n + 2;
  }
}

}  // namespace

std::unique_ptr<RawSocket> RawSocket::connect(int port, const std::string& from) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return nullptr;
  sockaddr_in local = {};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, from.c_str(), &local.sin_addr);
  sockaddr_in remote = {};
  remote.sin_family = AF_INET;
  remote.sin_port = htons(uint16_t(port));
  inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr);
  const timeval ten = {10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &ten, sizeof ten);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote) != 0) {
    ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<RawSocket>(new RawSocket(fd));
}

RawSocket::~RawSocket() { ::close(fd_); }

bool RawSocket::send(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(size_t(n));
  }
  return true;
}

void RawSocket::shutdown_write() { ::shutdown(fd_, SHUT_WR); }

bool RawSocket::readable(std::chrono::milliseconds wait) const {
  pollfd p = {fd_, POLLIN, 0};
  return ::poll(&p, 1, int(wait.count())) > 0;
}

std::string RawSocket::read_until_close(std::chrono::milliseconds timeout, bool* closed) {
  const auto end = Clock::now() + timeout;
  std::string out;
  if (closed) *closed = false;
  char buf[65536];
  while (readable(std::chrono::milliseconds(ms_left(end)))) {
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    out.append(buf, size_t(n));
  }
  return out;
}

std::string RawSocket::read_responses(size_t count, std::chrono::milliseconds timeout) {
  const auto end = Clock::now() + timeout;
  std::string out;
  char buf[65536];
  const auto finals = [&] {
    size_t n = 0;
    for (const RawResponse& r : parse_responses(out)) n += r.status >= 200 ? 1 : 0;
    return n;
  };
  while (finals() < count && readable(std::chrono::milliseconds(ms_left(end)))) {
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  return out;
}

std::vector<RawResponse> parse_responses(std::string_view bytes) {
  std::vector<RawResponse> out;
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t end = bytes.find("\r\n\r\n", at);
    if (end == std::string_view::npos || bytes.substr(at, 5) != "HTTP/") break;
    RawResponse r;
    r.headers = std::string(bytes.substr(at, end + 2 - at));
    const size_t space = r.headers.find(' ');
    r.status = space == std::string::npos ? -1 : std::atoi(r.headers.c_str() + space + 1);
    size_t next = end + 4;
    if (r.status >= 200 && r.status != 204) {
      const std::string length = header_value(r.headers, "Content-Length");
      if (!length.empty()) {
        const size_t n = std::strtoul(length.c_str(), nullptr, 10);
        if (bytes.size() < next + n) break;
        r.body = std::string(bytes.substr(next, n));
        next += n;
      } else if (header_value(r.headers, "Transfer-Encoding") == "chunked") {
        next = dechunk(bytes, next, r.body);
        if (next == std::string_view::npos) break;
      } else {
        r.body = std::string(bytes.substr(next));  // to the close
        next = bytes.size();
      }
    }
    out.push_back(std::move(r));
    at = next;
  }
  return out;
}

int final_status(std::string_view bytes) {
  for (const RawResponse& r : parse_responses(bytes)) {
    if (r.status >= 200) return r.status;
  }
  return -1;
}

bool raise_open_files(size_t n) {
  rlimit l = {};
  if (getrlimit(RLIMIT_NOFILE, &l) != 0) return false;
  if (l.rlim_cur >= n) return true;
  if (l.rlim_max != RLIM_INFINITY && l.rlim_max < n) return false;
  l.rlim_cur = n;
  return setrlimit(RLIMIT_NOFILE, &l) == 0;
}

}  // namespace tessera::test
