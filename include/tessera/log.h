// The one leveled logger of the library. It writes to stderr (never stdout),
// or to a sink the application installs.
#pragma once

#include <functional>
#include <string>

namespace tessera {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3, Silent = 4 };

/// Messages below this level are dropped. Default: Warn.
void set_log_level(LogLevel level);
LogLevel log_level();

/// Replaces the sink (default: stderr). Pass an empty function to restore it.
void set_log_sink(std::function<void(LogLevel, const std::string&)> sink);

/// printf-style logging.
void log(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace tessera
