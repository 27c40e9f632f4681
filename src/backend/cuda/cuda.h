// The CUDA backend as the rest of the library sees it: plain C++, no CUDA types. With
// TESSERA_CUDA=ON these are implemented by cuda_backend.cu; without it by absent.cpp,
// which answers that this build has no CUDA.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "tessera/status.h"

namespace tessera::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;  // "NVIDIA H200"
  int cc_major = 0;  // compute capability, 9.0 for Hopper
  int cc_minor = 0;
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
};

/// Whether this build has the CUDA backend.
bool built();

/// The GPUs this process can use. An error when the build has no CUDA or the driver
/// cannot be asked; an empty list when there is none.
Result<std::vector<DeviceInfo>> devices();

/// A backend on GPU `device` (an index into devices()): its own stream, cuBLAS handle
/// and scratch pool. Errors name the device when there is no such one.
Result<std::unique_ptr<Backend>> make_backend(int device);

/// Why tests and tools cannot use a GPU here, or "" when device 0 is usable.
std::string unavailable_reason();

}  // namespace tessera::cuda
