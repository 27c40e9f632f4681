// The GPU's memory bandwidth, the roofline of a decode step (every weight read once a
// token): a device-to-device cudaMemcpy of 4 GiB and a read-only kernel summing a 4 GiB
// buffer, each the best of 5 timed runs (CUDA events) after a warm-up. Stand-alone (no
// tessera code); built with TESSERA_CUDA and TESSERA_BENCH as tessera_cuda_bandwidth.
//
//   tessera_cuda_bandwidth [--device N] [--gib G]
//
// GB are 10^9 bytes. The copy is reported twice: bytes copied per second, and bytes moved
// (read + written) per second, which is what a vendor's copy figure usually counts.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kRuns = 5;
constexpr int kThreads = 256;

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "tessera_cuda_bandwidth: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

// Sums n 16-byte vectors (grid-stride, one block partial per block); the sum is written so
// that the loads cannot be dropped.
__global__ void read_kernel(const float4* __restrict__ x, size_t n, float* partial) {
  float s = 0.0f;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float4 v = x[i];
    s += (v.x + v.y) + (v.z + v.w);
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  __shared__ float warp_sums[kThreads / 32];
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int w = 0; w < kThreads / 32; ++w) t += warp_sums[w];
    partial[blockIdx.x] = t;
  }
}

// The best (shortest) of kRuns timings of f, in milliseconds, after one warm-up run; a
// negative value when a CUDA call failed.
template <typename F>
float best_ms(F f) {
  cudaEvent_t start, stop;
  if (!ok(cudaEventCreate(&start), "cudaEventCreate") || !ok(cudaEventCreate(&stop), "cudaEventCreate")) return -1;
  float best = -1;
  if (f()) {
    for (int r = 0; r < kRuns; ++r) {
      cudaEventRecord(start);
      if (!f()) {
        best = -1;
        break;
      }
      cudaEventRecord(stop);
      if (!ok(cudaEventSynchronize(stop), "cudaEventSynchronize")) {
        best = -1;
        break;
      }
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      if (best < 0 || ms < best) best = ms;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  double gib = 4.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--device") == 0) {
      device = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--gib") == 0) {
      gib = std::atof(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: tessera_cuda_bandwidth [--device N] [--gib G]\n");
      return 2;
    }
  }
  int count = 0;
  if (!ok(cudaGetDeviceCount(&count), "cudaGetDeviceCount")) return 1;
  if (device < 0 || device >= count) {
    std::fprintf(stderr, "tessera_cuda_bandwidth: no device %d (%d found)\n", device, count);
    return 1;
  }
  cudaDeviceProp prop{};
  if (!ok(cudaSetDevice(device), "cudaSetDevice") || !ok(cudaGetDeviceProperties(&prop, device), "properties"))
    return 1;
  std::printf("device %d: %s, compute capability %d.%d, %d SMs, %.1f GiB\n", device, prop.name, prop.major,
              prop.minor, prop.multiProcessorCount, double(prop.totalGlobalMem) / double(1u << 30));

  const size_t bytes = size_t(gib * double(size_t(1) << 30)) / 16 * 16;
  void* src = nullptr;
  void* dst = nullptr;
  float* partial = nullptr;
  const int blocks = prop.multiProcessorCount * 8;
  if (!ok(cudaMalloc(&src, bytes), "cudaMalloc (source)") || !ok(cudaMalloc(&dst, bytes), "cudaMalloc (copy)") ||
      !ok(cudaMalloc(&partial, size_t(blocks) * sizeof(float)), "cudaMalloc (sums)") ||
      !ok(cudaMemset(src, 0x3c, bytes), "cudaMemset") || !ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize"))
    return 1;

  const float copy_ms =
      best_ms([&] { return ok(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy"); });
  const float read_ms = best_ms([&] {
    read_kernel<<<blocks, kThreads>>>(static_cast<const float4*>(src), bytes / 16, partial);
    return ok(cudaGetLastError(), "read_kernel");
  });
  cudaFree(src);
  cudaFree(dst);
  cudaFree(partial);
  if (copy_ms <= 0 || read_ms <= 0) return 1;
  const double gb = double(bytes) / 1e9;
  std::printf("buffer: %.2f GiB, best of %d runs\n", double(bytes) / double(1u << 30), kRuns);
  std::printf("device-to-device copy: %8.3f ms  %7.1f GB/s copied  %7.1f GB/s read + written\n", copy_ms,
              gb / (copy_ms / 1e3), 2 * gb / (copy_ms / 1e3));
  std::printf("read-only kernel:      %8.3f ms  %7.1f GB/s read\n", read_ms, gb / (read_ms / 1e3));
  return 0;
}
