// A `tessera serve` child process for the HTTP tests: started on a free port of
// 127.0.0.1, its stderr (and stdout) collected, stopped with SIGTERM.
//
//   std::string error;
//   auto server = ServerProcess::start({"-m", model, "-np", "4"}, &error);
//   ASSERT_TRUE(server) << error;
//   httplib::Client client("127.0.0.1", server->port());
//   ...
//   EXPECT_EQ(server->stop(), 0) << server->log();
//
// start() runs `TESSERA_CLI_PATH serve <args> --port 0` (do not pass --port yourself),
// waits for the one stderr line `tessera serve: listening on http://127.0.0.1:PORT`
// (60 s), then polls `GET /health` until it answers 200 (120 s: sanitizer builds load
// slowly). When --api-key is among the arguments the poll sends it as a Bearer token.
// On any failure it returns nullptr, kills the child, and says why in *error (with the
// child's output so far).
//
// A background thread keeps reading the child's output for its whole life; log() is a
// copy of everything so far, wait_for_log() waits for a substring. The destructor
// SIGKILLs a child that is still running. Plain POSIX only (no httplib): this file is
// linked into every test suite.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tessera::test {

class ServerProcess {
 public:
  /// Starts the server and waits until it is ready (see above); nullptr on failure.
  /// `launcher`: a command the server runs under (e.g. {"mpirun", "-n", "2"}; found on
  /// PATH), empty for none.
  static std::unique_ptr<ServerProcess> start(const std::vector<std::string>& args,
                                              std::string* error,
                                              const std::vector<std::string>& launcher = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  /// The port it listens on (127.0.0.1).
  int port() const { return port_; }
  /// "http://127.0.0.1:PORT".
  std::string base_url() const;
  pid_t pid() const { return pid_; }
  /// Resident set size of the child in KiB (VmRSS of /proc/PID/status), -1 when unknown.
  long rss_kib() const;
  /// True while the child has not exited (reaps it when it has).
  bool running();

  /// Everything the child wrote to stderr and stdout so far.
  std::string log() const;
  /// Waits until log() contains `text`; false on timeout.
  bool wait_for_log(const std::string& text, std::chrono::milliseconds timeout) const;

  /// SIGTERM, then waits up to `timeout` for the exit (SIGKILL after it). Returns the exit
  /// status, or 128 + the signal when the child died of a signal (so 137 after the
  /// SIGKILL). Calling it again returns the same value.
  int stop(std::chrono::milliseconds timeout = std::chrono::seconds(30));

  /// One `GET path` on 127.0.0.1:port with a raw socket; the HTTP status, or -1 when no
  /// answer came within `timeout`. `auth` (optional) is sent as a Bearer token.
  static int http_get_status(int port, const std::string& path, std::chrono::milliseconds timeout,
                             const std::string& auth = "");

 private:
  ServerProcess() = default;
  void read_loop();
  // Waits for the child's exit (up to `timeout`, polling); true once reaped.
  bool reap(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int port_ = 0;
  int out_fd_ = -1;  // read end of the child's stderr + stdout pipe
  bool exited_ = false;
  int exit_status_ = -1;
  std::thread reader_;
  bool stop_reading_ = false;  // guarded by mu_
  bool eof_ = false;           // guarded by mu_
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::string log_;  // guarded by mu_
};

}  // namespace tessera::test
