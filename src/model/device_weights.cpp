#include "model/device_weights.h"

#include <algorithm>

#include "backend/registry.h"
#include "core/check.h"
#include "tessera/log.h"

namespace tessera {

Result<std::unique_ptr<DeviceWeights>> upload_weights(const Placement& p,
                                                     const std::unordered_map<const Tensor*, int>& weight_backend) {
  auto out = std::make_unique<DeviceWeights>();
  for (size_t b = 0; b < p.backends.size(); ++b) {
    const int device = p.gpu_of(int(b));
    if (device < 0 || !p.here(int(b))) continue;
    // In file order, so that the upload reads the mapping front to back.
    std::vector<Tensor*> mine;
    for (const auto& [t, at] : weight_backend) {
      if (at == int(b)) mine.push_back(const_cast<Tensor*>(t));
    }
    std::sort(mine.begin(), mine.end(), [](const Tensor* a, const Tensor* c) { return a->data < c->data; });
    backends::Options gpu;
    gpu.device = device;
    Result<std::unique_ptr<Backend>> backend = backends::create("CUDA", gpu);
    if (!backend) return backend.status().with_context("-ngl");
    const size_t align = (*backend)->alignment();
    size_t total = 0;
    for (const Tensor* t : mine) total += (t->nbytes() + align - 1) / align * align;
    Result<std::unique_ptr<Buffer>> buf = (*backend)->alloc_buffer(total);
    if (!buf) return buf.status().with_context("-ngl: the offloaded weights");
    size_t offset = 0;
    for (Tensor* t : mine) {
      TESSERA_CHECK_MSG(t->is_contiguous() && t->view_src == nullptr, "weights are contiguous tensors");
      const void* host = t->data;
      (*buf)->place(t, offset);
      (*backend)->set_tensor_async(t, host, 0, t->nbytes());
      offset += (t->nbytes() + align - 1) / align * align;
    }
    (*backend)->synchronize();
    log(LogLevel::Info, "%s: %zu weights, %.1f MiB", std::string((*backend)->name()).c_str(), mine.size(),
        double(total) / (1 << 20));
    out->buffers.push_back(std::move(*buf));
    out->backends.push_back(std::move(*backend));
  }
  return out;
}

}  // namespace tessera
