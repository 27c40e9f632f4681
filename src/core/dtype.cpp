#include "tessera/dtype.h"

#include <array>

#include "core/check.h"

namespace tessera {
namespace {

struct Entry {
  uint32_t id;
  DTypeTraits traits;
};

// Block sizes and byte sizes are the GGUF layouts (QK_K = 256 for the k-quants).
// How each type converts to and from float is not here but in the formats layer
// (quant/convert.h): core knows layouts only.
constexpr uint32_t kMaxId = 72;
constexpr uint32_t kFirstInternalId = 64;
constexpr Entry kEntries[] = {
    {0, {"f32", 1, 4, false}},
    {1, {"f16", 1, 2, false}},
    {2, {"q4_0", 32, 18, true}},
    {3, {"q4_1", 32, 20, true}},
    {6, {"q5_0", 32, 22, true}},
    {7, {"q5_1", 32, 24, true}},
    {8, {"q8_0", 32, 34, true}},
    {9, {"q8_1", 32, 36, true}},
    {10, {"q2_K", 256, 84, true}},
    {11, {"q3_K", 256, 110, true}},
    {12, {"q4_K", 256, 144, true}},
    {13, {"q5_K", 256, 176, true}},
    {14, {"q6_K", 256, 210, true}},
    {15, {"q8_K", 256, 292, true}},
    {16, {"iq2_xxs", 256, 66, true}},
    {17, {"iq2_xs", 256, 74, true}},
    {18, {"iq3_xxs", 256, 98, true}},
    {19, {"iq1_s", 256, 50, true}},
    {20, {"iq4_nl", 32, 18, true}},
    {21, {"iq3_s", 256, 110, true}},
    {22, {"iq2_s", 256, 82, true}},
    {23, {"iq4_xs", 256, 136, true}},
    {24, {"i8", 1, 1, false}},
    {25, {"i16", 1, 2, false}},
    {26, {"i32", 1, 4, false}},
    {27, {"i64", 1, 8, false}},
    {28, {"f64", 1, 8, false}},
    {29, {"iq1_m", 256, 56, true}},
    {30, {"bf16", 1, 2, false}},
    {34, {"tq1_0", 256, 54, true}},
    {35, {"tq2_0", 256, 66, true}},
    // Repacked layouts (same bytes per block, 16 rows interleaved; no row conversions).
    {64, {"q4_0_x16", 32, 18, true, 16}},
    {65, {"q8_0_x16", 32, 34, true, 16}},
    {66, {"f16_x16", 1, 2, false, 16}},
    {67, {"q4_K_x16", 256, 144, true, 16}},
    {68, {"q6_K_x16", 256, 210, true, 16}},
    {69, {"iq4_nl_x16", 32, 18, true, 16}},
    {70, {"iq4_xs_x16", 256, 136, true, 16}},
    {71, {"bf16_x16", 1, 2, false, 16}},
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
