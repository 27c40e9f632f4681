// cpy / cont: element i (row-major, dim 0 fastest) of src0 becomes element i of the
// result, between any strided layouts: raw copies within one plain type, F32/F16/BF16
// conversions (round to nearest even, as core/fp16.h), row copies within one quantized
// type, and F32/F16/BF16 rows quantized to Q8_0 as src/quant does. set_rows: rows of
// src1 (F32) written into the result (src0's memory) at the I32 ids of src2.
#include <climits>

#include "backend/cuda/elementwise_math.h"
#include "backend/cuda/ops.cuh"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kQK = 32;          // Q8_0 block: fp16 d, then 32 int8 quants
constexpr int kQ8Bytes = 34;

enum Kind : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

int kind_of(DType t) { return t == DType::F32 ? kF32 : (t == DType::F16 ? kF16 : kBF16); }
bool is_plain_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

template <int K>
__device__ __forceinline__ float load(const char* p) {
  if constexpr (K == kF32) return *reinterpret_cast<const float*>(p);
  if constexpr (K == kF16) return math::f16_to_f32(*reinterpret_cast<const uint16_t*>(p));
  if constexpr (K == kBF16) return math::bf16_to_f32(*reinterpret_cast<const uint16_t*>(p));
  return 0.0f;
}

template <int K>
__device__ __forceinline__ void store(char* p, float v) {
  if constexpr (K == kF32) *reinterpret_cast<float*>(p) = v;
  if constexpr (K == kF16) *reinterpret_cast<uint16_t*>(p) = math::f32_to_f16(v);
  if constexpr (K == kBF16) *reinterpret_cast<uint16_t*>(p) = math::f32_to_bf16(v);
}

template <typename T>
struct RawMove {
  __device__ void operator()(const char* s, char* d) const {
    *reinterpret_cast<T*>(d) = *reinterpret_cast<const T*>(s);
  }
};
template <int S, int D>
struct ConvertMove {
  __device__ void operator()(const char* s, char* d) const { store<D>(d, load<S>(s)); }
};

__device__ __forceinline__ const char* row_ptr(const char* base, const Dims& d, int64_t r) {
  const int64_t i23 = r / d.ne[1];
  return base + (r % d.ne[1]) * d.nb[1] + (i23 % d.ne[2]) * d.nb[2] + (i23 / d.ne[2]) * d.nb[3];
}

// Address of the element with linear index k of d.
__device__ __forceinline__ char* elem_ptr(char* base, const Dims& d, int64_t k) {
  int64_t off = 0;
  for (int i = 0; i < 4; ++i) {
    off += (k % d.ne[i]) * d.nb[i];
    k /= d.ne[i];
  }
  return base + off;
}

// Element by element, src row r to the dst elements with the same linear indices (the
// dst row r when by_rows: equal ne0). Grid: one block per src row.
template <typename M>
__global__ void copy_kernel(const char* src, Dims ds, char* dst, Dims dd, bool by_rows, M mv) {
  const int64_t r = blockIdx.x;
  const char* sr = row_ptr(src, ds, r);
  const int n = int(ds.ne[0]);
  if (by_rows) {
    char* dr = const_cast<char*>(row_ptr(dst, dd, r));
    for (int i = threadIdx.x; i < n; i += blockDim.x) mv(sr + i * ds.nb[0], dr + i * dd.nb[0]);
    return;
  }
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    mv(sr + i * ds.nb[0], elem_ptr(dst, dd, r * ds.ne[0] + i));
  }
}

// The bytes of src row r to dst row r (one quantized type, dense rows of equal length).
// Grid: one block per row.
__global__ void row_bytes_kernel(const char* src, Dims ds, char* dst, Dims dd, int64_t bytes) {
  const char* sr = row_ptr(src, ds, blockIdx.x);
  char* dr = const_cast<char*>(row_ptr(dst, dd, blockIdx.x));
  for (int64_t i = threadIdx.x; i < bytes; i += blockDim.x) dr[i] = sr[i];
}

// One warp quantizes 32 floats (lane j's x) into the Q8_0 block at out, as
// quantize_q8_0: d = max|x| / 127 (NaNs ignored), q = round(x / d).
__device__ __forceinline__ void q8_0_block(float x, char* out) {
  float amax = fmaxf(0.0f, fabsf(x));
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float d = math::q8_0_scale(amax);
  const int lane = threadIdx.x & 31;
  if (lane == 0) *reinterpret_cast<uint16_t*>(out) = math::f32_to_f16(d);
  out[2 + lane] = char(math::q8_0_quant(x, math::q8_0_inverse(d)));
}

// Row sr (ne0 elements of kind S at byte stride nb0) quantized into the Q8_0 row dr;
// the block's warps take its 32-element blocks in turn.
template <int S>
__device__ void q8_0_row(const char* sr, int64_t nb0, char* dr, int n) {
  const int lane = threadIdx.x & 31;
  const int warps = int(blockDim.x >> 5);
  for (int b = int(threadIdx.x >> 5); b < n / kQK; b += warps) {
    q8_0_block(load<S>(sr + int64_t(b * kQK + lane) * nb0), dr + int64_t(b) * kQ8Bytes);
  }
}

// Src row r (kind S) quantized into dst row r (Q8_0). Grid: one block per row.
template <int S>
__global__ void q8_0_copy_kernel(const char* src, Dims ds, char* dst, Dims dd) {
  q8_0_row<S>(row_ptr(src, ds, blockIdx.x), ds.nb[0],
              const_cast<char*>(row_ptr(dst, dd, blockIdx.x)), int(ds.ne[0]));
}

template <typename M>
void launch_copy(const Tensor* src, Tensor* dst, Ctx& ctx, M mv) {
  copy_kernel<M><<<unsigned(src->nrows()), kThreads, 0, ctx.stream>>>(
      static_cast<const char*>(src->data), dims_of(src), static_cast<char*>(dst->data),
      dims_of(dst), src->ne[0] == dst->ne[0], mv);
  TESSERA_CUDA_LAUNCHED();
}

template <int S>
void launch_convert(const Tensor* src, Tensor* dst, Ctx& ctx) {
  switch (kind_of(dst->type)) {
    case kF32: return launch_copy(src, dst, ctx, ConvertMove<S, kF32>{});
    case kF16: return launch_copy(src, dst, ctx, ConvertMove<S, kF16>{});
    default: return launch_copy(src, dst, ctx, ConvertMove<S, kBF16>{});
  }
}

void launch_raw(const Tensor* src, Tensor* dst, Ctx& ctx) {
  switch (dtype_traits(src->type).type_size) {
    case 1: return launch_copy(src, dst, ctx, RawMove<uint8_t>{});
    case 2: return launch_copy(src, dst, ctx, RawMove<uint16_t>{});
    case 4: return launch_copy(src, dst, ctx, RawMove<uint32_t>{});
    default: return launch_copy(src, dst, ctx, RawMove<uint64_t>{});
  }
}

template <int S>
void launch_q8_0(const Tensor* src, Tensor* dst, Ctx& ctx) {
  q8_0_copy_kernel<S><<<unsigned(src->nrows()), kThreads, 0, ctx.stream>>>(
      static_cast<const char*>(src->data), dims_of(src), static_cast<char*>(dst->data),
      dims_of(dst));
  TESSERA_CUDA_LAUNCHED();
}

// A type this file reads and writes element by element: one element per block, 1, 2, 4
// or 8 bytes, every element aligned to its size.
bool elementwise_ok(const Tensor* t) {
  const DTypeTraits& tr = dtype_traits(t->type);
  const size_t ts = tr.type_size;
  return tr.block_size == 1 && (ts == 1 || ts == 2 || ts == 4 || ts == 8) && aligned(t, ts);
}

// Q8_0 rows that q8_0_row writes: dense blocks, whole blocks.
bool q8_0_rows_ok(const Tensor* t) {
  return t->type == DType::Q8_0 && t->nb[0] == size_t(kQ8Bytes) && t->ne[0] % kQK == 0 &&
         aligned(t, 2);
}

bool dense_rows(const Tensor* t) { return t->nb[0] == dtype_traits(t->type).type_size; }

// Whether src's elements can be copied into dst here (CPU's can_copy, less the
// conversions of quantized sources and to quantized types other than Q8_0).
bool can_copy(const Tensor* src, const Tensor* dst) {
  if (src == nullptr || src->nelements() != dst->nelements() || !fits_grid(src) ||
      !fits_grid(dst))
    return false;
  if (src->type == dst->type) {
    if (dtype_traits(src->type).block_size == 1) return elementwise_ok(src) && elementwise_ok(dst);
    return src->ne[0] == dst->ne[0] && dense_rows(src) && dense_rows(dst);
  }
  if (!is_plain_float(src->type) || !elementwise_ok(src)) return false;
  if (is_plain_float(dst->type)) return elementwise_ok(dst);
  return src->ne[0] == dst->ne[0] && q8_0_rows_ok(dst);
}

// Element i (linear) of an I32 tensor of any layout.
__device__ __forceinline__ int32_t read_i32(const char* base, const Dims& d, int64_t i) {
  return *reinterpret_cast<const int32_t*>(elem_ptr(const_cast<char*>(base), d, i));
}

// Row i of src (F32) into row ids[i] of dst (kind D, or Q8_0 when q8), unless a later id
// names the same row (the last write wins, as on the CPU) or the id is out of range.
// Grid: one block per src row.
template <int D, bool kQ8>
__global__ void set_rows_kernel(char* dst, Dims dd, const char* src, Dims ds, const char* ids,
                                Dims di) {
  const int64_t i = blockIdx.x;
  const int64_t n = ds.ne[1];
  const int32_t id = read_i32(ids, di, i);
  int later = 0;
  for (int64_t j = i + 1 + threadIdx.x; j < n; j += blockDim.x) later |= read_i32(ids, di, j) == id;
  if (__syncthreads_or(later) || id < 0 || id >= dd.ne[1]) return;
  const char* sr = src + i * ds.nb[1];
  char* dr = dst + int64_t(id) * dd.nb[1];
  const int ne0 = int(ds.ne[0]);
  if constexpr (kQ8) {
    q8_0_row<kF32>(sr, ds.nb[0], dr, ne0);
  } else {
    for (int k = threadIdx.x; k < ne0; k += blockDim.x) {
      store<D>(dr + k * dd.nb[0], load<kF32>(sr + k * ds.nb[0]));
    }
  }
}

template <int D, bool kQ8>
void launch_set_rows(Tensor* node, Ctx& ctx) {
  const Tensor* src = node->src[1];
  const Tensor* ids = node->src[2];
  set_rows_kernel<D, kQ8><<<unsigned(src->ne[1]), kThreads, 0, ctx.stream>>>(
      static_cast<char*>(node->data), dims_of(node), static_cast<const char*>(src->data),
      dims_of(src), static_cast<const char*>(ids->data), dims_of(ids));
  TESSERA_CUDA_LAUNCHED();
}

}  // namespace

bool cpy_supports(const Tensor* node) { return can_copy(node->src[0], node); }
bool cont_supports(const Tensor* node) { return can_copy(node->src[0], node); }

void copy_compute(Tensor* node, Ctx& ctx) {
  const Tensor* src = node->src[0];
  if (src->nelements() == 0) return;
  if (src->type == node->type) {
    if (dtype_traits(src->type).block_size == 1) return launch_raw(src, node, ctx);
    row_bytes_kernel<<<unsigned(src->nrows()), kThreads, 0, ctx.stream>>>(
        static_cast<const char*>(src->data), dims_of(src), static_cast<char*>(node->data),
        dims_of(node), int64_t(src->row_size()));
    TESSERA_CUDA_LAUNCHED();
    return;
  }
  const int s = kind_of(src->type);
  if (node->type == DType::Q8_0) {
    if (s == kF32) return launch_q8_0<kF32>(src, node, ctx);
    if (s == kF16) return launch_q8_0<kF16>(src, node, ctx);
    return launch_q8_0<kBF16>(src, node, ctx);
  }
  if (s == kF32) return launch_convert<kF32>(src, node, ctx);
  if (s == kF16) return launch_convert<kF16>(src, node, ctx);
  return launch_convert<kBF16>(src, node, ctx);
}

bool set_rows_supports(const Tensor* node) {
  const Tensor* src = node->src[1];
  const Tensor* ids = node->src[2];
  if (src == nullptr || ids == nullptr || src->type != DType::F32 || !aligned(src, 4)) return false;
  if (ids->type != DType::I32 || !aligned(ids, 4) || ids->nelements() != src->ne[1]) return false;
  if (src->ne[0] != node->ne[0] || src->ne[2] != 1 || src->ne[3] != 1 || node->ne[2] != 1 ||
      node->ne[3] != 1 || !fits_grid(src) || !fits_grid(node))
    return false;
  return (is_plain_float(node->type) && elementwise_ok(node)) || q8_0_rows_ok(node);
}

void set_rows_compute(Tensor* node, Ctx& ctx) {
  if (node->src[1]->nelements() == 0) return;
  if (node->type == DType::Q8_0) return launch_set_rows<kF32, true>(node, ctx);
  switch (kind_of(node->type)) {
    case kF32: return launch_set_rows<kF32, false>(node, ctx);
    case kF16: return launch_set_rows<kF16, false>(node, ctx);
    default: return launch_set_rows<kBF16, false>(node, ctx);
  }
}

}  // namespace tessera::cuda
