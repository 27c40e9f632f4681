#include "train_interrupt.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>

namespace tessera::cli {
namespace {

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler sets it");

void on_signal(int) {
  if (g_stop.exchange(true)) {
    static const char kMsg[] =
        "\ntessera: still saving; the run stops when the step in progress is saved\n";
    ssize_t n = write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
    (void)n;
    return;
  }
  static const char kMsg[] = "\ntessera: stopping after the step in progress (saving the work)\n";
  ssize_t n = write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  (void)n;
}

}  // namespace

const std::atomic<bool>& install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return g_stop;
}

std::string shell_quote(const std::string& s) {
  bool plain = !s.empty();
  for (const char c : s) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '/' || c == '.' || c == '_' || c == '-' || c == '+' || c == ',' ||
                      c == ':' || c == '=';
    plain = plain && safe;
  }
  if (plain) return s;
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace tessera::cli
