// The weights of the layers a placement puts on a GPU, copied into one device buffer per
// GPU at load: every context's backend on that device reads them there. Each weight's
// tensor then points into device memory (its file bytes stay mapped but unread).
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "model/placement.h"

namespace tessera {

struct DeviceWeights {
  std::vector<std::unique_ptr<Backend>> backends;  // one per GPU of the placement (uploads)
  std::vector<std::unique_ptr<Buffer>> buffers;    // destroyed before their backends
  ~DeviceWeights() { buffers.clear(); }
};

/// Copies every weight placed (`weight_backend`) on a GPU backend of `p` to that GPU.
/// Errors name the device: none present, a build without CUDA, out of memory.
Result<std::unique_ptr<DeviceWeights>> upload_weights(const Placement& p,
                                                     const std::unordered_map<const Tensor*, int>& weight_backend);

}  // namespace tessera
