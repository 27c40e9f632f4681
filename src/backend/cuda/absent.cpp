// The CUDA backend's entry points in a build without it (TESSERA_CUDA=OFF): every
// request for a GPU is answered with an error that says how to get one.
#include "backend/cuda/cuda.h"

namespace tessera::cuda {
namespace {
constexpr const char* kNotBuilt =
    "this build of tessera has no CUDA backend: configure with -DTESSERA_CUDA=ON (CUDA toolkit needed)";
}  // namespace

bool built() { return false; }
Result<std::vector<DeviceInfo>> devices() { return Status::error(kNotBuilt); }
Result<std::unique_ptr<Backend>> make_backend(int device) { return Status::error(kNotBuilt); }
std::string unavailable_reason() { return kNotBuilt; }

}  // namespace tessera::cuda
