// Reference quantization against real files of the ecosystem (shared/models): every
// quantized tensor of mini-llama-<TYPE>.gguf dequantizes close to the same tensor of
// mini-llama-f16.gguf, and quantizing the f16 tensor with our reference quantizer
// reproduces the file's blocks (the fraction of identical blocks is reported per type).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "quant/quant.h"
#include "tessera/dtype.h"
#include "tessera/gguf.h"
#include "quant/convert.h"

namespace tessera::quant {
namespace {

const char* const kFileTypes[] = {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
                                  "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"};

// Relative RMSE bound of a dequantized tensor against its f16 original (the weights are
// random; the bounds are those of the Gaussian round-trip test).
double error_bound(DType t) {
  switch (t) {
    case DType::Q4_0:
      return 0.11;
    case DType::Q4_1:
      return 0.10;
    case DType::Q5_0:
      return 0.055;
    case DType::Q5_1:
      return 0.05;
    case DType::Q8_0:
      return 0.0075;
    case DType::Q2_K:
      return 0.36;
    case DType::Q3_K:
      return 0.19;
    case DType::Q4_K:
      return 0.09;
    case DType::Q5_K:
      return 0.045;
    case DType::Q6_K:
      return 0.023;
    default:
      return 0.0;
  }
}

// The fraction of identical blocks we assert per type. Measured (GCC 12 and clang,
// with and without -march=native): 1.0 for every type; the margin leaves room for a
// compiler that rounds differently somewhere.
double identical_bound(DType) { return 0.99; }

struct Tally {
  int64_t identical = 0;
  int64_t blocks = 0;
  double max_error = 0;  // largest relative RMSE of a tensor of the type
};

std::unique_ptr<gguf::File> open_or_fail(const std::string& path) {
  auto f = gguf::File::open(path);
  EXPECT_TRUE(f.is_ok()) << f.status().message();
  return f.is_ok() ? std::move(*f) : nullptr;
}

std::vector<float> to_floats(const gguf::TensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  const int64_t n0 = t.ne[0];
  const size_t row_bytes = dtype_row_size(t.type, n0);
  for (int64_t r = 0; r < t.n_elements() / n0; ++r) {
    quant::to_float_fn(t.type)(t.data + size_t(r) * row_bytes, v.data() + r * n0, n0);
  }
  return v;
}

double relative_rmse(const std::vector<float>& ref, const std::vector<float>& y) {
  double err = 0;
  double sum = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    err += (double(y[i]) - ref[i]) * (double(y[i]) - ref[i]);
    sum += double(ref[i]) * ref[i];
  }
  return std::sqrt(err / sum);
}

// Checks one quantized tensor against its f16 original and tallies identical blocks.
void check_tensor(const gguf::TensorInfo& q, const gguf::TensorInfo& f16, Tally& tally) {
  const Format* fmt = format(q.type);
  ASSERT_NE(fmt, nullptr);
  ASSERT_EQ(q.ne, f16.ne) << q.name;
  const std::vector<float> ref = to_floats(f16);
  const double err = relative_rmse(ref, to_floats(q));
  EXPECT_LT(err, error_bound(q.type)) << q.name << " (" << dtype_name(q.type) << ")";
  tally.max_error = std::max(tally.max_error, err);

  const int64_t n0 = q.ne[0];
  const int64_t rows = q.n_elements() / n0;
  std::vector<uint8_t> mine(size_t(q.nbytes));
  EXPECT_EQ(quantize_rows(q.type, ref.data(), mine.data(), rows, n0), size_t(q.nbytes));
  const size_t bs = dtype_traits(q.type).type_size;
  for (size_t off = 0; off + bs <= mine.size(); off += bs) {
    tally.identical += std::memcmp(mine.data() + off, q.data + off, bs) == 0;
    ++tally.blocks;
  }
}

TEST(QuantFiles, DequantizeAndRequantizeMatchFiles) {
  TESSERA_REQUIRE_SHARED(f16_path, "models/mini-llama-f16.gguf");
  const std::unique_ptr<gguf::File> f16 = open_or_fail(f16_path);
  ASSERT_NE(f16, nullptr);
  std::map<DType, Tally> tallies;
  int files = 0;
  for (const char* type : kFileTypes) {
    const std::string path = test::shared_file(std::string("models/mini-llama-") + type + ".gguf");
    if (path.empty()) continue;
    const std::unique_ptr<gguf::File> file = open_or_fail(path);
    ASSERT_NE(file, nullptr);
    ++files;
    for (const gguf::TensorInfo& t : file->tensors()) {
      if (format(t.type) == nullptr) continue;  // norms stay F32
      const gguf::TensorInfo* orig = f16->find_tensor(t.name);
      ASSERT_NE(orig, nullptr) << t.name;
      SCOPED_TRACE(std::string(type) + ": " + t.name);
      check_tensor(t, *orig, tallies[t.type]);
    }
  }
  if (files == 0) GTEST_SKIP() << "no quantized mini-llama files";
  for (const auto& [t, tally] : tallies) {
    const double frac = double(tally.identical) / double(tally.blocks);
    std::printf(
        "  %-5s identical blocks %7lld / %7lld = %.4f, max relative RMSE %.5f (bound %.4f)\n",
        std::string(dtype_name(t)).c_str(), static_cast<long long>(tally.identical),
        static_cast<long long>(tally.blocks), frac, tally.max_error, error_bound(t));
    RecordProperty("identical_blocks_" + std::string(dtype_name(t)), std::to_string(frac));
    EXPECT_GE(frac, identical_bound(t)) << dtype_name(t);
  }
}

}  // namespace
}  // namespace tessera::quant
