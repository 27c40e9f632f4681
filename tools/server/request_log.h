// What the one log line of a request reports beyond method, path and status. A request
// is handled, its response written (streams included) and the line logged by one
// thread (a worker, or the I/O thread for the quick routes), so the record is thread-local: reset when a request arrives,
// filled by the handler, read by the logger.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tessera::server {

struct RequestLog {
  std::chrono::steady_clock::time_point start;
  std::string endpoint = "other";  // route path for metrics labels
  bool has_tokens = false;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t generated_tokens = 0;
  std::string note;  // "timeout", "client disconnected", ...
};

/// This thread's record.
RequestLog& request_log();

/// Adds `text` to this thread's note (notes are joined with ", ").
inline void add_log_note(const std::string& text) {
  std::string& note = request_log().note;
  note += (note.empty() ? "" : ", ") + text;
}

}  // namespace tessera::server
