#include "ops/cuda_op_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "backend/cpu/cpu_backend.h"
#include "core/fp16.h"
#include "quant/quant.h"

namespace tessera::test {
namespace {

// The elements of t (row-major) from the bytes of the tensor whose memory it is.
std::vector<double> elements(const Tensor* t, const std::vector<uint8_t>& owner_bytes) {
  const uint8_t* base = owner_bytes.data() + (t->view_src ? t->view_offset : 0);
  std::vector<double> out;
  out.reserve(size_t(t->nelements()));
  if (dtype_traits(t->type).block_size == 1) {
    for_each_index(t->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
      out.push_back(load(t->type, base + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3]));
    });
    return out;
  }
  std::vector<float> row(size_t(t->ne[0]));
  for (int64_t i3 = 0; i3 < t->ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < t->ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < t->ne[1]; ++i1) {
        quant::dequantize_rows(t->type, base + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3], row.data(), 1,
                               t->ne[0]);
        out.insert(out.end(), row.begin(), row.end());
      }
    }
  }
  return out;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The first few elements where got and ref differ (beyond `allowed` of |diff|), for messages.
std::string differences(const std::vector<double>& got, const std::vector<double>& ref, double allowed) {
  std::string s;
  int shown = 0;
  for (size_t i = 0; i < got.size() && i < ref.size() && shown < 5; ++i) {
    const bool differ = allowed == 0 ? !same_bits(got[i], ref[i]) : !(std::fabs(got[i] - ref[i]) <= allowed);
    if (!differ) continue;
    char line[128];
    std::snprintf(line, sizeof line, "\n  element %zu: gpu %.9g, cpu %.9g", i, got[i], ref[i]);
    s += line;
    ++shown;
  }
  return s;
}

}  // namespace

Backend& cuda_backend() {
  static Backend* const backend = [] {
    Result<std::unique_ptr<Backend>> b = cuda::make_backend(0);
    if (!b) {
      ADD_FAILURE() << b.status().message();
      std::abort();
    }
    return b->release();
  }();
  return *backend;
}

double nmse_of(const std::vector<double>& got, const std::vector<double>& ref) {
  const double inf = std::numeric_limits<double>::infinity();
  if (got.size() != ref.size()) return inf;
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const bool finite_got = std::isfinite(got[i]), finite_ref = std::isfinite(ref[i]);
    if (!finite_got || !finite_ref) {
      const bool same = (std::isnan(got[i]) && std::isnan(ref[i])) || got[i] == ref[i];
      if (!same) return inf;
      continue;
    }
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  if (den == 0) return num == 0 ? 0 : inf;
  return num / den;
}

CudaOpCase::CudaOpCase(uint64_t seed) : rng_(uint32_t(seed)) {}
CudaOpCase::~CudaOpCase() = default;

std::vector<float> CudaOpCase::uniform(int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng_);
  return v;
}

Tensor* CudaOpCase::add_leaf(DType type, const Shape& ne, std::vector<uint8_t> bytes) {
  Tensor* t = graph_.arena().new_tensor(type, ne);
  t->flags |= kFlagInput;
  EXPECT_EQ(bytes.size(), t->nbytes()) << "cuda op test: leaf bytes";
  leaves_.push_back({t, std::move(bytes)});
  return t;
}

Tensor* CudaOpCase::input_values(DType type, const Shape& ne, const std::vector<float>& values) {
  const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
  EXPECT_EQ(int64_t(values.size()), n);
  std::vector<uint8_t> bytes(dtype_row_size(type, ne[0]) * size_t(n / std::max<int64_t>(ne[0], 1)));
  if (type == DType::F32) {
    std::memcpy(bytes.data(), values.data(), bytes.size());
  } else if (type == DType::F16 || type == DType::BF16) {
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t h = type == DType::F16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  } else if (quant::format(type) != nullptr) {
    quant::quantize_rows(type, values.data(), bytes.data(), n / ne[0], ne[0]);
  } else {
    ADD_FAILURE() << "cuda op test: cannot fill type " << dtype_name(type);
  }
  return add_leaf(type, ne, std::move(bytes));
}

Tensor* CudaOpCase::input(DType type, const Shape& ne, float lo, float hi) {
  return input_values(type, ne, uniform(ne[0] * ne[1] * ne[2] * ne[3], lo, hi));
}

Tensor* CudaOpCase::input(DType type, const Shape& ne, Layout layout, float lo, float hi) {
  const bool quantized = dtype_traits(type).block_size > 1;
  EXPECT_TRUE(!quantized || layout == Layout::Contiguous || layout == Layout::Permuted)
      << "cuda op test: a quantized input " << layout_name(layout);
  return laid_out(graph_, ne, layout, [&](const Shape& s) { return input(type, s, lo, hi); });
}

Tensor* CudaOpCase::ids(const std::vector<int32_t>& ids) {
  std::vector<uint8_t> bytes(ids.size() * 4);
  std::memcpy(bytes.data(), ids.data(), bytes.size());
  return add_leaf(DType::I32, {int64_t(ids.size()), 1, 1, 1}, std::move(bytes));
}

std::vector<double> CudaOpCase::run(Backend& backend, Tensor* out, int times) {
  if (planned_ == nullptr) {
    graph_.expand(out);
    planned_ = out;
  }
  EXPECT_EQ(planned_, out) << "cuda op test: one output per case";
  // Every leaf and every node that is not a view gets its own aligned piece of one buffer.
  std::vector<Tensor*> owners(graph_.leafs().begin(), graph_.leafs().end());
  for (Tensor* n : graph_.nodes()) {
    if (n->view_src == nullptr) owners.push_back(n);
  }
  const size_t align = backend.alignment();
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const Tensor* t : owners) {
    offsets.push_back(total);
    total += (std::max<size_t>(t->nbytes(), 1) + align - 1) / align * align;
  }
  Result<std::unique_ptr<Buffer>> buffer = backend.alloc_buffer(total);
  if (!buffer) {
    ADD_FAILURE() << backend.name() << ": " << buffer.status().message();
    return {};
  }
  for (size_t i = 0; i < owners.size(); ++i) (*buffer)->place(owners[i], offsets[i]);
  for (Tensor* n : graph_.nodes()) {
    if (n->view_src == nullptr) continue;
    n->data = static_cast<char*>(n->view_src->data) + n->view_offset;
    n->buffer = buffer->get();
  }

  const Tensor* result = out->view_src ? out->view_src : out;
  std::vector<double> first;
  for (int run = 0; run < times; ++run) {
    // Leaves get their bytes back (cpy and set_rows write into one); computed tensors are
    // NaN bytes, so that an element no kernel wrote shows.
    for (const Leaf& l : leaves_) backend.set_tensor(l.tensor, l.bytes.data(), 0, l.bytes.size());
    for (Tensor* n : graph_.nodes()) {
      if (n->view_src != nullptr) continue;
      const std::vector<uint8_t> nan(n->nbytes(), 0xff);
      backend.set_tensor(n, nan.data(), 0, nan.size());
    }
    const Status st = backend.compute(graph_);
    if (!st.is_ok()) {
      ADD_FAILURE() << backend.name() << ": " << st.message();
      return {};
    }
    std::vector<uint8_t> bytes(result->nbytes());
    backend.get_tensor(result, bytes.data(), 0, bytes.size());
    std::vector<double> values = elements(out, bytes);
    if (run == 0) {
      first = std::move(values);
    } else {
      const bool same = values.size() == first.size() &&
                        std::memcmp(values.data(), first.data(), values.size() * sizeof(double)) == 0;
      EXPECT_TRUE(same) << backend.name() << ": compute " << run + 1 << " differs from the first"
                        << differences(values, first, 0);
    }
  }
  return first;
}

double CudaOpCase::expect_match(Tensor* out, double max_nmse) {
  if (planned_ == nullptr) {
    graph_.expand(out);
    planned_ = out;
  }
  Backend& gpu = cuda_backend();
  for (const Tensor* n : graph_.nodes()) {
    EXPECT_TRUE(gpu.supports_op(n)) << "the CUDA backend refuses " << op_name(n->op) << " of this case";
  }
  if (::testing::Test::HasFailure()) return 0;
  CpuBackend cpu(2);
  const std::vector<double> want = run(cpu, out, 1);
  const std::vector<double> got = run(gpu, out, 3);
  if (::testing::Test::HasFailure()) return 0;
  const double e = nmse_of(got, want);
  if (max_nmse == 0) {
    const bool same = got.size() == want.size() &&
                      std::memcmp(got.data(), want.data(), got.size() * sizeof(double)) == 0;
    EXPECT_TRUE(same) << op_name(out->op) << ": GPU and CPU bits differ (NMSE " << e << ")"
                      << differences(got, want, 0);
  } else {
    double largest = 0;
    for (size_t i = 0; i < want.size(); ++i) largest = std::max(largest, std::fabs(want[i]));
    EXPECT_LE(e, max_nmse) << op_name(out->op) << ": NMSE of the GPU against the CPU"
                           << differences(got, want, 1e-3 * largest);
  }
  return e;
}

}  // namespace tessera::test
