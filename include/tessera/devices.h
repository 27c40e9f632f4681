// The backends this build has and the devices each can run on (`--list-devices`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

struct DeviceDesc {
  int index = 0;             // the index -ngl's --device takes (CUDA), or the rank (MPI)
  std::string name;          // "NVIDIA H200", the CPU's model name, "rank 1"
  std::string description;   // threads and kernels, compute capability...
  uint64_t total_bytes = 0;  // 0: unknown
  uint64_t free_bytes = 0;
};

/// One kind of backend: its devices, or why it has none to use here.
struct BackendListing {
  std::string name;     // "CPU", "CUDA", "MPI"
  std::string summary;  // what the kind is
  std::vector<DeviceDesc> devices;
  std::string unavailable;  // when devices is empty: why ("this build ... has no CUDA ...")
};

/// Every kind of backend of this build, in registry order, with its devices.
std::vector<BackendListing> list_backends();

}  // namespace tessera
