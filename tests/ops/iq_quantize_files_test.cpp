// The grid i-quant quantizers against the reference quantizer's files (shared/models):
// every tensor that a mini-llama-<TYPE>.gguf stores in IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S, IQ1_S or IQ1_M is quantized again from mini-llama-f16.gguf with the importance
// matrix the reference was given (mini-llama.imatrix; tensors it has no entry for were
// quantized without one, and are here too). Per tensor: the fraction of blocks identical
// to the file's (the searches are the reference's, float operations in its order), and
// the importance-weighted squared error of ours and of the file's against the f16
// weights; ours must be within 1.1x of the reference's.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "quant/convert.h"
#include "quant/imatrix_file.h"
#include "quant/iq_quantize.h"
#include "quant/quant.h"
#include "tessera/dtype.h"
#include "tessera/gguf.h"

namespace tessera::quant {
namespace {

struct IqQuantizer {
  DType type;
  QuantizeFn plain;
  QuantizeWeightedFn weighted;
};

constexpr IqQuantizer kQuantizers[] = {
    {DType::IQ2_XXS, quantize_iq2_xxs, quantize_iq2_xxs_weighted},
    {DType::IQ2_XS, quantize_iq2_xs, quantize_iq2_xs_weighted},
    {DType::IQ2_S, quantize_iq2_s, quantize_iq2_s_weighted},
    {DType::IQ3_XXS, quantize_iq3_xxs, quantize_iq3_xxs_weighted},
    {DType::IQ3_S, quantize_iq3_s, quantize_iq3_s_weighted},
    {DType::IQ1_S, quantize_iq1_s, quantize_iq1_s_weighted},
    {DType::IQ1_M, quantize_iq1_m, quantize_iq1_m_weighted},
};

const IqQuantizer* quantizer(DType t) {
  for (const IqQuantizer& q : kQuantizers) {
    if (q.type == t) return &q;
  }
  return nullptr;
}

const char* const kFileTypes[] = {"IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS",
                                  "IQ2_S",   "IQ1_S", "IQ1_M"};

std::vector<float> to_floats(const gguf::TensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  const int64_t n0 = t.ne[0];
  const size_t row_bytes = dtype_row_size(t.type, n0);
  for (int64_t r = 0; r < t.n_elements() / n0; ++r) {
    to_float_fn(t.type)(t.data + size_t(r) * row_bytes, v.data() + r * n0, n0);
  }
  return v;
}

// sum over elements of importance[column] * (y - ref)^2 (importance 1 where none).
double weighted_error(const std::vector<float>& ref, const std::vector<float>& y, int64_t n0,
                      const std::vector<float>& importance) {
  double err = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double w = importance.empty() ? 1.0 : importance[i % size_t(n0)];
    err += w * (double(y[i]) - ref[i]) * (double(y[i]) - ref[i]);
  }
  return err;
}

struct Row {
  std::string file, name, type;
  bool weighted;
  double identical, ours, reference;
};

TEST(IqQuantizeFiles, MatchesReferenceQuantizer) {
  TESSERA_REQUIRE_SHARED(f16_path, "models/mini-llama-f16.gguf");
  TESSERA_REQUIRE_SHARED(imatrix_path, "models/mini-llama.imatrix");
  auto f16 = gguf::File::open(f16_path);
  ASSERT_TRUE(f16.is_ok()) << f16.status().message();
  auto imatrix = read_imatrix(imatrix_path);
  ASSERT_TRUE(imatrix.is_ok()) << imatrix.status().message();

  std::vector<Row> rows;
  std::set<std::pair<DType, std::string>> seen;  // a tensor recurs across files
  for (const char* file_type : kFileTypes) {
    const std::string path =
        test::shared_file(std::string("models/mini-llama-") + file_type + ".gguf");
    if (path.empty()) continue;
    auto file = gguf::File::open(path);
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    for (const gguf::TensorInfo& t : (*file)->tensors()) {
      const IqQuantizer* q = quantizer(t.type);
      if (q == nullptr || !seen.insert({t.type, t.name}).second) continue;
      SCOPED_TRACE(std::string(file_type) + ": " + t.name);
      const gguf::TensorInfo* orig = (*f16)->find_tensor(t.name);
      ASSERT_NE(orig, nullptr);
      ASSERT_EQ(orig->ne, t.ne);
      const std::vector<float> ref = to_floats(*orig);
      const ImatrixEntry* entry = imatrix->find(t.name);
      const std::vector<float> importance = entry ? entry->importance() : std::vector<float>{};
      const int64_t n0 = t.ne[0];
      const int64_t n_rows = t.n_elements() / n0;
      ASSERT_TRUE(importance.empty() || int64_t(importance.size()) == n0);
      const size_t row_bytes = dtype_row_size(t.type, n0);
      ASSERT_EQ(size_t(t.nbytes), row_bytes * size_t(n_rows));
      std::vector<uint8_t> mine(size_t(t.nbytes));
      for (int64_t r = 0; r < n_rows; ++r) {
        const float* src = ref.data() + r * n0;
        uint8_t* dst = mine.data() + size_t(r) * row_bytes;
        if (entry) {
          q->weighted(src, dst, n0, importance.data());
        } else {
          q->plain(src, dst, n0);
        }
      }
      const size_t bs = dtype_traits(t.type).type_size;
      int64_t same = 0;
      for (size_t off = 0; off < mine.size(); off += bs) {
        same += std::memcmp(mine.data() + off, t.data + off, bs) == 0;
      }
      Row row{file_type, t.name, std::string(dtype_name(t.type)), entry != nullptr, 0, 0, 0};
      row.identical = double(same) / double(mine.size() / bs);
      // Measured 1.0 for every tensor (GCC 12); the margin leaves room for a compiler that
      // rounds differently somewhere.
      EXPECT_GE(row.identical, 0.99);
      const Format* fmt = format(t.type);
      if (fmt == nullptr || fmt->dequantize == nullptr) {
        ADD_FAILURE() << dtype_name(t.type) << " has no dequantization to measure errors with";
      } else {
        std::vector<float> ours(ref.size()), theirs(ref.size());
        dequantize_rows(t.type, mine.data(), ours.data(), n_rows, n0);
        dequantize_rows(t.type, t.data, theirs.data(), n_rows, n0);
        row.ours = weighted_error(ref, ours, n0, importance);
        row.reference = weighted_error(ref, theirs, n0, importance);
        EXPECT_LE(row.ours, 1.1 * row.reference);
      }
      rows.push_back(row);
    }
  }
  if (rows.empty()) GTEST_SKIP() << "no i-quant mini-llama files";
  std::printf("  %-8s %-8s %-24s %-8s %10s %12s %12s %7s\n", "file", "type", "tensor", "imatrix",
              "identical", "err ours", "err ref", "ratio");
  for (const Row& r : rows) {
    std::printf("  %-8s %-8s %-24s %-8s %10.4f %12.5g %12.5g %7.4f\n", r.file.c_str(),
                r.type.c_str(), r.name.c_str(), r.weighted ? "yes" : "no", r.identical, r.ours,
                r.reference, r.reference > 0 ? r.ours / r.reference : 0.0);
  }
}

}  // namespace
}  // namespace tessera::quant
