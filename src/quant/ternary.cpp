// TQ1_0 and TQ2_0: ternary weights (BitNet b1.58, TriLM), x = d * t with t in {-1, 0, 1}
// and d = the block's largest magnitude. Layouts in blocks.h.
//
// Both formats hold the same trits with the same scale, so a model stored in either gives
// the same numbers: the dot products against Q8_K are exact integer sums sum (t_e y_e)
// over the block, scaled once per block in the same order here as in the fast kernels.
//
// TQ1_0 packs five trits into a byte as a base-3 fraction: the trits t0..t4 (each stored
// as t + 1 in {0, 1, 2}, t0 the most significant) make v = sum t_k 3^(4-k) < 243, and the
// byte is ceil(v * 256 / 243). Trit k comes back as ((byte * 3^k mod 256) * 3) >> 8: the
// multiplication moves trit k to the top of the fraction, where * 3 >> 8 reads it.
// This works on every byte value (random bytes decode to some trits in {0, 1, 2}).
#include <cmath>
#include <cstdint>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/k_search.h"
#include "quant/quant.h"
#include "quant/strict_fp.h"  // last: applies to everything below

namespace tessera::quant {
namespace {

using detail::block_count;

constexpr uint8_t kPow3[6] = {1, 3, 9, 27, 81, 243};

// Bytes of TQ1_0's qs with five trits along 32 consecutive bytes (the first 160
// elements), then along 16 bytes (the next 80); qh holds the last 16 elements, 4 trits a
// byte along its 4 bytes.
constexpr int kTq1Wide = 32;                                  // bytes of the first run
constexpr int kTq1Qs = int(sizeof(BlockTQ1_0::qs));           // 48
constexpr int kTq1Qh = int(sizeof(BlockTQ1_0::qh));           // 4
constexpr int kTq1QhFirst = 5 * kTq1Qs;                       // 240: first element in qh

// Trit k (0 = most significant) of a packed TQ1_0 byte, as stored: 0, 1 or 2.
inline int tq1_trit(uint8_t byte, int k) {
  const uint8_t shifted = uint8_t(byte * kPow3[k]);
  return (int(shifted) * 3) >> 8;
}

// ceil(v * 256 / 243): the base-3 fraction v / 243 as a byte.
inline uint8_t tq1_pack(int v) { return uint8_t((v * 256 + 242) / 243); }

// Stored trit (0, 1, 2) of x at the block's inverse scale.
inline int to_trit(float x, float id) { return int(std::lround(x * id)) + 1; }

// The 256 stored trits (0, 1, 2) of a TQ1_0 block in element order.
void unpack_tq1(const BlockTQ1_0& b, uint8_t* t) {
  for (int k = 0; k < 5; ++k) {
    for (int m = 0; m < kTq1Wide; ++m) t[kTq1Wide * k + m] = uint8_t(tq1_trit(b.qs[m], k));
  }
  constexpr int kNarrow = kTq1Qs - kTq1Wide;  // 16
  for (int k = 0; k < 5; ++k) {
    for (int m = 0; m < kNarrow; ++m) {
      t[5 * kTq1Wide + kNarrow * k + m] = uint8_t(tq1_trit(b.qs[kTq1Wide + m], k));
    }
  }
  for (int k = 0; k < 4; ++k) {
    for (int j = 0; j < kTq1Qh; ++j) t[kTq1QhFirst + kTq1Qh * k + j] = uint8_t(tq1_trit(b.qh[j], k));
  }
}

// The 256 stored trits of a TQ2_0 block: element 128 h + 32 l + m at bits 2 l of
// qs[32 h + m]. The value 3 never comes from the quantizer but decodes as t = 2.
void unpack_tq2(const BlockTQ2_0& b, uint8_t* t) {
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 4; ++l) {
      for (int m = 0; m < 32; ++m) t[128 * h + 32 * l + m] = uint8_t((b.qs[32 * h + m] >> (2 * l)) & 3);
    }
  }
}

// sum (t_e - 1) y_e over a block.
int trit_dot(const uint8_t* t, const int8_t* y) {
  int sum = 0;
  for (int e = 0; e < QK_K; ++e) sum += (int(t[e]) - 1) * int(y[e]);
  return sum;
}

// The largest magnitude of a block (the scale) and its inverse (0 for an all-zero block).
struct TernaryScale {
  float d, id;
};
TernaryScale ternary_scale(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < QK_K; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  return {amax, amax != 0.0f ? 1.0f / amax : 0.0f};
}

}  // namespace

// ---- TQ1_0 --------------------------------------------------------------------------

void quantize_tq1_0(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockTQ1_0*>(y);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    const TernaryScale s = ternary_scale(x);
    BlockTQ1_0& b = out[i];
    b.d = f32_to_f16(s.d);
    for (int m = 0; m < kTq1Wide; ++m) {
      int v = 0;
      for (int k = 0; k < 5; ++k) v = 3 * v + to_trit(x[kTq1Wide * k + m], s.id);
      b.qs[m] = tq1_pack(v);
    }
    constexpr int kNarrow = kTq1Qs - kTq1Wide;
    const float* xn = x + 5 * kTq1Wide;
    for (int m = 0; m < kNarrow; ++m) {
      int v = 0;
      for (int k = 0; k < 5; ++k) v = 3 * v + to_trit(xn[kNarrow * k + m], s.id);
      b.qs[kTq1Wide + m] = tq1_pack(v);
    }
    const float* xh = x + kTq1QhFirst;
    for (int j = 0; j < kTq1Qh; ++j) {
      int v = 0;
      for (int k = 0; k < 4; ++k) v = 3 * v + to_trit(xh[kTq1Qh * k + j], s.id);
      b.qh[j] = tq1_pack(3 * v);  // four trits in the top places, the fifth 0
    }
  }
}

void dequantize_tq1_0(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockTQ1_0*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) {
    uint8_t t[QK_K];
    unpack_tq1(in[i], t);
    const float d = f16_to_f32(in[i].d);
    for (int e = 0; e < QK_K; ++e) y[QK_K * i + e] = float(int(t[e]) - 1) * d;
  }
}

float vec_dot_tq1_0_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockTQ1_0*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    uint8_t t[QK_K];
    unpack_tq1(a[i], t);
    sum += float(trit_dot(t, b[i].qs)) * (f16_to_f32(a[i].d) * b[i].d);
  }
  return sum;
}

// ---- TQ2_0 --------------------------------------------------------------------------

void quantize_tq2_0(const float* x, void* y, int64_t n) {
  auto* out = static_cast<BlockTQ2_0*>(y);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    const TernaryScale s = ternary_scale(x);
    BlockTQ2_0& b = out[i];
    b.d = f32_to_f16(s.d);
    for (int h = 0; h < 2; ++h) {
      for (int m = 0; m < 32; ++m) {
        int q = 0;
        for (int l = 0; l < 4; ++l) q |= (to_trit(x[128 * h + 32 * l + m], s.id) & 3) << (2 * l);
        b.qs[32 * h + m] = uint8_t(q);
      }
    }
  }
}

void dequantize_tq2_0(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const BlockTQ2_0*>(x);
  const int64_t nb = block_count(n, QK_K);
  for (int64_t i = 0; i < nb; ++i) {
    uint8_t t[QK_K];
    unpack_tq2(in[i], t);
    const float d = f16_to_f32(in[i].d);
    for (int e = 0; e < QK_K; ++e) y[QK_K * i + e] = float(int(t[e]) - 1) * d;
  }
}

float vec_dot_tq2_0_q8_K(int64_t n, const void* x, const void* y) {
  const auto* a = static_cast<const BlockTQ2_0*>(x);
  const auto* b = static_cast<const BlockQ8_K*>(y);
  const int64_t nb = block_count(n, QK_K);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    uint8_t t[QK_K];
    unpack_tq2(a[i], t);
    sum += float(trit_dot(t, b[i].qs)) * (f16_to_f32(a[i].d) * b[i].d);
  }
  return sum;
}

}  // namespace tessera::quant
