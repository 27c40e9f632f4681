// IQ4_NL and IQ4_XS (src/quant/iq4.cpp) beyond the generic round trips of
// quant_reference_test.cpp:
//  - hand-made blocks pin down the layouts of blocks.h (nibble order, the 6-bit IQ4_XS
//    scales split over scales_l and scales_h);
//  - quantizing with importance values lowers the importance-weighted error against
//    quantizing without them;
//  - the ecosystem's files (shared/models/mini-llama-IQ4_*.gguf, made from
//    mini-llama-f16.gguf with mini-llama.imatrix) are reproduced block for block from the
//    f16 tensors with the file's importance values (token_embd has none: the plain search).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/convert.h"
#include "quant/iq_tables.h"
#include "quant/quant.h"
#include "tessera/gguf.h"

namespace tessera::quant {
namespace {

TEST(Iq4Quant, NlLayout) {
  BlockIQ4_NL b{};
  b.d = f32_to_f16(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | ((15 - j) << 4));
  float y[32];
  dequantize_iq4_nl(&b, y, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * kIq4nlValues[j]);
    EXPECT_EQ(y[j + 16], 0.5f * kIq4nlValues[15 - j]);
  }
}

TEST(Iq4Quant, XsLayout) {
  BlockIQ4_XS b{};
  b.d = f32_to_f16(0.25f);
  // Sub-block s gets the 6-bit scale 7 s + 9 (9..58): low nibble in scales_l[s / 2]
  // (low half for even s), top two bits at bit 2 s of scales_h.
  for (int s = 0; s < 8; ++s) {
    const int ls = 7 * s + 9;
    b.scales_l[s / 2] = uint8_t(b.scales_l[s / 2] | (ls & 15) << (4 * (s % 2)));
    b.scales_h = uint16_t(b.scales_h | (ls >> 4) << (2 * s));
  }
  for (int i = 0; i < QK_K / 2; ++i) b.qs[i] = uint8_t((i % 16) | ((i / 16 % 16) << 4));
  float y[QK_K];
  dequantize_iq4_xs(&b, y, QK_K);
  for (int s = 0; s < 8; ++s) {
    const float dl = 0.25f * float(7 * s + 9 - 32);
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(y[32 * s + j], dl * kIq4nlValues[j]) << s << " " << j;
      EXPECT_EQ(y[32 * s + 16 + j], dl * kIq4nlValues[s]) << s << " " << j;
    }
  }
}

// sum_i w_i (x_i - y_i)^2 over a row.
double weighted_error(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& w) {
  double e = 0;
  for (size_t i = 0; i < x.size(); ++i) e += double(w[i % w.size()]) * (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
  return e;
}

TEST(Iq4Quant, ImportanceLowersWeightedError) {
  for (DType t : {DType::IQ4_NL, DType::IQ4_XS}) {
    const int64_t n = 4096;
    std::mt19937 rng(5);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::exponential_distribution<float> imp(1.0f);
    std::vector<float> w(static_cast<size_t>(n));
    for (float& v : w) v = imp(rng) * imp(rng);  // a few columns matter much more
    double plain = 0, weighted = 0;
    for (int row = 0; row < 32; ++row) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = dist(rng);
      std::vector<uint8_t> q(dtype_row_size(t, n));
      std::vector<float> y(x.size());
      quantize_rows(t, x.data(), q.data(), 1, n, nullptr);
      dequantize_rows(t, q.data(), y.data(), 1, n);
      plain += weighted_error(x, y, w);
      quantize_rows(t, x.data(), q.data(), 1, n, w.data());
      dequantize_rows(t, q.data(), y.data(), 1, n);
      weighted += weighted_error(x, y, w);
    }
    std::printf("  %s weighted error: plain %.2f, with importance %.2f\n", std::string(dtype_name(t)).c_str(), plain,
                weighted);
    EXPECT_LT(weighted, 0.95 * plain) << dtype_name(t);
  }
}

// The reference imatrix file (legacy format: entries of name, ncall, values; the values are
// sums over ncall calls, as the reference quantizer reads them).
std::map<std::string, std::vector<float>> read_imatrix(const std::string& path) {
  std::map<std::string, std::vector<float>> m;
  std::ifstream in(path, std::ios::binary);
  int32_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 4);
  for (int32_t i = 0; i < n && in; ++i) {
    int32_t len = 0, ncall = 0, nval = 0;
    in.read(reinterpret_cast<char*>(&len), 4);
    std::string name(size_t(len), '\0');
    in.read(name.data(), len);
    in.read(reinterpret_cast<char*>(&ncall), 4);
    in.read(reinterpret_cast<char*>(&nval), 4);
    std::vector<float> v(static_cast<size_t>(nval));
    in.read(reinterpret_cast<char*>(v.data()), std::streamsize(nval) * 4);
    if (ncall > 0) {
      for (float& x : v) x /= float(ncall);
    }
    m[name] = std::move(v);
  }
  EXPECT_TRUE(in.good()) << path;
  return m;
}

TEST(Iq4Quant, ReproducesTheReferenceFiles) {
  TESSERA_REQUIRE_SHARED(f16_path, "models/mini-llama-f16.gguf");
  TESSERA_REQUIRE_SHARED(imatrix_path, "models/mini-llama.imatrix");
  auto f16 = gguf::File::open(f16_path);
  ASSERT_TRUE(f16.is_ok()) << f16.status().message();
  const auto imatrix = read_imatrix(imatrix_path);
  for (const char* type : {"IQ4_NL", "IQ4_XS"}) {
    TESSERA_REQUIRE_SHARED(path, std::string("models/mini-llama-") + type + ".gguf");
    auto file = gguf::File::open(path);
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    int64_t identical = 0, blocks = 0, tensors = 0;
    for (const gguf::TensorInfo& t : (*file)->tensors()) {
      if (t.type != DType::IQ4_NL && t.type != DType::IQ4_XS) continue;
      const gguf::TensorInfo* orig = (*f16)->find_tensor(t.name);
      ASSERT_NE(orig, nullptr) << t.name;
      const int64_t n0 = t.ne[0];
      const int64_t rows = t.n_elements() / n0;
      std::vector<float> x(static_cast<size_t>(t.n_elements()));
      const size_t in_row = dtype_row_size(orig->type, n0);
      for (int64_t r = 0; r < rows; ++r) to_float_fn(orig->type)(orig->data + size_t(r) * in_row, x.data() + r * n0, n0);
      const auto it = imatrix.find(t.name);
      std::vector<uint8_t> mine(t.nbytes);
      quantize_rows(t.type, x.data(), mine.data(), rows, n0, it != imatrix.end() ? it->second.data() : nullptr);
      const size_t bs = dtype_traits(t.type).type_size;
      for (size_t off = 0; off < mine.size(); off += bs) {
        identical += std::memcmp(mine.data() + off, t.data + off, bs) == 0;
        ++blocks;
      }
      ++tensors;
    }
    std::printf("  %s: %lld tensors, identical blocks %lld / %lld\n", type, static_cast<long long>(tensors),
                static_cast<long long>(identical), static_cast<long long>(blocks));
    EXPECT_GT(tensors, 0) << type;
    // Measured: every block. The margin leaves room for a compiler that rounds differently.
    EXPECT_GE(double(identical), 0.99 * double(blocks)) << type;
  }
}

}  // namespace
}  // namespace tessera::quant
