// fuse_projections (src/model/fuse_weights.h): a fused tensor exactly where the parts
// are interleaved (_X16) matrices of one type and row length lying back to back.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/test_util.h"
#include "model/fuse_weights.h"

namespace tessera {
namespace {

constexpr int64_t kEmbd = 64, kQ = 64, kKv = 32, kFF = 96;

// One layer's projections as Q8_0_X16 matrices carved one after the other out of `mem`
// (q, k, v, gate, up), `gap` bytes apart.
struct Layer {
  TensorArena arena;
  std::vector<uint8_t> mem;
  ModelWeights w;

  explicit Layer(size_t gap, DType type = DType::Q8_0_X16) {
    const Shape shapes[] = {{kEmbd, kQ, 1, 1}, {kEmbd, kKv, 1, 1}, {kEmbd, kKv, 1, 1},
                            {kEmbd, kFF, 1, 1}, {kEmbd, kFF, 1, 1}};
    std::vector<Tensor*> t;
    size_t bytes = 0;
    for (const Shape& ne : shapes) {
      t.push_back(arena.new_tensor(type, ne));
      bytes += t.back()->nbytes() + gap;
    }
    mem.resize(bytes);
    size_t at = 0;
    for (Tensor* x : t) {
      x->data = mem.data() + at;
      at += x->nbytes() + gap;
    }
    w.layers.resize(1);
    LayerWeights& l = w.layers[0];
    l.wq = t[0];
    l.wk = t[1];
    l.wv = t[2];
    l.ffn_gate = t[3];
    l.ffn_up = t[4];
  }
};

TEST(FuseWeights, AdjacentMatricesBecomeOne) {
  test::ScopedEnv env("TESSERA_FUSE", "1");
  Layer m(0);
  EXPECT_EQ(fuse_projections(m.w, m.arena), 2);
  const LayerWeights& l = m.w.layers[0];
  ASSERT_NE(l.wqkv, nullptr);
  EXPECT_EQ(l.wqkv->type, DType::Q8_0_X16);
  EXPECT_EQ(l.wqkv->ne, (Shape{kEmbd, kQ + 2 * kKv, 1, 1}));
  EXPECT_EQ(l.wqkv->data, l.wq->data);
  EXPECT_EQ(l.wqkv->nbytes(), l.wq->nbytes() + l.wk->nbytes() + l.wv->nbytes());
  ASSERT_NE(l.ffn_gate_up, nullptr);
  EXPECT_EQ(l.ffn_gate_up->ne, (Shape{kEmbd, 2 * kFF, 1, 1}));
  EXPECT_EQ(l.ffn_gate_up->data, l.ffn_gate->data);
  EXPECT_TRUE(l.ffn_gate_up->flags & kFlagWeight);
}

TEST(FuseWeights, PaddingBetweenPartsPreventsFusion) {
  test::ScopedEnv env("TESSERA_FUSE", "1");
  Layer m(64);
  EXPECT_EQ(fuse_projections(m.w, m.arena), 0);
  EXPECT_EQ(m.w.layers[0].wqkv, nullptr);
  EXPECT_EQ(m.w.layers[0].ffn_gate_up, nullptr);
}

TEST(FuseWeights, DifferentTypesAreNotFused) {
  test::ScopedEnv env("TESSERA_FUSE", "1");
  Layer m(0);
  LayerWeights& l = m.w.layers[0];
  l.wv->type = DType::Q4_0_X16;  // e.g. a Q4_K_M file's Q6_K wv next to Q4_K wq, wk
  l.ffn_up->type = DType::Q4_0_X16;
  EXPECT_EQ(fuse_projections(m.w, m.arena), 0);
  EXPECT_EQ(l.wqkv, nullptr);
  EXPECT_EQ(l.ffn_gate_up, nullptr);
}

TEST(FuseWeights, FileLayoutsAreNotFused) {
  test::ScopedEnv env("TESSERA_FUSE", "1");
  Layer m(0, DType::Q8_0);  // not repacked (TESSERA_REPACK=0, or no AVX2)
  EXPECT_EQ(fuse_projections(m.w, m.arena), 0);
  EXPECT_EQ(m.w.layers[0].wqkv, nullptr);
}

TEST(FuseWeights, MissingPartIsNotFused) {
  test::ScopedEnv env("TESSERA_FUSE", "1");
  Layer m(0);
  m.w.layers[0].wk = nullptr;
  EXPECT_EQ(fuse_projections(m.w, m.arena), 1);
  EXPECT_EQ(m.w.layers[0].wqkv, nullptr);
  EXPECT_NE(m.w.layers[0].ffn_gate_up, nullptr);
}

TEST(FuseWeights, DisabledByEnvironment) {
  test::ScopedEnv env("TESSERA_FUSE", "0");
  Layer m(0);
  EXPECT_EQ(fuse_projections(m.w, m.arena), 0);
  EXPECT_EQ(m.w.layers[0].wqkv, nullptr);
  EXPECT_EQ(m.w.layers[0].ffn_gate_up, nullptr);
}

}  // namespace
}  // namespace tessera
