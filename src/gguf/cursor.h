// Bounds-checked little-endian reading over a byte range, for the GGUF reader.
// Internal to src/gguf. Every read checks the bytes left before touching memory and
// reports "gguf: <path>: <what> at offset <N>: <problem>".
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "tessera/limits.h"
#include "tessera/status.h"

namespace tessera::gguf {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

/// `s` in single quotes for messages: bytes outside printable ASCII become \xNN, and
/// anything past 96 bytes is cut to "...".
std::string quoted(std::string_view s);
/// True if `s` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view s);

/// a * b and a + b without wrapping; false when the result does not fit.
inline bool mul_ok(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool add_ok(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& path) : data_(data), size_(size), path_(path) {}

  size_t pos() const { return pos_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - pos_; }

  /// "gguf: <path>: <message>".
  Status fail(const std::string& message) const { return Status::error("gguf: " + path_ + ": " + message); }
  /// "gguf: <path>: <what> at offset <at>: <problem>".
  Status fail_at(std::string_view what, size_t at, const std::string& problem) const {
    return fail(std::string(what) + " at offset " + std::to_string(at) + ": " + problem);
  }

  /// Reads n raw bytes into `out`.
  Status read_bytes(void* out, size_t n, std::string_view what) {
    if (n > remaining()) return truncated(what, n);
    if (n) std::memcpy(out, data_ + pos_, n);
    pos_ += n;
    return Status::ok();
  }

  /// Reads one little-endian scalar.
  template <typename T>
  Status read(T& out, std::string_view what) {
    return read_bytes(&out, sizeof(T), what);
  }

  /// Reads a GGUF string: u64 length, then that many bytes (no terminator). `limit`
  /// names the largest length allowed (limits.h) for the message.
  Status read_string(std::string& out, std::string_view what, uint64_t max_len = limits::kMaxStringBytes,
                     std::string_view limit = "kMaxStringBytes") {
    const size_t at = pos_;
    uint64_t len = 0;
    TESSERA_RETURN_IF_ERROR(read(len, what));
    if (len > remaining()) {
      return fail_at(what, at, "string length " + std::to_string(len) + " goes beyond end of file (" +
                                   std::to_string(remaining()) + " bytes left, file size " +
                                   std::to_string(size_) + ")");
    }
    if (len > max_len) return over_limit(what, at, "string length", len, limit, max_len);
    out.assign(reinterpret_cast<const char*>(data_ + pos_), size_t(len));
    pos_ += size_t(len);
    return Status::ok();
  }

  /// An error unless `count` items of at least `min_size` bytes each fit in what is left
  /// and `count` is at most `max_count`, the limit called `limit` (limits.h).
  Status check_count(uint64_t count, uint64_t min_size, std::string_view what, size_t at, uint64_t max_count,
                     std::string_view limit) const {
    uint64_t need = 0;
    if (!mul_ok(count, min_size, &need) || need > remaining()) {
      return fail_at(what, at, "count " + std::to_string(count) + " cannot fit in the " +
                                   std::to_string(remaining()) + " bytes left (file size " +
                                   std::to_string(size_) + ")");
    }
    if (count > max_count) return over_limit(what, at, "count", count, limit, max_count);
    return Status::ok();
  }

  /// "<what> at offset <at>: <quantity> <value> is above tessera's limit <limit> = <max>".
  Status over_limit(std::string_view what, size_t at, std::string_view quantity, uint64_t value,
                    std::string_view limit, uint64_t max) const {
    return fail_at(what, at, std::string(quantity) + " " + std::to_string(value) + " is above tessera's limit " +
                                 std::string(limit) + " = " + std::to_string(max));
  }

 private:
  Status truncated(std::string_view what, size_t n) const {
    return fail_at(what, pos_, "file ends after " + std::to_string(remaining()) + " of " +
                                   std::to_string(n) + " bytes (truncated file of size " +
                                   std::to_string(size_) + ")");
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& path_;
};

}  // namespace tessera::gguf
