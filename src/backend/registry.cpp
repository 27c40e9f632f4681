#include "backend/registry.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <thread>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/vec.h"
#include "backend/cuda/cuda.h"
#include "backend/mpi/remote_backend.h"
#include "tessera/devices.h"
#include "tessera/mpi.h"

namespace tessera::backends {
namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("model name")) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "CPU";
}

Result<std::vector<Device>> cpu_devices() {
  Device d;
  d.kind = "CPU";
  d.name = cpu_model_name();
  d.description = std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " threads, kernels " +
                  std::string(cpu::isa_name(cpu::active_isa()));
  return std::vector<Device>{d};
}

Result<std::unique_ptr<Backend>> cpu_create(const Options& o) {
  return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(std::max(1, o.n_threads), o.label.empty() ? "CPU" : o.label));
}

Result<std::vector<Device>> cuda_devices() {
  Result<std::vector<cuda::DeviceInfo>> gpus = cuda::devices();
  if (!gpus) return gpus.status();
  if (gpus->empty()) return Status::error("no CUDA device found");
  std::vector<Device> out;
  for (const cuda::DeviceInfo& g : *gpus) {
    Device d;
    d.kind = "CUDA";
    d.index = g.index;
    d.name = g.name;
    d.description = "compute capability " + std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor);
    d.total_bytes = g.total_bytes;
    d.free_bytes = g.free_bytes;
    out.push_back(std::move(d));
  }
  return out;
}

Result<std::unique_ptr<Backend>> cuda_create(const Options& o) { return cuda::make_backend(o.device); }

// Each other rank of an MPI job is a device of this kind: its layers run in its process.
Result<std::vector<Device>> mpi_devices() {
  if (!mpi::built()) return Status::error("this build of tessera has no MPI (configure with -DTESSERA_MPI=ON)");
  if (mpi::size() <= 1) return Status::error("not started by mpirun with more than one rank");
  std::vector<Device> out;
  for (int r = 0; r < mpi::size(); ++r) {
    if (r == mpi::rank()) continue;
    Device d;
    d.kind = "MPI";
    d.index = r;
    d.name = "rank " + std::to_string(r);
    d.description = "another process of this MPI job";
    out.push_back(std::move(d));
  }
  return out;
}

Result<std::unique_ptr<Backend>> mpi_create(const Options& o) {
  return std::unique_ptr<Backend>(std::make_unique<RemoteBackend>(o.rank));
}

constexpr Kind kKinds[] = {
    {"CPU", "this machine's cores", cpu_devices, cpu_create},
    {"CUDA", "NVIDIA GPUs", cuda_devices, cuda_create},
    {"MPI", "the other ranks of an MPI job (--mpi)", mpi_devices, mpi_create},
};

bool same_name(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](char x, char y) { return std::tolower(uint8_t(x)) == std::tolower(uint8_t(y)); });
}

}  // namespace

std::span<const Kind> kinds() { return kKinds; }

const Kind* find(std::string_view name) {
  for (const Kind& k : kKinds) {
    if (same_name(k.name, name)) return &k;
  }
  return nullptr;
}

std::string names() {
  std::string out;
  for (const Kind& k : kKinds) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

Result<std::unique_ptr<Backend>> create(std::string_view name, const Options& options) {
  const Kind* k = find(name);
  if (k == nullptr) return Status::error("no backend named '" + std::string(name) + "' (this build has " + names() + ")");
  return k->create(options);
}

Result<std::vector<Device>> devices(std::string_view name) {
  const Kind* k = find(name);
  if (k == nullptr) return Status::error("no backend named '" + std::string(name) + "' (this build has " + names() + ")");
  return k->devices();
}

}  // namespace tessera::backends

namespace tessera {

std::vector<BackendListing> list_backends() {
  std::vector<BackendListing> out;
  for (const backends::Kind& k : backends::kinds()) {
    BackendListing l;
    l.name = k.name;
    l.summary = k.summary;
    Result<std::vector<backends::Device>> found = k.devices();
    if (!found) {
      l.unavailable = found.status().message();
    } else {
      for (const backends::Device& d : *found) {
        l.devices.push_back({d.index, d.name, d.description, d.total_bytes, d.free_bytes});
      }
    }
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace tessera
