// Weights repacked at load into the interleaved layouts of the CPU's int8 GEMM kernels
// (DType::Q4_0_X16, DType::Q8_0_X16), and the activation blocks those kernels read.
//
// Why: a dot product per output reads one row and one activation column, converts one
// fp16 scale per block and sums the block's lanes horizontally. With 16 rows
// interleaved, one 512-bit register holds 4 bytes of each of 16 rows, a VNNI
// instruction (vpdpbusd) advances 16 outputs by 4 products each against one broadcast
// activation word, the 16 scales of a block convert with one instruction, and a
// register tile of 16 rows x several columns reuses each weight load for every column.
//
// Layout of one group of 16 rows (row_len k, nb = k / 32 blocks), in this order:
//   quants: nb blocks x kQuantBytes, where a block is, for each 4-element word w of the
//           original block (Q4_0: the 16 bytes of nibble pairs, 4 words; Q8_0: the 32
//           quants, 8 words), 16 rows x 4 bytes;
//   scales: nb blocks x 16 fp16 (row 0..15), the blocks' original d.
// Q4_0 bytes keep their nibble pairs (low nibble = element j, high = element j + 16);
// Q8_0 quants are stored as q + 128 (unsigned).
// Q4_K_X16 (super-blocks of 256, nb = k / 256) per super-block: quants, 4 x 512 bytes:
// for each 64-element chunk i, words w = 0..7 of the row's 32 bytes qs[32i..32i+31],
// 16 rows x 4 bytes (low nibbles are sub-block 2i, high nibbles 2i + 1); then, after all
// quants: per super-block d[16], dmin[16] (fp16) and the 12 packed scale bytes as three
// words x 16 rows (word j of row r = scales[4j..4j+3]), decoded in registers.
// Q6_K_X16 per super-block: quants, 3072 bytes: the 128 ql bytes as 32 words x 16 rows,
// then the 64 qh bytes as 16 words x 16 rows; after all quants, per super-block the
// int8 scales [16 sub-blocks][16 rows] and d[16] (fp16).
// IQ4_NL_X16 is Q4_0_X16's layout with IQ4_NL's nibbles and d.
// IQ4_XS_X16 per super-block: quants, 2048 bytes: the 128 qs bytes as 32 words x 16 rows
// (word k = qs[4k..4k+3] lies in sub-block k / 4, its low nibbles are elements 4 (k % 4)..+3
// of that sub-block, its high nibbles the same + 16); after all quants, per super-block
// d[16] (fp16), the 4 scales_l bytes as one word x 16 rows and scales_h[16] (128 bytes).
// F16_X16 is simpler: for each column e of the group, the 16 rows' halves (32 bytes), so
// one load and one conversion give element e of all 16 rows as floats.
// BF16_X16 (row_len even) pairs the elements as vdpbf16ps reads them: for each element
// pair p, the 16 rows' pairs as 32-bit words (row r's w[2p] in the low half, w[2p + 1] in
// the high half; 64 bytes), so one load holds two elements of all 16 rows.
// A group is as many bytes as its 16 rows in the file layout, so tensor strides and
// sizes do not change.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor.h"

namespace tessera::cpu {

constexpr int64_t kGroupRows = 16;

/// 32 activations quantized for the _X16 kernels: the Q8_0 quants and scale (bit-identical
/// to quantize_q8_0), plus the term that takes the weights' zero point back out.
struct BlockQ8X {
  int8_t qs[32];
  float d;       // x ~ d * q
  int32_t bias;  // -zero_point * sum(qs): the kernels start each block's sum from it
};
static_assert(sizeof(BlockQ8X) == 40);

/// 256 activations quantized for the k-quant _X16 kernels: Q8_K's quants and scale
/// (bit-identical to quantize_q8_K), and sums of 32-element sub-blocks in int16 pairs.
struct BlockQ8KX {
  int8_t qs[256];
  float d;
  int32_t sums32[4];  // sub-blocks 2j (low half) and 2j + 1 (high half), int16 each
  int32_t sums16[8];  // the same for 16-element sub-blocks (Q8_K's bsums 2j, 2j + 1)
};
static_assert(sizeof(BlockQ8KX) == 308);

/// Quantizes n floats (a multiple of 32 / 256) into activation rows for the _X16 kernels
/// with a level's Q8_0 / Q8_K row quantizer (quant_kernels.h), adding the sums the kernels
/// need (bias = -zero_point * sum(qs); the sub-block sum pairs).
void quantize_row_q8x(void (*q8_0)(const float*, void*, int64_t), const float* x, BlockQ8X* y,
                      int64_t n, int32_t zero_point);
void quantize_row_q8kx(void (*q8_K)(const float*, void*, int64_t), const float* x, BlockQ8KX* y,
                       int64_t n);

/// The repacked type of a file type, or `t` itself when it has none.
DType repacked_type(DType t);
/// The unsigned weights' zero point of a quantized _X16 type with BlockQ8X activations
/// (Q4_0: 8, Q8_0 and IQ4_NL: 128).
int32_t x16_zero_point(DType x16);
/// Whether a quantized _X16 type is made of 256-element super-blocks and reads BlockQ8KX
/// activations (Q4_K, Q6_K, IQ4_XS) rather than BlockQ8X ones.
bool x16_super_blocks(DType x16);
/// Whether `t` (a weight tensor) can be repacked: a type with an _X16 form, a matrix or a
/// stack of them (the experts of a mixture-of-experts layer, dim 2), rows a multiple of 16
/// (so no group spans two matrices), dense; BF16 rows of an even length.
bool can_repack(const Tensor* t);
/// Writes the _X16 layout of n_rows (a multiple of 16) rows of row_len elements of type
/// `type` from src to dst (the same number of bytes; the two must not overlap).
void repack_rows(DType type, const void* src, void* dst, int64_t n_rows, int64_t row_len);

}  // namespace tessera::cpu
