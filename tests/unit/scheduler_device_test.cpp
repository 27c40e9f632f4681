// A backend that cannot read host memory (a GPU) gets its own copies of the host leafs
// its nodes read (graph inputs, views of them, weights read in place), copied from the
// home backend. Checked without a GPU by a CPU backend that says its memory is not the
// host's: the plan must copy each such leaf once, and the results match one backend.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/scheduler.h"
#include "core/ops.h"

namespace tessera {
namespace {

class NotHostMemory final : public Backend {
 public:
  std::string_view name() const override { return "device"; }
  bool host_memory() const override { return false; }
  Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override { return cpu_.alloc_buffer(size); }
  size_t alignment() const override { return cpu_.alignment(); }
  void set_tensor_async(Tensor* t, const void* d, size_t o, size_t n) override { cpu_.set_tensor_async(t, d, o, n); }
  void get_tensor_async(const Tensor* t, void* d, size_t o, size_t n) override { cpu_.get_tensor_async(t, d, o, n); }
  void synchronize() override {}
  bool supports_op(const Tensor* node) const override { return cpu_.supports_op(node); }
  Status compute(const Graph& graph) override { return cpu_.compute(graph); }

 private:
  CpuBackend cpu_{1};
};

struct Net {
  Graph g;
  Tensor* x = nullptr;       // input [8, 4]
  Tensor* w_dev = nullptr;   // weight placed on the device [8, 8]
  Tensor* w_host = nullptr;  // weight read in place [8, 8]
  Tensor* out = nullptr;
  std::vector<float> w_dev_data, w_host_data;

  Net() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1, 1);
    x = g.arena().new_tensor(DType::F32, {8, 4, 1, 1}, "x");
    x->flags |= kFlagInput;
    w_dev = g.arena().new_tensor(DType::F32, {8, 8, 1, 1}, "w_dev");
    w_host = g.arena().new_tensor(DType::F32, {8, 8, 1, 1}, "w_host");
    for (int i = 0; i < 64; ++i) w_dev_data.push_back(u(rng)), w_host_data.push_back(u(rng));
    w_dev->data = w_dev_data.data();
    w_host->data = w_host_data.data();
    // The device multiplies by its weight, then by the host's weight, adds the input's
    // first two columns (a view of the input) and normalises.
    Tensor* h = ops::mul_mat(g, w_dev, x);
    Tensor* h2 = ops::mul_mat(g, w_host, h);
    Tensor* cols = ops::view(g, x, {8, 2, 1, 1}, x->nb, 0);
    Tensor* sum = ops::add(g, ops::view(g, h2, {8, 2, 1, 1}, h2->nb, 0), cols);
    out = ops::rms_norm(g, ops::cont(g, sum), 1e-5f);
    out->flags |= kFlagOutput;
    g.expand(out);
  }
};

std::vector<float> run(std::vector<Backend*> backends, bool device_weight, int64_t* copies) {
  Net net;
  Scheduler sched(backends, [&](const Tensor* t) { return device_weight && t == net.w_dev ? 1 : kAnyBackend; });
  std::unique_ptr<SchedGraph> sg = sched.plan(net.g);
  if (copies) *copies = sg->n_copies();
  sched.place(*sg);
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[size_t(i)] = float(i % 7) * 0.25f - 0.5f;
  net.x->buffer->backend().set_tensor(net.x, x.data(), 0, x.size() * 4);
  EXPECT_TRUE(sched.compute(*sg).is_ok());
  std::vector<float> out(16);
  EXPECT_TRUE(sched.get_output_async(*sg, net.out, out.data(), out.size() * 4).is_ok());
  EXPECT_TRUE(sched.synchronize().is_ok());
  return out;
}

TEST(SchedulerDevice, HostLeafsAreCopiedToADeviceOnceEach) {
  CpuBackend cpu(1), home(1);
  NotHostMemory device;
  const std::vector<float> want = run({&cpu}, false, nullptr);
  int64_t copies = 0;
  const std::vector<float> got = run({&home, &device}, true, &copies);
  EXPECT_EQ(got, want);
  // x (for the matmul and, re-viewed, for the add) and w_host: one copy each; the
  // result comes back through get_output_async.
  EXPECT_EQ(copies, 2);
}

TEST(SchedulerDevice, AHostBackendReadsTheSameLeafsInPlace) {
  CpuBackend home(1), other(1);
  int64_t copies = 0;
  run({&home, &other}, true, &copies);
  EXPECT_EQ(copies, 0);  // a host-memory backend needs no copy of inputs or host weights
}

}  // namespace
}  // namespace tessera
