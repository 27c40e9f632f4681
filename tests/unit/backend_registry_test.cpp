// The backend registry: every kind by name, its devices (or why none), its factory; and
// `--list-devices`, which prints them.
#include <gtest/gtest.h>

#include <string>

#include "backend/cuda/cuda.h"
#include "backend/registry.h"
#include "common/cli_run.h"
#include "tessera/devices.h"

namespace tessera {
namespace {

TEST(BackendRegistry, KnowsEveryKindByNameInAnyCase) {
  EXPECT_EQ(backends::names(), "CPU, CUDA, MPI");
  ASSERT_NE(backends::find("cpu"), nullptr);
  EXPECT_EQ(backends::find("cpu")->name, "CPU");
  EXPECT_EQ(backends::find("Cuda")->name, "CUDA");
  EXPECT_EQ(backends::find("vulkan"), nullptr);
}

TEST(BackendRegistry, MakesACpuBackendWithItsThreadsAndName) {
  backends::Options o;
  o.n_threads = 2;
  o.label = "CPU a";
  Result<std::unique_ptr<Backend>> b = backends::create("CPU", o);
  ASSERT_TRUE(b) << b.status().message();
  EXPECT_EQ((*b)->name(), "CPU a");
  EXPECT_TRUE((*b)->host_memory());
  Result<std::unique_ptr<Buffer>> buf = (*b)->alloc_buffer(1024);
  ASSERT_TRUE(buf) << buf.status().message();
  EXPECT_GE((*buf)->size(), 1024u);
}

TEST(BackendRegistry, AnUnknownKindIsRefusedListingTheKnownOnes) {
  Result<std::unique_ptr<Backend>> b = backends::create("vulkan", backends::Options{});
  ASSERT_FALSE(b);
  EXPECT_EQ(b.status().message(), "no backend named 'vulkan' (this build has CPU, CUDA, MPI)");
  EXPECT_FALSE(backends::devices("vulkan"));
}

TEST(BackendRegistry, EachKindListsItsDevicesOrSaysWhyNone) {
  Result<std::vector<backends::Device>> cpu = backends::devices("CPU");
  ASSERT_TRUE(cpu) << cpu.status().message();
  ASSERT_EQ(cpu->size(), 1u);
  EXPECT_FALSE((*cpu)[0].name.empty());
  EXPECT_NE((*cpu)[0].description.find("threads"), std::string::npos);
  if (!cuda::built()) {
    Result<std::vector<backends::Device>> gpus = backends::devices("CUDA");
    ASSERT_FALSE(gpus);
    EXPECT_NE(gpus.status().message().find("-DTESSERA_CUDA=ON"), std::string::npos);
    EXPECT_FALSE(backends::create("CUDA", backends::Options{}));
  }
  // One process, not started by mpirun with several ranks: no other rank to run on.
  EXPECT_FALSE(backends::devices("MPI"));
}

TEST(BackendRegistry, ListDevicesPrintsEveryKind) {
  const test::CliOutput o = test::run_tessera("run --list-devices");
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("CPU (this machine's cores):\n  0: "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("CUDA (NVIDIA GPUs):\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("MPI ("), std::string::npos) << o.out;
  for (const BackendListing& b : list_backends()) {
    if (b.devices.empty()) {
      EXPECT_NE(o.out.find("  none: " + b.unavailable), std::string::npos) << o.out;
    }
  }
  EXPECT_EQ(test::run_tessera("serve --list-devices").status, 0);
}

}  // namespace
}  // namespace tessera
