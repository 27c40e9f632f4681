// Stop strings over streamed text: generation ends where one appears, its text (and
// anything after it) is never delivered, and text that could be the start of one is
// held back until the next token tells.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::serving {

class StopStrings {
 public:
  /// Empty stop strings are ignored.
  explicit StopStrings(std::vector<std::string> stops = {});

  struct Released {
    std::string text;      // may be delivered now
    bool stopped = false;  // a stop string appeared: `text` is what came before it
  };
  /// Appends `text` (whole UTF-8 characters) to what is held back and releases what can
  /// no longer be part of a stop string. After a stop, nothing more is released.
  Released push(std::string_view text);
  /// Releases everything held back (the generation ended without a stop string).
  std::string flush();
  /// The stop string that appeared ("" while none has).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace tessera::serving
