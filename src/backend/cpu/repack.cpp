#include "backend/cpu/repack.h"

#include <cstring>

#include "core/check.h"
#include "core/fp16.h"
#include "quant/blocks.h"

namespace tessera::cpu {
namespace {

using quant::BlockIQ4_NL;
using quant::BlockIQ4_XS;
using quant::BlockQ4_0;
using quant::BlockQ4_K;
using quant::BlockQ6_K;
using quant::BlockQ8_0;

// One group of 16 rows: rows[r] points at row r's blocks.
void repack_group_q4_0(const BlockQ4_0* const* rows, int64_t nb, uint8_t* dst) {
  uint8_t* quants = dst;
  auto* scales = reinterpret_cast<uint16_t*>(dst + nb * 256);
  for (int64_t b = 0; b < nb; ++b) {
    for (int w = 0; w < 4; ++w) {
      for (int r = 0; r < kGroupRows; ++r) {
        std::memcpy(quants + b * 256 + w * 64 + r * 4, rows[r][b].qs + w * 4, 4);
      }
    }
    for (int r = 0; r < kGroupRows; ++r) scales[b * kGroupRows + r] = rows[r][b].d;
  }
}

// IQ4_NL blocks are Q4_0's bytes with another meaning of the nibbles.
void repack_group_iq4_nl(const BlockIQ4_NL* const* rows, int64_t nb, uint8_t* dst) {
  uint8_t* quants = dst;
  auto* scales = reinterpret_cast<uint16_t*>(dst + nb * 256);
  for (int64_t b = 0; b < nb; ++b) {
    for (int w = 0; w < 4; ++w) {
      for (int r = 0; r < kGroupRows; ++r) {
        std::memcpy(quants + b * 256 + w * 64 + r * 4, rows[r][b].qs + w * 4, 4);
      }
    }
    for (int r = 0; r < kGroupRows; ++r) scales[b * kGroupRows + r] = rows[r][b].d;
  }
}

void repack_group_iq4_xs(const BlockIQ4_XS* const* rows, int64_t nb, uint8_t* dst) {
  uint8_t* quants = dst;
  uint8_t* meta = dst + nb * 2048;
  for (int64_t b = 0; b < nb; ++b) {
    for (int w = 0; w < 32; ++w) {
      for (int r = 0; r < kGroupRows; ++r) std::memcpy(quants + b * 2048 + w * 64 + r * 4, rows[r][b].qs + 4 * w, 4);
    }
    uint8_t* mb = meta + b * 128;
    for (int r = 0; r < kGroupRows; ++r) {
      std::memcpy(mb + r * 2, &rows[r][b].d, 2);
      std::memcpy(mb + 32 + r * 4, rows[r][b].scales_l, 4);
      std::memcpy(mb + 96 + r * 2, &rows[r][b].scales_h, 2);
    }
  }
}

void repack_group_q8_0(const BlockQ8_0* const* rows, int64_t nb, uint8_t* dst) {
  uint8_t* quants = dst;
  auto* scales = reinterpret_cast<uint16_t*>(dst + nb * 512);
  for (int64_t b = 0; b < nb; ++b) {
    for (int w = 0; w < 8; ++w) {
      for (int r = 0; r < kGroupRows; ++r) {
        for (int i = 0; i < 4; ++i) {
          quants[b * 512 + w * 64 + r * 4 + i] = uint8_t(rows[r][b].qs[w * 4 + i] + 128);
        }
      }
    }
    for (int r = 0; r < kGroupRows; ++r) scales[b * kGroupRows + r] = rows[r][b].d;
  }
}

void repack_group_q4_K(const BlockQ4_K* const* rows, int64_t nb, uint8_t* dst) {
  uint8_t* quants = dst;
  uint8_t* meta = dst + nb * 2048;
  for (int64_t b = 0; b < nb; ++b) {
    for (int i = 0; i < 4; ++i) {
      for (int w = 0; w < 8; ++w) {
        for (int r = 0; r < kGroupRows; ++r) {
          std::memcpy(quants + b * 2048 + i * 512 + w * 64 + r * 4, rows[r][b].qs + 32 * i + 4 * w, 4);
        }
      }
    }
    auto* d = reinterpret_cast<uint16_t*>(meta + b * 256);
    for (int r = 0; r < kGroupRows; ++r) {
      d[r] = rows[r][b].d;
      d[kGroupRows + r] = rows[r][b].dmin;
      for (int j = 0; j < 3; ++j) std::memcpy(meta + b * 256 + 64 + j * 64 + r * 4, rows[r][b].scales + 4 * j, 4);
    }
  }
}

void repack_group_q6_K(const BlockQ6_K* const* rows, int64_t nb, uint8_t* dst) {
  uint8_t* quants = dst;
  uint8_t* meta = dst + nb * 3072;
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < kGroupRows; ++r) {
      for (int w = 0; w < 32; ++w) std::memcpy(quants + b * 3072 + w * 64 + r * 4, rows[r][b].ql + 4 * w, 4);
      for (int w = 0; w < 16; ++w) {
        std::memcpy(quants + b * 3072 + 2048 + w * 64 + r * 4, rows[r][b].qh + 4 * w, 4);
      }
      for (int s = 0; s < 16; ++s) meta[b * 288 + s * 16 + r] = uint8_t(rows[r][b].scales[s]);
      std::memcpy(meta + b * 288 + 256 + r * 2, &rows[r][b].d, 2);
    }
  }
}

void repack_group_f16(const uint16_t* const* rows, int64_t row_len, uint8_t* dst) {
  auto* out = reinterpret_cast<uint16_t*>(dst);
  for (int64_t e = 0; e < row_len; ++e) {
    for (int r = 0; r < kGroupRows; ++r) out[e * kGroupRows + r] = rows[r][e];
  }
}

// BF16: per element pair p, the 16 rows' pairs (w[2p] low, w[2p + 1] high) as 32-bit words.
void repack_group_bf16(const uint16_t* const* rows, int64_t row_len, uint8_t* dst) {
  auto* out = reinterpret_cast<uint16_t*>(dst);
  for (int64_t p = 0; p < row_len / 2; ++p) {
    for (int r = 0; r < kGroupRows; ++r) {
      out[(p * kGroupRows + r) * 2] = rows[r][2 * p];
      out[(p * kGroupRows + r) * 2 + 1] = rows[r][2 * p + 1];
    }
  }
}

template <typename Block, int64_t kBlockElems, typename F>
void repack_all(const void* src, void* dst, int64_t n_rows, int64_t row_len, F group) {
  const int64_t nb = row_len / kBlockElems;
  const size_t row_bytes = size_t(nb) * sizeof(Block);
  for (int64_t g = 0; g < n_rows / kGroupRows; ++g) {
    const Block* rows[kGroupRows];
    for (int r = 0; r < kGroupRows; ++r) {
      rows[r] = reinterpret_cast<const Block*>(static_cast<const char*>(src) +
                                               size_t(g * kGroupRows + r) * row_bytes);
    }
    group(rows, nb, static_cast<uint8_t*>(dst) + size_t(g * kGroupRows) * row_bytes);
  }
}

}  // namespace

namespace {

int32_t int16_pair(int32_t lo, int32_t hi) {
  return int32_t(uint32_t(uint16_t(lo)) | (uint32_t(uint16_t(hi)) << 16));
}

}  // namespace

void quantize_row_q8x(void (*q8_0)(const float*, void*, int64_t), const float* x, BlockQ8X* y,
                      int64_t n, int32_t zero_point) {
  for (int64_t b = 0; b < n / 32; ++b) {
    BlockQ8_0 q;
    q8_0(x + b * 32, &q, 32);
    std::memcpy(y[b].qs, q.qs, 32);
    y[b].d = f16_to_f32(q.d);
    int32_t sum = 0;
    for (int8_t v : q.qs) sum += v;
    y[b].bias = -zero_point * sum;
  }
}

void quantize_row_q8kx(void (*q8_K)(const float*, void*, int64_t), const float* x, BlockQ8KX* y,
                       int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b) {
    quant::BlockQ8_K q;
    q8_K(x + b * 256, &q, 256);
    std::memcpy(y[b].qs, q.qs, 256);
    y[b].d = q.d;
    for (int j = 0; j < 4; ++j) {
      y[b].sums32[j] = int16_pair(q.bsums[4 * j] + q.bsums[4 * j + 1], q.bsums[4 * j + 2] + q.bsums[4 * j + 3]);
    }
    for (int j = 0; j < 8; ++j) y[b].sums16[j] = int16_pair(q.bsums[2 * j], q.bsums[2 * j + 1]);
  }
}

DType repacked_type(DType t) {
  switch (t) {
    case DType::Q4_0:
      return DType::Q4_0_X16;
    case DType::Q8_0:
      return DType::Q8_0_X16;
    case DType::F16:
      return DType::F16_X16;
    case DType::BF16:
      return DType::BF16_X16;
    case DType::Q4_K:
      return DType::Q4_K_X16;
    case DType::Q6_K:
      return DType::Q6_K_X16;
    case DType::IQ4_NL:
      return DType::IQ4_NL_X16;
    case DType::IQ4_XS:
      return DType::IQ4_XS_X16;
    default:
      return t;
  }
}

int32_t x16_zero_point(DType x16) {
  TESSERA_CHECK(x16 == DType::Q4_0_X16 || x16 == DType::Q8_0_X16 || x16 == DType::IQ4_NL_X16);
  return x16 == DType::Q4_0_X16 ? 8 : 128;
}

bool x16_super_blocks(DType x16) {
  return x16 == DType::Q4_K_X16 || x16 == DType::Q6_K_X16 || x16 == DType::IQ4_XS_X16;
}

bool can_repack(const Tensor* t) {
  return repacked_type(t->type) != t->type && t->ne[3] == 1 &&
         t->ne[1] % kGroupRows == 0 && t->is_contiguous() &&
         (t->type != DType::BF16 || t->ne[0] % 2 == 0);  // BF16_X16 holds element pairs
}

void repack_rows(DType type, const void* src, void* dst, int64_t n_rows, int64_t row_len) {
  TESSERA_CHECK(n_rows % kGroupRows == 0);
  if (type == DType::F16 || type == DType::BF16) {
    TESSERA_CHECK(type == DType::F16 || row_len % 2 == 0);
    for (int64_t g = 0; g < n_rows / kGroupRows; ++g) {
      const uint16_t* rows[kGroupRows];
      for (int r = 0; r < kGroupRows; ++r) {
        rows[r] = static_cast<const uint16_t*>(src) + (g * kGroupRows + r) * row_len;
      }
      uint8_t* out = static_cast<uint8_t*>(dst) + size_t(g * kGroupRows * row_len) * 2;
      if (type == DType::F16) {
        repack_group_f16(rows, row_len, out);
      } else {
        repack_group_bf16(rows, row_len, out);
      }
    }
    return;
  }
  if (type == DType::Q4_K || type == DType::Q6_K || type == DType::IQ4_XS) {
    TESSERA_CHECK(row_len % 256 == 0);
    if (type == DType::Q4_K) {
      repack_all<BlockQ4_K, 256>(src, dst, n_rows, row_len, repack_group_q4_K);
    } else if (type == DType::IQ4_XS) {
      repack_all<BlockIQ4_XS, 256>(src, dst, n_rows, row_len, repack_group_iq4_xs);
    } else {
      repack_all<BlockQ6_K, 256>(src, dst, n_rows, row_len, repack_group_q6_K);
    }
    return;
  }
  TESSERA_CHECK(row_len % 32 == 0);
  if (type == DType::Q4_0) {
    repack_all<BlockQ4_0, 32>(src, dst, n_rows, row_len, repack_group_q4_0);
  } else if (type == DType::IQ4_NL) {
    repack_all<BlockIQ4_NL, 32>(src, dst, n_rows, row_len, repack_group_iq4_nl);
  } else {
    TESSERA_CHECK(type == DType::Q8_0);
    repack_all<BlockQ8_0, 32>(src, dst, n_rows, row_len, repack_group_q8_0);
  }
}

}  // namespace tessera::cpu
