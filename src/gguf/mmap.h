// A read-only memory mapping of a whole file (RAII). Internal to src/gguf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tessera/status.h"

namespace tessera::gguf {

/// Maps a regular file read-only. An empty file maps to (nullptr, 0).
class MappedFile {
 public:
  /// Opens and maps `path`; errors name the path, the step (open/stat/mmap) and the OS error.
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  MappedFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  void reset();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tessera::gguf
