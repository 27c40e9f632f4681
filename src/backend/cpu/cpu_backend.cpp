#include "backend/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "backend/cpu/op_table.h"
#include "core/check.h"

namespace tessera {
namespace {

class HostBuffer final : public Buffer {
 public:
  HostBuffer(Backend& backend, void* base, size_t size, bool owned)
      : backend_(backend), base_(base), size_(size), owned_(owned) {}
  ~HostBuffer() override {
    if (owned_) std::free(base_);
  }
  Backend& backend() const override { return backend_; }
  void* base() const override { return base_; }
  size_t size() const override { return size_; }
  size_t alignment() const override { return CpuBackend::kAlignment; }
  void clear(uint8_t value) override { std::memset(base_, value, size_); }

 private:
  Backend& backend_;
  void* base_;
  size_t size_;
  bool owned_;
};

}  // namespace

CpuBackend::CpuBackend(int n_threads, std::string name) : name_(std::move(name)), pool_(n_threads) {}

Result<std::unique_ptr<Buffer>> CpuBackend::alloc_buffer(size_t size) {
  const size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (!p) {
    return Status::error("cpu: cannot allocate " + std::to_string(size) + " bytes");
  }
  return std::unique_ptr<Buffer>(std::make_unique<HostBuffer>(*this, p, size, true));
}

std::unique_ptr<Buffer> CpuBackend::buffer_from_host_ptr(void* ptr, size_t size) {
  return std::make_unique<HostBuffer>(*this, ptr, size, false);
}

void CpuBackend::set_tensor_async(Tensor* t, const void* data, size_t offset, size_t size) {
  TESSERA_CHECK(t->data != nullptr && offset + size <= t->nbytes());
  std::memcpy(static_cast<char*>(t->data) + offset, data, size);
}

void CpuBackend::get_tensor_async(const Tensor* t, void* data, size_t offset, size_t size) {
  TESSERA_CHECK(t->data != nullptr && offset + size <= t->nbytes());
  std::memcpy(data, static_cast<const char*>(t->data) + offset, size);
}

void CpuBackend::copy_tensor_from(const Tensor* src, Tensor* dst) {
  const bool host = src->buffer == nullptr || dynamic_cast<const CpuBackend*>(&src->buffer->backend()) != nullptr;
  if (!host) {
    Backend::copy_tensor_from(src, dst);
    return;
  }
  TESSERA_CHECK(src->type == dst->type && src->same_shape(*dst));
  TESSERA_CHECK(src->is_contiguous() && dst->is_contiguous() && src->data != nullptr && dst->data != nullptr);
  std::memcpy(dst->data, src->data, src->nbytes());
}

bool CpuBackend::supports_op(const Tensor* node) const { return cpu::supports(node); }

Status CpuBackend::compute(const Graph& graph) {
  const int nth = pool_.size();
  size_t work_size = 0;
  for (const Tensor* node : graph.nodes()) {
    if (!cpu::supports(node)) {
      return Status::error("cpu: op " + std::string(op_name(node->op)) + " on '" + node->name +
                           "' is not supported for its types or layout");
    }
    if (node->data == nullptr) {
      return Status::error("cpu: node '" + node->name + "' has no memory (graph not allocated)");
    }
    const cpu::OpEntry& e = cpu::op_entry(node->op);
    if (e.work_size) work_size = std::max(work_size, e.work_size(node, nth));
  }
  if (work_size_ < work_size) {
    work_.reset(static_cast<char*>(
        std::aligned_alloc(kAlignment, (work_size + kAlignment - 1) / kAlignment * kAlignment)));
    if (!work_) {
      work_size_ = 0;
      return Status::error("cpu: cannot allocate " + std::to_string(work_size) +
                           " bytes of scratch");
    }
    work_size_ = work_size;
  }

  const std::vector<Tensor*>& nodes = graph.nodes();
  if (!slots_) slots_ = std::make_unique<cpu::WorkSlot[]>(size_t(nth));
  // Node i of this compute is number first + i (never 0, which fresh slots carry).
  if (seq_ > UINT32_MAX - nodes.size() - 1) seq_ = 0;
  const uint32_t first = seq_ + 1;
  seq_ += uint32_t(nodes.size());
  pool_.run([&](int ith, int n) {
    cpu::KernelParams p{ith, n, work_.get(), work_size_, slots_.get(), 0};
    for (size_t i = 0; i < nodes.size(); ++i) {
      Tensor* node = nodes[i];
      if (op_is_view(node->op)) continue;
      p.seq = first + uint32_t(i);
      const cpu::OpEntry& e = cpu::op_entry(node->op);
      if (e.prepare && e.prepare(node, p)) pool_.barrier();
      e.compute(node, p);
      pool_.barrier();
    }
  });
  return Status::ok();
}

}  // namespace tessera
