// Element types. The numeric values are the GGUF/ggml type ids, so a DType read
// from a file is the same number that is written back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tessera {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,

  // Internal layouts, never read from or written to files: weights repacked at load for
  // the CPU kernels (src/backend/cpu/repack.h). Rows come in groups of 16 interleaved
  // rows, so single rows cannot be addressed; only mul_mat reads them.
  Q4_0_X16 = 64,
  Q8_0_X16 = 65,
  F16_X16 = 66,
  Q4_K_X16 = 67,
  Q6_K_X16 = 68,
  IQ4_NL_X16 = 69,
  IQ4_XS_X16 = 70,
  BF16_X16 = 71,
};

/// Converts n elements of a row (n a multiple of the block size) to float.
using ToFloatFn = void (*)(const void* src, float* dst, int64_t n);
/// Converts n floats to a row of the type (n a multiple of the block size).
using FromFloatFn = void (*)(const float* src, void* dst, int64_t n);

/// What every part of the engine needs to know about a type.
struct DTypeTraits {
  std::string_view name;  // as GGUF tools print it: "f32", "q4_0", ...
  int64_t block_size;     // elements per block (1 for plain types)
  size_t type_size;       // bytes per block
  bool is_quantized;
  int64_t row_group = 1;   // rows stored interleaved together (16 for the _X16 layouts)
};

/// Traits of a known type. Callers must first check is_known_dtype for ids read from files.
const DTypeTraits& dtype_traits(DType type);
/// True if `id` names a GGUF tensor type in the traits table (internal layouts excluded).
bool is_known_dtype(uint32_t id);
/// Bytes taken by n elements of `type` (n a multiple of the block size).
size_t dtype_row_size(DType type, int64_t n);
std::string_view dtype_name(DType type);

}  // namespace tessera
