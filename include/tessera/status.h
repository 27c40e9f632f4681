// Status and Result<T>: the error channel for failures caused by input
// (a file, a request, a flag, memory). Broken invariants use TESSERA_CHECK.
#pragma once

#include <cassert>
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

/// A value or an error Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) { assert(!status_.is_ok()); }  // NOLINT

  bool is_ok() const { return value_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }

  T& value() & { assert(value_); return *value_; }
  const T& value() const& { assert(value_); return *value_; }
  T&& value() && { assert(value_); return std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
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
