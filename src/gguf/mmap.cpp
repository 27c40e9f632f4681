#include "gguf/mmap.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tessera::gguf {
namespace {

Status os_error(const std::string& path, const char* step, int err) {
  return Status::error("gguf: " + path + ": " + step + " failed: " + std::strerror(err));
}

// Closes a descriptor when it goes out of scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return os_error(path, "open", errno);
  FdCloser closer{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) return os_error(path, "stat", errno);
  if (!S_ISREG(st.st_mode)) return Status::error("gguf: " + path + ": not a regular file");
  if (st.st_size < 0) return Status::error("gguf: " + path + ": stat gave a negative size");
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) return MappedFile();  // mmap refuses length 0; the parser reports it

  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) return os_error(path, "mmap", errno);
  return MappedFile(static_cast<const uint8_t*>(p), size);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void drop_mapped_pages(const uint8_t* p, size_t n) {
  const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(p) + page - 1) / page * page, end = (uintptr_t(p) + n) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void MappedFile::reset() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace tessera::gguf
