// Scratch memory for kernels' temporaries (8-bit activations, dequantized weights,
// partial attention sums): taken by bumping a pointer through chunks the device gave
// once, released all together at the end of a compute. After the first graph of a shape
// no compute asks the device for memory, which is also what CUDA-graph capture needs.
// Plain C++ over an allocator callback, so the policy is unit-tested on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace tessera::cuda {

class ScratchPool {
 public:
  using AllocFn = std::function<void*(size_t bytes)>;  // null when out of memory
  using FreeFn = std::function<void(void* p)>;

  ScratchPool(AllocFn alloc, FreeFn free, size_t alignment = 256);
  ~ScratchPool();
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;

  /// `bytes` of memory valid until reset(), aligned; null when the device is out of it.
  void* take(size_t bytes);
  /// Ends a compute: later takes reuse the memory. When a compute spilled past the
  /// first chunk, the chunks become one chunk of what that compute used, so the next
  /// compute of the same shape takes from one chunk without asking for more. The
  /// caller makes sure no kernel still reads the memory when chunks are freed.
  void reset();

  size_t capacity() const;                         // bytes in all chunks
  size_t chunks() const { return chunks_.size(); }
  size_t used() const;                             // taken since the last reset
  /// Changes whenever the chunks do: kernels recorded in a CUDA graph hold scratch
  /// addresses, which stay valid only while this does.
  uint64_t generation() const { return generation_; }

 private:
  struct Chunk {
    char* base;
    size_t size;
    size_t top;
  };
  AllocFn alloc_;
  FreeFn free_;
  size_t alignment_;
  std::vector<Chunk> chunks_;
  size_t current_ = 0;  // the chunk takes come from
  uint64_t generation_ = 0;
};

}  // namespace tessera::cuda
