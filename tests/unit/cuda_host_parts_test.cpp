// The host-side parts of the CUDA backend, which run without a GPU: the scratch pool's
// policy, the CUDA-graph key, the mul_mat path and attention plan, the -ngl placement,
// and what a build without CUDA answers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "backend/cuda/attention_plan.h"
#include "backend/cuda/cuda.h"
#include "backend/cuda/graph_key.h"
#include "backend/cuda/mul_mat_plan.h"
#include "backend/cuda/scratch_pool.h"
#include "core/ops.h"
#include "model/placement.h"

namespace tessera {
namespace {

struct CountingAllocator {
  int allocs = 0;
  int frees = 0;
  std::vector<size_t> sizes;
  cuda::ScratchPool pool{[this](size_t n) {
                           ++allocs;
                           sizes.push_back(n);
                           return std::aligned_alloc(256, n);
                         },
                         [this](void* p) {
                           ++frees;
                           std::free(p);
                         }};
};

TEST(CudaScratchPool, ARepeatedComputeAsksTheDeviceForNothing) {
  CountingAllocator a;
  // One compute that spills past the first chunk.
  std::vector<void*> first;
  for (size_t n : {size_t(700) << 10, size_t(600) << 10, size_t(3) << 20}) first.push_back(a.pool.take(n));
  EXPECT_EQ(a.pool.chunks(), 3u);
  for (void* p : first) EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  const size_t used = a.pool.used();
  a.pool.reset();  // merged into one chunk of what the compute used
  EXPECT_EQ(a.pool.chunks(), 1u);
  EXPECT_EQ(a.pool.capacity(), used);
  EXPECT_EQ(a.frees, 3);
  const int allocs = a.allocs;
  const uint64_t gen = a.pool.generation();
  for (int round = 0; round < 3; ++round) {
    std::vector<void*> again;
    for (size_t n : {size_t(700) << 10, size_t(600) << 10, size_t(3) << 20}) again.push_back(a.pool.take(n));
    EXPECT_EQ(again, std::vector<void*>({again[0], static_cast<char*>(again[0]) + (700 << 10),
                                          static_cast<char*>(again[0]) + (1300 << 10)}));
    a.pool.reset();
  }
  EXPECT_EQ(a.allocs, allocs);  // the same shape again: no new memory
  EXPECT_EQ(a.pool.generation(), gen);
}

TEST(CudaScratchPool, TakesDoNotOverlapAndOutOfMemoryIsNull) {
  int left = 2;
  cuda::ScratchPool pool([&](size_t n) { return left-- > 0 ? std::aligned_alloc(256, n) : nullptr; },
                         [](void* p) { std::free(p); });
  char* a = static_cast<char*>(pool.take(100));
  char* b = static_cast<char*>(pool.take(100));
  EXPECT_GE(b - a, 256);
  EXPECT_NE(pool.take(size_t(4) << 20), nullptr);   // the second chunk
  EXPECT_EQ(pool.take(size_t(64) << 20), nullptr);  // the device said no
}

TEST(CudaGraphKey, ChangesWithAddressesShapesAndParams) {
  Graph g;
  Tensor* x = g.arena().new_tensor(DType::F32, {8, 2, 1, 1}, "x");
  Tensor* y = ops::scale(g, x, 2.0f);
  g.expand(y);
  std::vector<float> mem(64);
  x->data = mem.data();
  y->data = mem.data() + 16;
  const cuda::GraphKey k0 = cuda::graph_key(g, 1);
  EXPECT_TRUE(k0 == cuda::graph_key(g, 1));
  EXPECT_FALSE(k0 == cuda::graph_key(g, 2));  // the scratch moved
  y->data = mem.data() + 32;
  EXPECT_FALSE(k0 == cuda::graph_key(g, 1));
  y->data = mem.data() + 16;
  std::get<ScaleParams>(y->params).scale = 3.0f;
  EXPECT_FALSE(k0 == cuda::graph_key(g, 1));
}

TEST(CudaMulMatPlan, PathByWeightTypeAndColumns) {
  using cuda::MatPath;
  EXPECT_EQ(cuda::mat_path(DType::F32, 1), MatPath::FloatVec);
  EXPECT_EQ(cuda::mat_path(DType::BF16, cuda::kMaxVecCols), MatPath::FloatVec);
  EXPECT_EQ(cuda::mat_path(DType::F16, cuda::kMaxVecCols + 1), MatPath::Cublas);
  EXPECT_EQ(cuda::mat_path(DType::Q4_K, 1), MatPath::QuantVec);
  EXPECT_EQ(cuda::mat_path(DType::Q8_0, cuda::kMaxVecCols), MatPath::QuantVec);
  EXPECT_EQ(cuda::mat_path(DType::Q6_K, 512), MatPath::DequantCublas);
  EXPECT_EQ(cuda::mat_path(DType::IQ2_XXS, 1), MatPath::Refuse);   // no CUDA kernel for the i-quants
  EXPECT_EQ(cuda::mat_path(DType::Q4_0_X16, 1), MatPath::Refuse);  // the CPU's repacked layout
  EXPECT_EQ(cuda::mat_path(DType::I32, 1), MatPath::Refuse);
}

TEST(CudaMulMatPlan, DequantizedChunksFitTheirScratch) {
  const int64_t rows = cuda::dequant_chunk_rows(128256, 4096);  // an output projection
  EXPECT_EQ(rows, 8192);
  EXPECT_LE(size_t(rows) * 4096 * 2, cuda::kDequantChunkBytes);
  EXPECT_EQ(cuda::dequant_chunk_rows(100, 4096), 100);        // a small weight at once
  EXPECT_EQ(cuda::dequant_chunk_rows(4096, 1 << 20), 128);    // never fewer than 128 rows
  EXPECT_EQ(cuda::dequant_chunk_rows(14336, 5120) % 128, 0);
}

TEST(CudaAttentionPlan, DecodeSplitsTheCacheToFillTheGpu) {
  // 32 heads over 8 KV heads, one token: 4 rows per KV head, 8 blocks without splits.
  const cuda::AttnPlan p = cuda::plan_attention(128, 4, 4096, 8, 132);
  EXPECT_TRUE(p.decode);
  EXPECT_EQ(p.bucket, 128);
  EXPECT_EQ(p.rows_cap, 4);
  EXPECT_EQ(p.splits, 16);  // 4096 / kAttnMinCellsPerSplit
  EXPECT_EQ(p.cells_per_split, 256);
  EXPECT_EQ(p.cells_per_split % 32, 0);

  const cuda::AttnPlan odd = cuda::plan_attention(80, 7, 10001, 4, 132);
  EXPECT_EQ(odd.bucket, 128);
  EXPECT_EQ(odd.rows_cap, 8);
  EXPECT_GE(int64_t(odd.splits) * odd.cells_per_split, 10001);        // every cell covered
  EXPECT_LT(int64_t(odd.splits - 1) * odd.cells_per_split, 10001);    // no empty split
  EXPECT_LE(odd.splits, cuda::kAttnMaxSplits);

  EXPECT_EQ(cuda::plan_attention(64, 1, 100, 32, 132).splits, 1);  // a short cache: one pass
  EXPECT_EQ(cuda::plan_attention(64, 1, 0, 32, 132).splits, 1);
}

TEST(CudaAttentionPlan, PromptsTileTheRowsOfEachKvHead) {
  const cuda::AttnPlan p = cuda::plan_attention(64, 512, 512, 32, 132);
  EXPECT_FALSE(p.decode);
  EXPECT_EQ(p.bucket, 64);
  EXPECT_EQ(p.rows_cap, cuda::flash_tile(64).br);
  EXPECT_EQ(p.tiles, 512 / cuda::flash_tile(64).br);
  EXPECT_EQ(p.splits, 1);  // 1024 blocks fill the GPU
  EXPECT_EQ(p.cells_per_split % cuda::flash_tile(64).bc, 0);

  // Two KV heads of 16 rows each over a long cache: too few blocks, so the cells split.
  const cuda::AttnPlan few = cuda::plan_attention(256, 16, 32768, 2, 132);
  EXPECT_FALSE(few.decode);
  EXPECT_EQ(few.tiles, 2);
  EXPECT_EQ(few.splits, cuda::kAttnMaxSplits);
  EXPECT_EQ(few.cells_per_split % cuda::flash_tile(256).bc, 0);

  EXPECT_EQ(cuda::attn_head_bucket(257), 0);  // too large: refused, the CPU runs it
  EXPECT_EQ(cuda::attn_head_bucket(256), 256);
  EXPECT_EQ(cuda::attn_head_bucket(40), 64);
}

TEST(GpuPlacement, LastLayersOnTheGpuAndTheOutputPastTheLayerCount) {
  Result<Placement> p = gpu_placement(4, 2, 1);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->backends, std::vector<std::string>({"cpu", "cuda1"}));
  EXPECT_EQ(p->layer, std::vector<int>({0, 0, 1, 1}));
  EXPECT_EQ(p->gpu_of(1), 1);
  EXPECT_EQ(p->gpu_of(0), -1);
  EXPECT_EQ(p->output, 0);
  EXPECT_FALSE(p->layer_on_cpu_here(3));
  EXPECT_TRUE(p->layer_on_cpu_here(0));
  EXPECT_EQ(describe_placement(*p), "cpu: layers 0-1 + embeddings + output; cuda1: layers 2-3");

  Result<Placement> all = gpu_placement(4, 99, 0);
  ASSERT_TRUE(all.is_ok());
  EXPECT_EQ(all->layer, std::vector<int>({1, 1, 1, 1}));
  EXPECT_EQ(all->output, 1);
  EXPECT_EQ(all->input, 0);
  Result<Placement> layers_only = gpu_placement(4, 4, 0);
  EXPECT_EQ(layers_only->output, 0);
  Result<Placement> none = gpu_placement(4, 0, 0);
  EXPECT_EQ(none->backends.size(), 1u);
  EXPECT_FALSE(gpu_placement(4, -1, 0).is_ok());
}

TEST(GpuPlacement, ATiedEmbeddingLivesWithAGpuOutput) {
  TensorArena arena;
  ModelWeights w;
  w.token_embd = arena.new_tensor(DType::F32, {4, 10}, "token_embd");
  w.output_norm = arena.new_tensor(DType::F32, {4}, "output_norm");
  w.layers.resize(2);
  Result<Placement> all = gpu_placement(2, 99, 0);
  auto at = place_weights(w, *all);
  EXPECT_EQ(at.at(w.token_embd), 1);  // read by the GPU's output projection
  Result<Placement> part = gpu_placement(2, 1, 0);
  EXPECT_EQ(place_weights(w, *part).count(w.token_embd), 0u);  // CPU at both ends: read in place
}

TEST(CudaBuild, AnswersWhetherAGpuCanBeUsed) {
  const std::string why = cuda::unavailable_reason();
  if (!cuda::built()) {
    EXPECT_NE(why.find("-DTESSERA_CUDA=ON"), std::string::npos) << why;
    Result<std::unique_ptr<Backend>> b = cuda::make_backend(0);
    ASSERT_FALSE(b.is_ok());
    EXPECT_EQ(b.status().message(), why);
    EXPECT_FALSE(cuda::devices().is_ok());
  } else if (!why.empty()) {
    EXPECT_FALSE(cuda::make_backend(0).is_ok());
  } else {
    EXPECT_FALSE(cuda::make_backend(1 << 20).is_ok());  // no such device, said so
  }
}

}  // namespace
}  // namespace tessera
