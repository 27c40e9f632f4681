#include "server/connection_watch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <httplib.h>
#include <string>

namespace tessera::server {
namespace {

/// The address and port of a socket address, as httplib writes them.
bool address_of(const sockaddr_storage& sa, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(sa);
    if (!inet_ntop(AF_INET, &in.sin_addr, buf, sizeof buf)) return false;
    port = ntohs(in.sin_port);
  } else if (sa.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(sa);
    if (!inet_ntop(AF_INET6, &in6.sin6_addr, buf, sizeof buf)) return false;
    port = ntohs(in6.sin6_port);
  } else {
    return false;
  }
  ip = buf;
  return true;
}

bool matches(int fd, const httplib::Request& req) {
  sockaddr_storage local = {}, peer = {};
  socklen_t len = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return false;
  len = sizeof peer;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return false;
  std::string local_ip, peer_ip;
  int local_port = -1, peer_port = -1;
  if (!address_of(local, local_ip, local_port) || !address_of(peer, peer_ip, peer_port)) return false;
  return local_port == req.local_port && peer_port == req.remote_port && peer_ip == req.remote_addr;
}

}  // namespace

ConnectionWatch::ConnectionWatch(const httplib::Request& req) {
  if (req.remote_port < 0 || req.local_port < 0) return;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  constexpr int kMaxEntries = 1 << 16;
  int seen = 0;
  while (const dirent* entry = readdir(dir)) {
    if (++seen > kMaxEntries) break;
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd < 0) continue;
    if (matches(int(fd), req)) {
      fd_ = int(fd);
      break;
    }
  }
  closedir(dir);
}

bool ConnectionWatch::closed() {
  if (fd_ < 0 || closed_) return closed_;
  pollfd p = {fd_, short(POLLRDHUP), 0};
  if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) closed_ = true;
  return closed_;
}

}  // namespace tessera::server
