// Another rank of an MPI job, as the scheduler sees it: a backend whose splits run in
// that rank's process. This process never computes on it or stores tensors in it; the
// scheduler sends it the tensors that cross into its splits and receives those that
// come out through the Backend interface's transfers (send_tensor, receive_tensor, results
// for the rank that samples), which this class carries over MPI; so a model split across
// ranks runs behind the same split points as one split across local backends.
#pragma once

#include <string>

#include "backend/backend.h"
#include "backend/mpi/comm.h"
#include "core/check.h"

namespace tessera {

class RemoteBackend final : public Backend {
 public:
  explicit RemoteBackend(int rank) : rank_(rank), name_("mpi rank " + std::to_string(rank)) {}
  int rank() const { return rank_; }
  std::string_view name() const override { return name_; }

  bool can_hold_tensors() const override { return false; }
  Result<std::unique_ptr<Buffer>> alloc_buffer(size_t) override {
    return Status::error(name_ + ": tensors of another rank have no memory in this process");
  }
  size_t alignment() const override { return 64; }
  void set_tensor_async(Tensor*, const void*, size_t, size_t) override { unreachable(); }
  void get_tensor_async(const Tensor*, void*, size_t, size_t) override { unreachable(); }
  void synchronize() override {}
  Status send_tensor(const Tensor* src) override {
    return mpi::isend_copy(rank_, mpi::Tag::Activation, src->data, src->nbytes());
  }
  Status receive_tensor(Tensor* dst) override { return mpi::recv(rank_, mpi::Tag::Activation, dst->data, dst->nbytes()); }
  Status send_result(const void* data, size_t size) override {
    return mpi::isend_copy(rank_, mpi::Tag::Output, data, size);
  }
  Status receive_result_async(void* data, size_t size) override {
    return mpi::irecv(rank_, mpi::Tag::Output, data, size);
  }
  Status finish_transfers() override { return mpi::wait_all(); }
  /// Every rank runs the same build: what this one computes, that one does.
  bool supports_op(const Tensor*) const override { return true; }
  Status compute(const Graph&) override {
    return Status::error(name_ + ": its splits are computed by that rank, not here");
  }

 private:
  [[noreturn]] void unreachable() const {
    TESSERA_CHECK_MSG(false, "the tensors of another rank are never read or written here");
    __builtin_unreachable();
  }
  int rank_;
  std::string name_;
};

}  // namespace tessera
