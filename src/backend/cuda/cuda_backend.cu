// The CUDA backend: device buffers, a pinned staging area for host transfers, one stream
// per backend with a cuBLAS handle and a scratch pool, compute from the op table, and
// CUDA graphs for computes whose nodes and addresses repeat (decode steps).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/cuda/cuda.h"
#include "backend/cuda/graph_key.h"
#include "backend/cuda/op_table.cuh"
#include "core/check.h"
#include "tessera/log.h"

namespace tessera::cuda {

void fail(const char* what, const char* error, const char* file, int line) {
  std::fprintf(stderr, "tessera: CUDA: %s failed: %s (%s:%d)\n", what, error, file, line);
  std::abort();
}

namespace {

constexpr size_t kAlignment = 256;
constexpr size_t kCublasWorkspace = size_t(32) << 20;  // what cuBLAS asks for on Hopper
constexpr size_t kMaxTransfer = size_t(32) << 20;      // a host transfer's piece through staging

std::string mib(size_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

class CudaBackend;

class DeviceBuffer final : public Buffer {
 public:
  DeviceBuffer(Backend& backend, int device, void* base, size_t size)
      : backend_(backend), device_(device), base_(base), size_(size) {}
  ~DeviceBuffer() override {
    cudaSetDevice(device_);
    cudaFree(base_);
  }
  Backend& backend() const override { return backend_; }
  void* base() const override { return base_; }
  size_t size() const override { return size_; }
  size_t alignment() const override { return kAlignment; }
  void clear(uint8_t value) override {
    TESSERA_CUDA_CHECK(cudaSetDevice(device_));
    TESSERA_CUDA_CHECK(cudaMemset(base_, value, size_));
  }

 private:
  Backend& backend_;
  int device_;
  void* base_;
  size_t size_;
};

/// Pinned host memory that async transfers go through: bumped by each transfer, reset
/// by synchronize(), grown (after a sync) when a transfer does not fit.
class Staging {
 public:
  ~Staging() { release(); }
  size_t free_bytes() const { return size_ - top_; }
  char* take(size_t bytes) {
    char* p = base_ + top_;
    top_ += (bytes + 63) / 64 * 64;
    return p;
  }
  void reset() { top_ = 0; }
  void grow(size_t at_least) {
    release();
    size_ = std::max(at_least, size_t(16) << 20);
    TESSERA_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&base_), size_));
  }

 private:
  void release() {
    if (base_ != nullptr) cudaFreeHost(base_);
    base_ = nullptr;
    size_ = top_ = 0;
  }
  char* base_ = nullptr;
  size_t size_ = 0;
  size_t top_ = 0;
};

/// An instantiated CUDA graph of one Graph's compute, valid while its key holds.
struct Captured {
  GraphKey key;
  bool seen = false;  // the key was computed once eagerly: the next identical compute captures
  cudaGraphExec_t exec = nullptr;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, const cudaDeviceProp& prop)
      : device_(device),
        name_("CUDA" + std::to_string(device)),
        scratch_([this](size_t n) { return device_alloc(n); }, [](void* p) { cudaFree(p); }, kAlignment) {
    TESSERA_CUDA_CHECK(cudaSetDevice(device_));
    TESSERA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TESSERA_CUBLAS_CHECK(cublasCreate(&cublas_));
    TESSERA_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    // A workspace of our own: cuBLAS then allocates nothing inside a captured graph.
    TESSERA_CUDA_CHECK(cudaMalloc(&cublas_workspace_, kCublasWorkspace));
    TESSERA_CUBLAS_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_, kCublasWorkspace));
    ctx_.stream = stream_;
    ctx_.cublas = cublas_;
    ctx_.scratch = &scratch_;
    ctx_.cc = prop.major * 10 + prop.minor;
    ctx_.sm_count = prop.multiProcessorCount;
    const char* env = std::getenv("TESSERA_CUDA_GRAPHS");
    graphs_enabled_ = env == nullptr || std::string(env) != "0";
  }
  ~CudaBackend() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    for (auto& [g, c] : captured_) {
      if (c.exec != nullptr) cudaGraphExecDestroy(c.exec);
    }
    cublasDestroy(cublas_);
    cudaFree(cublas_workspace_);
    cudaStreamDestroy(stream_);
  }

  std::string_view name() const override { return name_; }
  bool host_memory() const override { return false; }
  size_t alignment() const override { return kAlignment; }

  Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override {
    void* p = device_alloc(size);
    if (p == nullptr) {
      size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      return Status::error(name_ + ": out of device memory: " + mib(size) + " asked, " + mib(free_b) + " free of " +
                           mib(total_b) + " (offload fewer layers with -ngl, or a smaller context with -c)");
    }
    return std::unique_ptr<Buffer>(std::make_unique<DeviceBuffer>(*this, device_, p, size));
  }

  void set_tensor_async(Tensor* t, const void* data, size_t offset, size_t size) override {
    TESSERA_CHECK(t->data != nullptr && offset + size <= t->nbytes());
    char* dst = static_cast<char*>(t->data) + offset;
    const char* from = static_cast<const char*>(data);
    for (size_t done = 0; done < size;) {  // in pieces, so staging stays small for big weights
      const size_t n = std::min(size - done, kMaxTransfer);
      char* pinned = stage(n);
      std::memcpy(pinned, from + done, n);
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst + done, pinned, n, cudaMemcpyHostToDevice, stream_));
      done += n;
    }
  }

  void get_tensor_async(const Tensor* t, void* data, size_t offset, size_t size) override {
    TESSERA_CHECK(t->data != nullptr && offset + size <= t->nbytes());
    const char* src = static_cast<const char*>(t->data) + offset;
    char* to = static_cast<char*>(data);
    for (size_t done = 0; done < size;) {
      const size_t n = std::min(size - done, kMaxTransfer);
      char* pinned = stage(n);
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(pinned, src + done, n, cudaMemcpyDeviceToHost, stream_));
      pending_gets_.push_back({pinned, to + done, n});  // finished by synchronize()
      done += n;
    }
  }

  void synchronize() override {
    TESSERA_CUDA_CHECK(cudaSetDevice(device_));
    TESSERA_CUDA_CHECK(cudaStreamSynchronize(stream_));
    for (const PendingGet& g : pending_gets_) std::memcpy(g.dst, g.pinned, g.size);
    pending_gets_.clear();
    staging_.reset();
  }

  void copy_tensor_from(const Tensor* src, Tensor* dst) override {
    TESSERA_CHECK(src->type == dst->type && src->same_shape(*dst));
    TESSERA_CHECK(src->is_contiguous() && dst->is_contiguous() && src->data != nullptr && dst->data != nullptr);
    const auto* from = src->buffer ? dynamic_cast<const CudaBackend*>(&src->buffer->backend()) : nullptr;
    if (from == nullptr && src->buffer != nullptr && !src->buffer->backend().host_memory()) {
      Backend::copy_tensor_from(src, dst);  // another kind of device: through the host
      return;
    }
    if (from == nullptr) {  // host memory (a CPU backend's, or a weight read in place)
      set_tensor_async(dst, src->data, 0, src->nbytes());
      return;
    }
    // The source's stream must be done with it: an event orders the two streams.
    TESSERA_CUDA_CHECK(cudaEventRecord(from->done_event(), from->stream_));
    TESSERA_CUDA_CHECK(cudaStreamWaitEvent(stream_, from->done_event(), 0));
    if (from->device_ == device_) {
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst->data, src->data, src->nbytes(), cudaMemcpyDeviceToDevice, stream_));
    } else {
      TESSERA_CUDA_CHECK(cudaMemcpyPeerAsync(dst->data, device_, src->data, from->device_, src->nbytes(), stream_));
    }
  }

  bool supports_op(const Tensor* node) const override { return supports(node); }

  Status compute(const Graph& graph) override {
    for (const Tensor* node : graph.nodes()) {
      if (!supports(node)) {
        return Status::error(name_ + ": op " + std::string(op_name(node->op)) + " on '" + node->name +
                             "' is not supported for its types or layout");
      }
      if (node->data == nullptr) return Status::error(name_ + ": node '" + node->name + "' has no memory");
    }
    TESSERA_CUDA_CHECK(cudaSetDevice(device_));
    // Before the key and before any capture: merging the scratch's chunks frees device
    // memory, which a stream capture does not allow (cudaFree may synchronize).
    scratch_.reset();
    if (!graphs_enabled_) {
      launch_all(graph);
      return Status::ok();
    }
    GraphKey key = graph_key(graph, scratch_.generation());
    Captured& c = captured_[&graph];
    if (c.exec != nullptr && c.key == key) {
      TESSERA_CUDA_CHECK(cudaGraphLaunch(c.exec, stream_));
      return Status::ok();
    }
    if (c.exec != nullptr) {
      TESSERA_CUDA_CHECK(cudaGraphExecDestroy(c.exec));
      c.exec = nullptr;
    }
    if (!c.seen || !(c.key == key)) {  // first time with these addresses: run eagerly
      launch_all(graph);
      c.key = graph_key(graph, scratch_.generation());  // the scratch may have grown
      c.seen = true;
      return Status::ok();
    }
    capture(graph, c);
    return Status::ok();
  }

  cudaEvent_t done_event() const {
    if (done_ == nullptr) TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    return done_;
  }

 private:
  struct PendingGet {
    const char* pinned;
    void* dst;
    size_t size;
  };

  void* device_alloc(size_t size) {
    void* p = nullptr;
    if (cudaSetDevice(device_) != cudaSuccess) return nullptr;
    if (cudaMalloc(&p, size == 0 ? kAlignment : size) != cudaSuccess) {
      cudaGetLastError();  // clears the error: out of memory is reported, not sticky
      return nullptr;
    }
    return p;
  }

  char* stage(size_t size) {
    if (staging_.free_bytes() < size) {
      synchronize();  // the pending transfers finish before their memory is replaced
      if (staging_.free_bytes() < size) staging_.grow(2 * size);
    }
    return staging_.take(size);
  }

  void launch_all(const Graph& graph) {  // the scratch was reset by compute()
    for (Tensor* node : graph.nodes()) {
      if (op_is_view(node->op) || node->op == Op::None) continue;
      op_entry(node->op).compute(node, ctx_);
    }
  }

  // Records the graph's launches once and replays them: a decode step's hundreds of
  // small launches cost one.
  void capture(const Graph& graph, Captured& c) {
    cudaGraph_t g = nullptr;
    TESSERA_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
    launch_all(graph);
    TESSERA_CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
    TESSERA_CUDA_CHECK(cudaGraphInstantiate(&c.exec, g, 0));
    TESSERA_CUDA_CHECK(cudaGraphDestroy(g));
    TESSERA_CUDA_CHECK(cudaGraphLaunch(c.exec, stream_));
    c.key = graph_key(graph, scratch_.generation());
  }

  int device_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void* cublas_workspace_ = nullptr;
  ScratchPool scratch_;
  Staging staging_;
  std::vector<PendingGet> pending_gets_;
  Ctx ctx_;
  bool graphs_enabled_ = true;
  std::unordered_map<const Graph*, Captured> captured_;
  mutable cudaEvent_t done_ = nullptr;
};

}  // namespace

bool built() { return true; }

Result<std::vector<DeviceInfo>> devices() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) {
    cudaGetLastError();
    return std::vector<DeviceInfo>{};
  }
  if (err != cudaSuccess) return Status::error(std::string("CUDA: cannot list devices: ") + cudaGetErrorString(err));
  std::vector<DeviceInfo> out;
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    DeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    size_t free_b = 0, total_b = 0;
    if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
      d.free_bytes = free_b;
      d.total_bytes = total_b;
    }
    out.push_back(d);
  }
  return out;
}

Result<std::unique_ptr<Backend>> make_backend(int device) {
  Result<std::vector<DeviceInfo>> all = devices();
  if (!all) return all.status();
  if (all->empty()) return Status::error("CUDA: no GPU found (is the NVIDIA driver loaded?)");
  if (device < 0 || device >= int(all->size())) {
    return Status::error("CUDA: no device " + std::to_string(device) + " (" + std::to_string(all->size()) +
                         " found: 0-" + std::to_string(all->size() - 1) + ")");
  }
  cudaDeviceProp prop{};
  TESSERA_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  if (prop.major * 10 + prop.minor < 75) {
    return Status::error("CUDA: device " + std::to_string(device) + " (" + prop.name + ", compute capability " +
                         std::to_string(prop.major) + "." + std::to_string(prop.minor) +
                         ") is older than Turing (7.5), which this build needs");
  }
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(device, prop));
}

std::string unavailable_reason() {
  Result<std::vector<DeviceInfo>> all = devices();
  if (!all) return all.status().message();
  if (all->empty()) return "no CUDA device on this machine";
  return "";
}

}  // namespace tessera::cuda
