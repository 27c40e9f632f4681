// The backend interface: where tensors live (Buffer) and what computes graphs
// (Backend). The CPU backend implements it in cpu/; other devices follow the same shape.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "core/graph.h"
#include "core/graph_alloc.h"
#include "tessera/status.h"

namespace tessera {

class Backend;

/// A block of device memory that tensors are placed in.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual Backend& backend() const = 0;
  /// Start of the memory as the backend addresses it.
  virtual void* base() const = 0;
  virtual size_t size() const = 0;
  virtual size_t alignment() const = 0;
  /// Lets a backend attach per-tensor state; the default places nothing extra.
  virtual void init_tensor(Tensor* t) {}
  /// Fills the whole buffer with a byte value.
  virtual void clear(uint8_t value) = 0;

  /// Puts `t` at `offset` bytes into this buffer (offset + t's size must fit).
  void place(Tensor* t, size_t offset);
};

/// A device that holds tensors and computes graphs on them.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  /// Whether tensors can live in this process's memory of it (not so for another MPI
  /// rank, backend/mpi/remote_backend.h).
  virtual bool can_hold_tensors() const { return true; }
  /// Whether its tensors' memory is this process's host memory, which the CPU reads in
  /// place (not so for a GPU: host tensors its nodes read are copied to it first).
  virtual bool host_memory() const { return true; }
  /// A buffer of `size` bytes; an error when the device is out of memory.
  virtual Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) = 0;
  virtual size_t alignment() const = 0;

  /// Copies host bytes into (from) a tensor's memory at a byte offset. May return before
  /// the copy is done; synchronize() waits for all of them.
  virtual void set_tensor_async(Tensor* t, const void* data, size_t offset, size_t size) = 0;
  virtual void get_tensor_async(const Tensor* t, void* data, size_t offset, size_t size) = 0;
  virtual void synchronize() = 0;

  /// Whether this backend can compute `node` (its op, types and layout).
  virtual bool supports_op(const Tensor* node) const = 0;
  /// Computes every node of a graph whose tensors all have memory.
  virtual Status compute(const Graph& graph) = 0;

  /// Copies src (on any backend) into dst (on this backend); same type and shape,
  /// both contiguous. The default uploads host memory (a host backend's tensor, or one
  /// with no buffer: a weight read in place) and stages a device's through the host.
  virtual void copy_tensor_from(const Tensor* src, Tensor* dst);

  /// Transfers with a backend that computes in another process (can_hold_tensors() is
  /// false: another MPI rank). The scheduler moves data across its split points with these
  /// alone, so it needs to know nothing of how the other process is reached. Local
  /// backends never get these calls; the defaults refuse them.
  /// Sends a local tensor into the split this backend computes (the other process receives
  /// it into the same tensor of its graph).
  virtual Status send_tensor(const Tensor* src);
  /// Receives into a local tensor what this backend's split computed.
  virtual Status receive_tensor(Tensor* dst);
  /// Sends `size` bytes of results to the process this backend stands for; `data` must
  /// stay valid until finish_transfers().
  virtual Status send_result(const void* data, size_t size);
  /// Starts receiving `size` bytes of results computed by this backend's process into
  /// `data`; they are there after finish_transfers().
  virtual Status receive_result_async(void* data, size_t size);
  /// Waits for every transfer started above.
  virtual Status finish_transfers() { return Status::ok(); }

  void set_tensor(Tensor* t, const void* data, size_t offset, size_t size) {
    set_tensor_async(t, data, offset, size);
    synchronize();
  }
  void get_tensor(const Tensor* t, void* data, size_t offset, size_t size) {
    get_tensor_async(t, data, offset, size);
    synchronize();
  }
};

/// Places a graph's planned tensors (core/graph_alloc.h: the plan is offsets, made
/// without a buffer) in `buffer`, which must be at least plan.size bytes, then points
/// every view of the graph into its source.
void apply_graph_memory(const AllocPlan& plan, const Graph& graph, Buffer& buffer);

}  // namespace tessera
