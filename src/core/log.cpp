#include "tessera/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace tessera {
namespace {
std::atomic<LogLevel> g_level{LogLevel::Warn};
std::mutex g_sink_mutex;
std::function<void(LogLevel, const std::string&)> g_sink;

const char* level_tag(LogLevel level) {
  switch (level) {
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warn: return "warning";
    case LogLevel::Error: return "error";
    case LogLevel::Silent: break;
  }
  return "";
}
}  // namespace

void set_log_level(LogLevel level) { g_level = level; }
LogLevel log_level() { return g_level; }

void set_log_sink(std::function<void(LogLevel, const std::string&)> sink) {
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  g_sink = std::move(sink);
}

void log(LogLevel level, const char* fmt, ...) {
  if (level < g_level.load() || level == LogLevel::Silent) return;
  char buf[2048];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  if (g_sink) {
    g_sink(level, buf);
  } else {
    std::fprintf(stderr, "tessera: %s: %s\n", level_tag(level), buf);  // as the tools write theirs
  }
}

}  // namespace tessera
