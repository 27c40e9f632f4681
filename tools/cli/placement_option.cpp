// Where the layers run: -ngl / --device (the GPU), --layers (CPU backend instances in
// this process) and --mpi / --mpi-layers (the ranks of an mpirun job), shared by run,
// chat, perplexity, bench and serve. main.cpp starts MPI when --mpi is given, before any of this.
#include <cstdio>

#include "commands.h"
#include "tessera/devices.h"

namespace tessera::cli {
namespace {

// llama.cpp's --list-devices: every backend of this build, its devices or why it has none.
void print_devices() {
  for (const BackendListing& b : list_backends()) {
    std::printf("%s (%s):\n", b.name.c_str(), b.summary.c_str());
    if (b.devices.empty()) std::printf("  none: %s\n", b.unavailable.c_str());
    for (const DeviceDesc& d : b.devices) {
      std::printf("  %d: %s", d.index, d.name.c_str());
      if (!d.description.empty()) std::printf(", %s", d.description.c_str());
      if (d.total_bytes > 0) {
        std::printf(", %.0f MiB (%.0f MiB free)", double(d.total_bytes) / (1 << 20), double(d.free_bytes) / (1 << 20));
      }
      std::printf("\n");
    }
  }
  std::fflush(stdout);
}

}  // namespace

void add_placement_options(CLI::App* cmd, PlacementOptions& o) {
  cmd->add_option("--n-gpu-layers", o.n_gpu_layers,  // also -ngl (main.cpp)
                  "-ngl N: offload the last N layers (weights and KV cache) to the GPU, the output too when N exceeds the "
                  "layer count (99: all); needs a build with TESSERA_CUDA=ON")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag_callback(
      "--list-devices", [] {
        print_devices();
        throw CLI::Success();  // exit 0, as --help
      },
      "list the backends of this build and their devices (the CUDA index is --device's), then exit");
  cmd->add_option("--device", o.device, "the CUDA device -ngl offloads to (default 0; --list-devices lists them)")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--layers", o.layers,
                  "split the layers between CPU backend instances, RANGE:NAME,... (e.g. 0-10:a,11-21:b): each "
                  "name gets its layers' weights and KV cache, its own buffers and a share of the threads; the "
                  "scheduler copies what crosses (TESSERA_SCHED_DEBUG=1 prints the splits)")
      ->type_name("SPEC");
  cmd->add_flag("--mpi", o.mpi,
                "run across the ranks of an MPI job (mpirun -n R tessera ... --mpi): each rank maps and computes "
                "a contiguous range of layers, rank 0 tokenizes, samples and prints");
  cmd->add_option("--mpi-layers", o.mpi_layers,
                  "layers per rank with --mpi, comma-separated (e.g. 11,11); default: in proportion to each rank's "
                  "free memory")
      ->delimiter(',')
      ->type_name("N,N,...");
}

void apply_placement(const PlacementOptions& o, ModelParams& params) {
  params.layers = o.layers;
  params.mpi = o.mpi;
  params.mpi_layers = o.mpi_layers;
  params.n_gpu_layers = o.n_gpu_layers;
  params.device = o.device;
}

}  // namespace tessera::cli
