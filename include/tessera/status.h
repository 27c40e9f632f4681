// Status and Result<T>: the error channel for failures caused by input
// (a file, a request, a flag, memory). Broken invariants use TESSERA_CHECK.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tessera {

/// Outcome of an operation that can fail because of its input.
/// An ok Status carries no message; an error carries one that says where and what.
class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string message) { return Status(std::move(message), true); }

  bool is_ok() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  const std::string& message() const { return message_; }

  /// Returns a copy whose message is prefixed with `context: `.
  Status with_context(const std::string& context) const {
    return failed_ ? error(context + ": " + message_) : *this;
  }

 private:
  Status(std::string message, bool failed) : message_(std::move(message)), failed_(failed) {}
  std::string message_;
  bool failed_ = false;
};

namespace detail {
/// A Result was misused: value() of an error, or an error made from an ok Status. A bug
/// in the caller, in any build (an unchecked error must not run on as undefined behaviour):
/// says what and aborts.
[[noreturn, gnu::cold, gnu::noinline]] inline void result_misuse(const char* what, const Status& s) {
  std::fprintf(stderr, "tessera: internal error: %s%s%s\n", what, s.is_ok() ? "" : ": ",
               s.message().c_str());
  std::abort();
}
}  // namespace detail

/// A value or an error Status. value(), * and -> check that there is a value, in every build.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.is_ok()) detail::result_misuse("a Result made from an ok Status", status_);
  }

  bool is_ok() const { return value_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }

  T& value() & { check(); return *value_; }
  const T& value() const& { check(); return *value_; }
  T&& value() && { check(); return std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

 private:
  void check() const {
    if (!value_) [[unlikely]] detail::result_misuse("value() of a Result that holds an error", status_);
  }
  std::optional<T> value_;
  Status status_;
};

}  // namespace tessera

/// Propagates an error Status from an expression returning Status.
#define TESSERA_RETURN_IF_ERROR(expr)              \
  do {                                             \
    ::tessera::Status tessera_status_ = (expr);    \
    if (!tessera_status_.is_ok()) return tessera_status_; \
  } while (0)
