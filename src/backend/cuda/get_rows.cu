// get_rows: output row j = row ids[j] of src0, converted to F32, for every type the CPU
// reads rows of: F32, F16, BF16, the integer types and F64 element by element (any
// strides), and the quantized types with a reference dequantizer (dequant.h; dense rows),
// bit for bit as the CPU. The IQ/TQ families and the CPU's _X16 layouts are refused.
// An id out of range gives a row of zeros (the CPU aborts; a kernel cannot).
#include <climits>

#include "backend/cuda/dequant.h"
#include "backend/cuda/elementwise_math.h"
#include "backend/cuda/ops.cuh"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 256;

// Element i (linear) of an I32 tensor of any layout.
__device__ __forceinline__ int32_t read_i32(const char* base, const Dims& d, int64_t i) {
  int64_t off = 0;
  for (int k = 0; k < 4; ++k) {
    off += (i % d.ne[k]) * d.nb[k];
    i /= d.ne[k];
  }
  return *reinterpret_cast<const int32_t*>(base + off);
}

// One element of a plain type (one element per block) as float, as dtype.cpp converts it.
template <DType T>
__device__ __forceinline__ float load_plain(const char* p) {
  if constexpr (T == DType::F32) return *reinterpret_cast<const float*>(p);
  if constexpr (T == DType::F16) return math::f16_to_f32(*reinterpret_cast<const uint16_t*>(p));
  if constexpr (T == DType::BF16) return math::bf16_to_f32(*reinterpret_cast<const uint16_t*>(p));
  if constexpr (T == DType::I8) return float(*reinterpret_cast<const int8_t*>(p));
  if constexpr (T == DType::I16) return float(*reinterpret_cast<const int16_t*>(p));
  if constexpr (T == DType::I32) return float(*reinterpret_cast<const int32_t*>(p));
  if constexpr (T == DType::I64) return float(*reinterpret_cast<const int64_t*>(p));
  if constexpr (T == DType::F64) return float(*reinterpret_cast<const double*>(p));
  return 0.0f;
}

// Output row (i1, i2, i3) = blockIdx.x as the CPU numbers rows; source row ids[i1] of
// plane 0. Plain types read element i at i * nb0, quantized ones decode dense rows.
template <DType T, bool kQuant>
__global__ void get_rows_kernel(char* y, Dims dy, const char* src, Dims ds, const char* ids,
                                Dims di) {
  const int64_t r = blockIdx.x;
  const int64_t i1 = r % dy.ne[1];
  const int64_t i23 = r / dy.ne[1];
  float* yr = reinterpret_cast<float*>(y + i1 * dy.nb[1] + (i23 % dy.ne[2]) * dy.nb[2] +
                                       (i23 / dy.ne[2]) * dy.nb[3]);
  const int64_t ys = dy.nb[0] / int64_t(sizeof(float));
  const int64_t n = dy.ne[0];
  const int32_t id = read_i32(ids, di, i1);
  if (id < 0 || id >= ds.ne[1]) {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i * ys] = 0.0f;
    return;
  }
  const char* row = src + int64_t(id) * ds.nb[1];
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    if constexpr (kQuant) {
      yr[i * ys] = dq::decode_row<T>(reinterpret_cast<const uint8_t*>(row), i);
    } else {
      yr[i * ys] = load_plain<T>(row + i * ds.nb[0]);
    }
  }
}

template <DType T, bool kQuant>
void launch(Tensor* node, Ctx& ctx) {
  const Tensor* a = node->src[0];
  const Tensor* ids = node->src[1];
  get_rows_kernel<T, kQuant><<<unsigned(node->nrows()), kThreads, 0, ctx.stream>>>(
      static_cast<char*>(node->data), dims_of(node), static_cast<const char*>(a->data), dims_of(a),
      static_cast<const char*>(ids->data), dims_of(ids));
  TESSERA_CUDA_LAUNCHED();
}

bool is_plain(DType t) {
  switch (t) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64:
    case DType::F64:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool get_rows_supports(const Tensor* node) {
  const Tensor* a = node->src[0];
  const Tensor* ids = node->src[1];
  if (a == nullptr || ids == nullptr || ids->type != DType::I32 || !aligned(ids, 4)) return false;
  if (node->type != DType::F32 || node->nb[0] != sizeof(float) || !aligned(node, 4) ||
      !fits_grid(node))
    return false;
  if (node->ne[0] != a->ne[0] || ids->nelements() < node->ne[1] || !fits_grid(a)) return false;
  const DTypeTraits& tr = dtype_traits(a->type);
  if (is_plain(a->type)) return aligned(a, tr.type_size);
  return dq::has_decoder(a->type) && a->nb[0] == tr.type_size;  // dense rows of blocks
}

void get_rows_compute(Tensor* node, Ctx& ctx) {
  if (node->nelements() == 0) return;
  const DType t = node->src[0]->type;
  switch (t) {
    case DType::F32:
      return launch<DType::F32, false>(node, ctx);
    case DType::F16:
      return launch<DType::F16, false>(node, ctx);
    case DType::BF16:
      return launch<DType::BF16, false>(node, ctx);
    case DType::I8:
      return launch<DType::I8, false>(node, ctx);
    case DType::I16:
      return launch<DType::I16, false>(node, ctx);
    case DType::I32:
      return launch<DType::I32, false>(node, ctx);
    case DType::I64:
      return launch<DType::I64, false>(node, ctx);
    case DType::F64:
      return launch<DType::F64, false>(node, ctx);
    default:
      dq::with_quant_type(t, [&]<DType T>() { launch<T, true>(node, ctx); });
  }
}

}  // namespace tessera::cuda
