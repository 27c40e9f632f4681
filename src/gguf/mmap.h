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

/// Gives back the resident pages wholly inside [p, p + n) of a read-only file mapping (a
/// part read and no longer needed; a page shared with a neighbour stays): they stop
/// counting in the process's memory, and a later read maps them from the file again. For
/// a reader that streams a file larger than memory. Never for anonymous memory, whose
/// contents it would discard.
void drop_mapped_pages(const uint8_t* p, size_t n);

}  // namespace tessera::gguf
