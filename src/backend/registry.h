// The backend registry: every kind of backend this build has (CPU, CUDA, MPI), by name,
// with its devices and a factory. Code above src/backend/ makes backends only through it,
// so it never names a concrete backend: a new backend is one entry in registry.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "tessera/status.h"

namespace tessera::backends {

/// One device a kind of backend can run on.
struct Device {
  std::string kind;          // the registry name: "CPU", "CUDA"
  int index = 0;             // the kind's device index (-ngl's --device for CUDA)
  std::string name;          // "NVIDIA H200", the CPU's model name
  std::string description;   // what else is worth a line: memory, capability, threads
  uint64_t total_bytes = 0;  // 0 when unknown
  uint64_t free_bytes = 0;
};

/// What a factory needs; each kind reads its own fields.
struct Options {
  int n_threads = 1;    // CPU: worker threads (at least 1)
  std::string label;    // CPU: the backend's name ("CPU" when empty)
  int device = 0;       // CUDA: the device index
  int rank = 0;         // MPI: the rank whose backend this process stands in for
};

/// A kind of backend: its name, how to list its devices, how to make one.
struct Kind {
  std::string_view name;
  /// What the kind is, for --list-devices.
  std::string_view summary;
  /// Its devices: an error says why there are none to use (not built, no driver...).
  Result<std::vector<Device>> (*devices)();
  Result<std::unique_ptr<Backend>> (*create)(const Options& options);
};

/// Every kind this build has, in the order --list-devices prints them.
std::span<const Kind> kinds();
/// The kind named `name` (case-insensitive), or null.
const Kind* find(std::string_view name);
/// "CPU, CUDA, MPI": for error messages.
std::string names();

/// A backend of kind `name`; an error names an unknown kind and lists the known ones.
Result<std::unique_ptr<Backend>> create(std::string_view name, const Options& options);
/// The devices of kind `name`; an error when there are none to use, saying why.
Result<std::vector<Device>> devices(std::string_view name);

}  // namespace tessera::backends
