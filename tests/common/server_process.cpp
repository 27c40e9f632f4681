#include "common/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/test_util.h"

extern char** environ;

namespace tessera::test {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kListening = "tessera serve: listening on http://127.0.0.1:";
constexpr auto kListenTimeout = std::chrono::seconds(60);
constexpr auto kHealthTimeout = std::chrono::seconds(120);

int decode_wait_status(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return -1;
}

// The value after "--api-key" in args, or "".
std::string api_key_of(const std::vector<std::string>& args) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--api-key") return args[i + 1];
  }
  return "";
}

// Sends all of `data`; false on error.
bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::unique_ptr<ServerProcess> ServerProcess::start(const std::vector<std::string>& args,
                                                    std::string* error,
                                                    const std::vector<std::string>& launcher) {
  std::string ignored;
  if (!error) error = &ignored;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    *error = std::string("pipe2: ") + std::strerror(errno);
    return nullptr;
  }
  std::vector<std::string> argv_s = launcher;
  argv_s.push_back(cli_path());
  argv_s.push_back("serve");
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  argv_s.push_back("--port");
  argv_s.push_back("0");
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    *error = "posix_spawn " + argv_s[0] + ": " + std::strerror(rc);
    return nullptr;
  }

  std::unique_ptr<ServerProcess> s(new ServerProcess());
  s->pid_ = pid;
  s->out_fd_ = fds[0];
  s->reader_ = std::thread([p = s.get()] { p->read_loop(); });

  // 1. The "listening on" line.
  {
    std::unique_lock<std::mutex> lock(s->mu_);
    const auto deadline = SteadyClock::now() + kListenTimeout;
    size_t at = std::string::npos;
    for (;;) {
      at = s->log_.find(kListening);
      if (at != std::string::npos && s->log_.find('\n', at) != std::string::npos) break;
      if (s->eof_ || SteadyClock::now() >= deadline) break;
      s->cv_.wait_until(lock, deadline);
    }
    if (at == std::string::npos || s->log_.find('\n', at) == std::string::npos) {
      *error = std::string(s->eof_ ? "the server exited" : "timed out") +
               " before its 'listening on' line; its output:\n" + s->log_;
      lock.unlock();
      s->stop(milliseconds(2000));
      return nullptr;
    }
    s->port_ = std::atoi(s->log_.c_str() + at + std::strlen(kListening));
  }
  if (s->port_ <= 0 || s->port_ > 65535) {
    *error = "no port in the 'listening on' line; output:\n" + s->log();
    s->stop(milliseconds(2000));
    return nullptr;
  }

  // 2. GET /health until 200.
  const std::string key = api_key_of(args);
  const auto deadline = SteadyClock::now() + kHealthTimeout;
  int last = -1;
  while (SteadyClock::now() < deadline) {
    last = http_get_status(s->port_, "/health", milliseconds(2000), key);
    if (last == 200) return s;
    if (!s->running()) {
      *error = "the server exited (status " + std::to_string(s->exit_status_) +
               ") before /health answered 200; its output:\n" + s->log();
      return nullptr;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  *error = "GET /health did not answer 200 within 120 s (last status " + std::to_string(last) +
           "); output:\n" + s->log();
  s->stop(milliseconds(2000));
  return nullptr;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    reap(std::chrono::seconds(10));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_reading_ = true;
  }
  if (reader_.joinable()) reader_.join();
  if (out_fd_ >= 0) ::close(out_fd_);
}

void ServerProcess::read_loop() {
  char buf[4096];
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_reading_) return;
    }
    pollfd p{out_fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, 100);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (n <= 0) {
      eof_ = true;
      cv_.notify_all();
      return;
    }
    log_.append(buf, static_cast<size_t>(n));
    cv_.notify_all();
  }
}

std::string ServerProcess::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

long ServerProcess::rss_kib() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

bool ServerProcess::running() {
  if (exited_ || pid_ <= 0) return false;
  return !reap(milliseconds(0));
}

bool ServerProcess::reap(milliseconds timeout) {
  if (exited_) return true;
  const auto deadline = SteadyClock::now() + timeout;
  for (;;) {
    int raw = 0;
    const pid_t r = ::waitpid(pid_, &raw, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      exit_status_ = decode_wait_status(raw);
      return true;
    }
    if (r < 0 && errno != EINTR) {  // not our child any more (should not happen)
      exited_ = true;
      return true;
    }
    if (SteadyClock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
}

int ServerProcess::stop(milliseconds timeout) {
  if (exited_) return exit_status_;
  ::kill(pid_, SIGTERM);
  if (!reap(timeout)) {
    ::kill(pid_, SIGKILL);
    reap(std::chrono::seconds(10));
  }
  // Let the reader drain what the child wrote last (EOF once every writer is gone).
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::seconds(2), [&] { return eof_; });
  return exit_status_;
}

std::string ServerProcess::log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

bool ServerProcess::wait_for_log(const std::string& text, milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return log_.find(text) != std::string::npos; });
}

int ServerProcess::http_get_status(int port, const std::string& path, milliseconds timeout,
                                   const std::string& auth) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int status = -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                      "\r\nConnection: close\r\n";
    if (!auth.empty()) req += "Authorization: Bearer " + auth + "\r\n";
    req += "\r\n";
    if (send_all(fd, req)) {
      std::string head;
      char buf[512];
      while (head.find("\r\n") == std::string::npos && head.size() < 4096) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      // "HTTP/1.1 200 OK"
      const size_t sp = head.find(' ');
      if (head.rfind("HTTP/", 0) == 0 && sp != std::string::npos) {
        status = std::atoi(head.c_str() + sp + 1);
      }
    }
  }
  ::close(fd);
  return status;
}

}  // namespace tessera::test
