// Commands between ranks as bytes: a writer that appends values and a reader that takes
// them back in the same order, refusing to read past the end.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/check.h"

namespace tessera::mpi {

/// What rank 0 asks the other ranks to do (runtime/mpi_commands.cpp carries them out):
/// the lifetimes of models and contexts, and ContextOp, one operation of the mirrored
/// Context operations' table (runtime/mirrored_ops.h).
enum class Command : uint8_t {
  LoadModel = 1,   // path, ModelParams; replies
  CreateContext,   // model id, context id, ContextParams; replies
  FreeContext,     // context id
  ContextOp,       // context id, the row of the table, the method's arguments
  FreeModel,       // model id
  Exit,            // the job is over
};

class MessageWriter {
 public:
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&v, sizeof(T));
  }
  template <typename T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put(uint64_t(v.size()));
    append(v.data(), v.size() * sizeof(T));
  }
  void put_string(const std::string& s) { put_vector(std::vector<char>(s.begin(), s.end())); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void append(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = bytes_.size();
    bytes_.resize(at + n);
    std::memcpy(bytes_.data() + at, p, n);
  }
  std::vector<uint8_t> bytes_;
};

/// Reads what a MessageWriter wrote. Every rank runs the same build, so a message that
/// does not parse is a bug: reading past the end fails a check.
class MessageReader {
 public:
  explicit MessageReader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    TESSERA_CHECK_MSG(at_ + sizeof(T) <= bytes_.size(), "mpi: a command ends early");
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  template <typename T>
  std::vector<T> get_vector() {
    const uint64_t n = get<uint64_t>();
    TESSERA_CHECK_MSG(n <= (bytes_.size() - at_) / sizeof(T), "mpi: a command ends early");
    std::vector<T> v(static_cast<size_t>(n));
    if (n > 0) std::memcpy(v.data(), bytes_.data() + at_, size_t(n) * sizeof(T));
    at_ += size_t(n) * sizeof(T);
    return v;
  }
  std::string get_string() {
    const std::vector<char> c = get_vector<char>();
    return std::string(c.begin(), c.end());
  }

 private:
  const std::vector<uint8_t>& bytes_;
  size_t at_ = 0;
};

}  // namespace tessera::mpi
