// How the engine fails: every error is a TemplateError, thrown where it is found and
// caught once at the public API (tessera/jinja.h), which turns it into a Status. The
// interpreter stamps an error that has no position yet with the line and column of the
// expression or statement it was evaluating.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera::jinja {

struct TemplateError : std::runtime_error {
  /// `kind`: the Python exception jinja2 would raise ("TemplateSyntaxError",
  /// "UndefinedError", "TypeError", "TemplateError" for raise_exception, "SecurityError",
  /// "LimitError" for the engine's own limits).
  TemplateError(std::string kind_, const std::string& message, int line_ = 0, int column_ = 0)
      : std::runtime_error(message), kind(std::move(kind_)), line(line_), column(column_) {}
  std::string kind;
  int line;
  int column;
};

[[noreturn]] inline void fail(const std::string& kind, const std::string& message) {
  throw TemplateError(kind, message);
}
[[noreturn]] inline void type_error(const std::string& message) { fail("TypeError", message); }

}  // namespace tessera::jinja
