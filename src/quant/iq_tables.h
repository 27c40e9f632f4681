// Tables of the i-quant and ternary formats: the grids (iq_grids.cpp: data of the format,
// with its source), the sign patterns of IQ2/IQ3, the non-linear 4-bit values of
// IQ4_NL/IQ4_XS and the IQ1 shift.
#pragma once

#include <array>
#include <cstdint>

namespace tessera::quant {

/// Grid points, 8 coordinates (IQ2, IQ1: one byte each) or 4 (IQ3: one byte each) per
/// entry, the first coordinate in the lowest byte. IQ2 coordinates are 8, 25 or 43; IQ3_XXS
/// ones 4, 12, 20, 28, 36, 44, 52 or 62; IQ3_S ones odd, 1..15; IQ1_S ones int8 -1, 0, +1.
extern const uint64_t kIq2xxsGrid[256];
extern const uint64_t kIq2xsGrid[512];
extern const uint64_t kIq2sGrid[1024];
extern const uint32_t kIq3xxsGrid[256];
extern const uint32_t kIq3sGrid[512];
extern const uint64_t kIq1sGrid[2048];

/// Signs of 8 values stored in 7 bits: bit j (j < 7) of the index is the sign of value j
/// (1 = negative), and value 7's sign makes the count of negatives even. Entry i is the
/// 8-bit mask with that eighth bit added.
inline constexpr std::array<uint8_t, 128> kIq2Signs = [] {
  std::array<uint8_t, 128> t{};
  for (int i = 0; i < 128; ++i) t[i] = uint8_t(i | ((__builtin_popcount(i) & 1) << 7));
  return t;
}();

/// The 16 values a 4-bit index of IQ4_NL / IQ4_XS stands for (times the block's scale).
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

/// IQ1_S / IQ1_M: a group's grid values are shifted by +-kIq1Delta before scaling.
inline constexpr float kIq1Delta = 0.125f;

}  // namespace tessera::quant
