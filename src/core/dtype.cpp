#include "tessera/dtype.h"

#include <array>
#include <cstring>

#include "core/check.h"
#include "core/fp16.h"
#include "quant/quant.h"

namespace tessera {
namespace {

void f32_to_float(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }
void f32_from_float(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }

void f16_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
}
void f16_from_float(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
}
void bf16_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
}
void bf16_from_float(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
}
template <typename T>
void int_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const T*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = float(s[i]);
}

struct Entry {
  uint32_t id;
  DTypeTraits traits;
};

// Block sizes and byte sizes are the GGUF layouts (QK_K = 256 for the k-quants).
// Quantized types convert through the reference code of src/quant; the IQ and TQ
// families have no conversion yet, so the loader refuses such tensors with a message.
constexpr uint32_t kMaxId = 69;
constexpr uint32_t kFirstInternalId = 64;
constexpr Entry kEntries[] = {
    {0, {"f32", 1, 4, false, f32_to_float, f32_from_float}},
    {1, {"f16", 1, 2, false, f16_to_float, f16_from_float}},
    {2, {"q4_0", 32, 18, true, quant::dequantize_q4_0, quant::quantize_q4_0}},
    {3, {"q4_1", 32, 20, true, quant::dequantize_q4_1, quant::quantize_q4_1}},
    {6, {"q5_0", 32, 22, true, quant::dequantize_q5_0, quant::quantize_q5_0}},
    {7, {"q5_1", 32, 24, true, quant::dequantize_q5_1, quant::quantize_q5_1}},
    {8, {"q8_0", 32, 34, true, quant::dequantize_q8_0, quant::quantize_q8_0}},
    {9, {"q8_1", 32, 36, true, quant::dequantize_q8_1, quant::quantize_q8_1}},
    {10, {"q2_K", 256, 84, true, quant::dequantize_q2_K, quant::quantize_q2_K}},
    {11, {"q3_K", 256, 110, true, quant::dequantize_q3_K, quant::quantize_q3_K}},
    {12, {"q4_K", 256, 144, true, quant::dequantize_q4_K, quant::quantize_q4_K}},
    {13, {"q5_K", 256, 176, true, quant::dequantize_q5_K, quant::quantize_q5_K}},
    {14, {"q6_K", 256, 210, true, quant::dequantize_q6_K, quant::quantize_q6_K}},
    {15, {"q8_K", 256, 292, true, quant::dequantize_q8_K, quant::quantize_q8_K}},
    {16, {"iq2_xxs", 256, 66, true, nullptr, nullptr}},
    {17, {"iq2_xs", 256, 74, true, nullptr, nullptr}},
    {18, {"iq3_xxs", 256, 98, true, nullptr, nullptr}},
    {19, {"iq1_s", 256, 50, true, nullptr, nullptr}},
    {20, {"iq4_nl", 32, 18, true, nullptr, nullptr}},
    {21, {"iq3_s", 256, 110, true, nullptr, nullptr}},
    {22, {"iq2_s", 256, 82, true, nullptr, nullptr}},
    {23, {"iq4_xs", 256, 136, true, nullptr, nullptr}},
    {24, {"i8", 1, 1, false, int_to_float<int8_t>, nullptr}},
    {25, {"i16", 1, 2, false, int_to_float<int16_t>, nullptr}},
    {26, {"i32", 1, 4, false, int_to_float<int32_t>, nullptr}},
    {27, {"i64", 1, 8, false, int_to_float<int64_t>, nullptr}},
    {28, {"f64", 1, 8, false, int_to_float<double>, nullptr}},
    {29, {"iq1_m", 256, 56, true, nullptr, nullptr}},
    {30, {"bf16", 1, 2, false, bf16_to_float, bf16_from_float}},
    {34, {"tq1_0", 256, 54, true, nullptr, nullptr}},
    {35, {"tq2_0", 256, 66, true, nullptr, nullptr}},
    // Repacked layouts (same bytes per block, 16 rows interleaved; no row conversions).
    {64, {"q4_0_x16", 32, 18, true, nullptr, nullptr, 16}},
    {65, {"q8_0_x16", 32, 34, true, nullptr, nullptr, 16}},
    {66, {"f16_x16", 1, 2, false, nullptr, nullptr, 16}},
    {67, {"q4_K_x16", 256, 144, true, nullptr, nullptr, 16}},
    {68, {"q6_K_x16", 256, 210, true, nullptr, nullptr, 16}},
};

struct Table {
  std::array<const DTypeTraits*, kMaxId> by_id{};
  constexpr Table() {
    for (const Entry& e : kEntries) by_id[e.id] = &e.traits;
  }
};
constexpr Table kTable;

}  // namespace

bool is_known_dtype(uint32_t id) { return id < kFirstInternalId && kTable.by_id[id] != nullptr; }

const DTypeTraits& dtype_traits(DType type) {
  const auto id = static_cast<uint32_t>(type);
  TESSERA_CHECK_MSG(id < kMaxId && kTable.by_id[id] != nullptr, "unknown dtype");
  return *kTable.by_id[id];
}

size_t dtype_row_size(DType type, int64_t n) {
  const DTypeTraits& t = dtype_traits(type);
  TESSERA_CHECK(n % t.block_size == 0);
  return size_t(n / t.block_size) * t.type_size;
}

std::string_view dtype_name(DType type) { return dtype_traits(type).name; }

}  // namespace tessera
