#include "serving/stop_strings.h"

#include <algorithm>

namespace tessera::serving {

StopStrings::StopStrings(std::vector<std::string> stops) {
  for (std::string& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

StopStrings::Released StopStrings::push(std::string_view text) {
  if (stopped_) return {"", true};
  pending_.append(text);
  // The earliest stop string wins.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) {
    const size_t at = pending_.find(s);
    if (at < first) {
      first = at;
      matched_ = s;
    }
  }
  if (first != std::string::npos) {
    stopped_ = true;
    Released r{pending_.substr(0, first), true};
    pending_.clear();
    return r;
  }
  // Hold back the longest suffix that is a proper prefix of a stop string. A stop string
  // starts on a character boundary, so the cut never splits a UTF-8 character.
  size_t keep = 0;
  for (const std::string& s : stops_) {
    for (size_t n = std::min(s.size() - 1, pending_.size()); n > keep; --n) {
      if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
    }
  }
  Released r{pending_.substr(0, pending_.size() - keep), false};
  pending_.erase(0, pending_.size() - keep);
  return r;
}

std::string StopStrings::flush() {
  std::string out;
  if (!stopped_) out.swap(pending_);
  pending_.clear();
  return out;
}

}  // namespace tessera::serving
