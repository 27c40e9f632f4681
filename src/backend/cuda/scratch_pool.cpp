#include "backend/cuda/scratch_pool.h"

#include <algorithm>
#include <utility>

#include "core/check.h"

namespace tessera::cuda {
namespace {
constexpr size_t kMinChunk = size_t(1) << 20;

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace

ScratchPool::ScratchPool(AllocFn alloc, FreeFn free, size_t alignment)
    : alloc_(std::move(alloc)), free_(std::move(free)), alignment_(alignment) {
  TESSERA_CHECK_MSG(alignment_ > 0 && (alignment_ & (alignment_ - 1)) == 0, "alignment must be a power of two");
}

ScratchPool::~ScratchPool() {
  for (const Chunk& c : chunks_) free_(c.base);
}

void* ScratchPool::take(size_t bytes) {
  bytes = round_up(std::max<size_t>(bytes, 1), alignment_);
  for (; current_ < chunks_.size(); ++current_) {
    Chunk& c = chunks_[current_];
    if (c.top + bytes <= c.size) {
      void* p = c.base + c.top;
      c.top += bytes;
      return p;
    }
  }
  // A new chunk: at least twice the last, so a growing compute asks only log-many times.
  const size_t last = chunks_.empty() ? 0 : chunks_.back().size;
  const size_t size = round_up(std::max({bytes, 2 * last, kMinChunk}), alignment_);
  void* p = alloc_(size);
  if (p == nullptr) return nullptr;
  chunks_.push_back({static_cast<char*>(p), size, bytes});
  ++generation_;
  current_ = chunks_.size() - 1;
  return p;
}

void ScratchPool::reset() {
  if (chunks_.size() > 1) {
    const size_t want = round_up(used(), alignment_);
    for (const Chunk& c : chunks_) free_(c.base);
    chunks_.clear();
    if (void* p = alloc_(want)) chunks_.push_back({static_cast<char*>(p), want, 0});
    ++generation_;
  }
  for (Chunk& c : chunks_) c.top = 0;
  current_ = 0;
}

size_t ScratchPool::capacity() const {
  size_t n = 0;
  for (const Chunk& c : chunks_) n += c.size;
  return n;
}

size_t ScratchPool::used() const {
  size_t n = 0;
  for (const Chunk& c : chunks_) n += c.top;
  return n;
}

}  // namespace tessera::cuda
