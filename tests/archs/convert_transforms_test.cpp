// The converter's value transforms (src/convert/transforms.cpp) against the tests' own
// inverses of the reference's rules (convert_hf_inverse.h), on random values of odd sizes,
// including the shapes the shared models do not reach (Falcon with several key/value
// groups, whose one-group files make the regrouping an identity).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "convert/transforms.h"
#include "convert_hf_inverse.h"

namespace tessera {
namespace {

using convert::TensorPlan;
using convert::Transform;

/// A GGUF tensor of `rows` rows of `cols` random F32 values (1-D when cols is 1).
struct Tensor {
  std::vector<float> values;
  gguf::TensorInfo info;
};

Tensor random_tensor(int64_t cols, int64_t rows, uint32_t seed) {
  Tensor t;
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  t.values.resize(size_t(cols * rows));
  for (float& x : t.values) x = dist(rng);
  const bool flat = cols == 1;
  t.info = {"blk.0.attn_qkv.weight", DType::F32, flat ? 1 : 2, {flat ? rows : cols, flat ? 1 : rows, 1, 1}, 0,
            t.values.size() * 4, reinterpret_cast<const uint8_t*>(t.values.data())};
  return t;
}

std::vector<float> floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

TensorPlan plan(const Tensor& t, Transform transform, int64_t heads, int64_t heads_kv = 0) {
  TensorPlan p;
  p.name = t.info.name;
  p.shape = t.info.n_dims == 1 ? std::vector<int64_t>{t.info.ne[0]} : std::vector<int64_t>{t.info.ne[0], t.info.ne[1]};
  p.transform = transform;
  p.heads = heads;
  p.heads_kv = heads_kv;
  return p;
}

TEST(ConvertTransforms, QkvGroupsUndoFalconsLayout) {
  // (query heads, key/value groups, head size, columns)
  for (auto [heads, groups, hd, cols] : {std::array<int64_t, 4>{8, 2, 3, 5}, {4, 4, 2, 7}, {4, 1, 5, 3}, {6, 3, 4, 1}}) {
    const Tensor t = random_tensor(cols, (heads + 2 * groups) * hd, uint32_t(heads * 100 + groups));
    std::vector<float> v = floats(test::qkv_to_groups(t.info, heads, groups));
    if (groups > 1) {
      EXPECT_NE(v, t.values) << "the layouts should differ for " << groups << " groups";
    }
    ASSERT_TRUE(convert::apply_transform(plan(t, Transform::QkvGroups, heads, groups), v).is_ok());
    EXPECT_EQ(v, t.values) << heads << " heads, " << groups << " groups";
  }
}

TEST(ConvertTransforms, QkvPerHeadUndoesNeoxLayout) {
  for (auto [heads, hd, cols] : {std::array<int64_t, 3>{4, 3, 5}, {3, 2, 1}, {1, 4, 2}}) {
    const Tensor t = random_tensor(cols, 3 * heads * hd, uint32_t(heads * 10 + hd));
    std::vector<float> v = floats(test::qkv_to_per_head(t.info, heads));
    ASSERT_TRUE(convert::apply_transform(plan(t, Transform::QkvPerHead, heads), v).is_ok());
    EXPECT_EQ(v, t.values) << heads << " heads";
  }
}

TEST(ConvertTransforms, TransposeUndoesConv1D) {
  const Tensor t = random_tensor(5, 7, 3);
  std::vector<float> v = floats(test::transposed(t.info));
  ASSERT_TRUE(convert::apply_transform(plan(t, Transform::Transpose, 0), v).is_ok());
  EXPECT_EQ(v, t.values);
  TensorPlan p = plan(t, Transform::Transpose, 0);
  EXPECT_EQ(convert::source_ne(p), (std::vector<int64_t>{7, 5}));
}

TEST(ConvertTransforms, APartOfAFusedTensorIsPermuted) {
  // Baichuan's W_pack: three blocks [q | k | v] of 12 rows, the second (k) permuted by 2 heads.
  const Tensor k = random_tensor(5, 12, 9);
  std::vector<float> fused(size_t(3 * 12 * 5), 7.0f);
  const std::vector<float> hf_k = floats(test::unpermute_rope(k.info, 2));
  std::copy(hf_k.begin(), hf_k.end(), fused.begin() + 12 * 5);
  TensorPlan p = plan(k, Transform::PermuteRope, 2);
  p.part = 1;
  p.parts = 3;
  EXPECT_EQ(convert::source_ne(p), (std::vector<int64_t>{5, 36}));
  ASSERT_TRUE(convert::apply_transform(p, fused).is_ok());
  EXPECT_EQ(fused, k.values);
}

TEST(ConvertTransforms, RowsThatDoNotSplitAreRefusedByName) {
  const Tensor t = random_tensor(4, 10, 1);
  std::vector<float> v = t.values;
  const Status s = convert::apply_transform(plan(t, Transform::QkvGroups, 4, 3), v);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("blk.0.attn_qkv.weight"), std::string::npos) << s.message();
  EXPECT_FALSE(convert::apply_transform(plan(t, Transform::QkvPerHead, 4), v).is_ok());
}

}  // namespace
}  // namespace tessera
