// The op set: an enum plus one small params struct per op that needs parameters.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

namespace tessera {

constexpr int kMaxDims = 4;
using Strides = std::array<size_t, kMaxDims>;

enum class Op : uint8_t {
  None,       // a leaf: weight, input, or cache; has no computation
  GetRows,    // rows of src0 picked by the I32 ids in src1
  SetRows,    // writes rows of src1 into src0 at the I32 ids in src2; result is src0 itself
  Add,        // src0 + src1, src1 broadcast over src0
  Mul,        // src0 * src1, src1 broadcast over src0
  Scale,      // src0 * s
  MulMat,     // result[m, n] = dot(src0 row m, src1 row n); src0 broadcast over dims 2-3
  RmsNorm,    // x / sqrt(mean(x^2) + eps) along dim 0
  Norm,       // (x - mean) / sqrt(var + eps) along dim 0
  Rope,       // rotary position embedding; src1 = I32 positions (one per dim-2 index),
              // src2 = optional F32 per-pair frequency divisors [n_dims / 2]
  SoftMax,    // softmax(src0 * scale + src1 mask) along dim 0; mask optional
  Silu,       // x * sigmoid(x)
  Gelu,       // tanh approximation
  ReluSqr,    // max(x, 0)^2 (Persimmon's feed-forward)
  Clamp,      // min(max(x, lo), hi)
  Softcap,    // cap * tanh(x / cap) (Gemma 2's logit soft-capping); ScaleParams: the cap
  Cpy,        // converts src0 into the layout and type of src1; result is a view of src1
  Cont,       // contiguous copy of src0 (possibly with type change)
  Concat,     // src0 and src1 joined along `dim`
  Attention,  // per head: softmax(cap(scale q k^T) + slope * mask) v; src0 q, src1 k, src2 v,
              // src3 mask; slope 1, or ALiBi's per-head slope when max_bias > 0; cap: the
              // identity, or softcap tanh(. / softcap) when softcap > 0
  // Mixture-of-experts routing and experts.
  Sigmoid,    // 1 / (1 + exp(-x))
  Div,        // src0 / src1, src1 broadcast over src0
  SumRows,    // the sum of each row (along dim 0): [1, ne1, ne2, ne3]
  TopK,       // I32 ids of the k largest of each row of src0, largest first (ties: lower id)
  TakeAlong,  // result[i, r] = src0[src1[i, r], r]: each row's elements at its I32 ids
  MulMatId,   // result[:, i, t] = src0 expert src2[i, t] (a plane of src0) times src1[:, i, t]
  // The ops of backward graphs (src/train): gradients and what they need.
  Acc,            // src0 (or zeros when null) with src1 added into a strided window of it
  SumTo,          // src0 summed down to a smaller shape (the gradient of a broadcast)
  GetRowsBack,    // zeros [src0.ne0, n_rows] with the rows of src0 added at the ids in src1
  TakeAlongBack,  // d a of take_along: zeros [ne0, src1's rows] with src0[i, r] added at
                  // element src1[i, r] of row r
  RmsNormBack,    // d x of rms_norm: src0 x, src1 d y
  SoftMaxBack,    // d x of soft_max: src0 d y, src1 y (the forward result)
  SiluBack,       // d x of silu: src0 x, src1 d y
  AttentionBack,  // d q, d k, d v of attention, packed: src0-3 as Attention's, src4 d out
  CrossEntropy,   // mean over rows of -log softmax(src0)[target]; src1 I32 targets (< 0: skipped)
  CrossEntropyBack,  // d logits of cross_entropy: src0 logits, src1 targets, src2 d loss [1]
  View,       // a window into view_src (strides and offset)
  Reshape,    // same data, other shape (contiguous sources only)
  Permute,    // axes reordered
  Transpose,  // dims 0 and 1 swapped
  Count
};

std::string_view op_name(Op op);

/// True for ops whose result is a window into another tensor's memory.
inline bool op_is_view(Op op) {
  return op == Op::View || op == Op::Reshape || op == Op::Permute || op == Op::Transpose;
}

struct NormParams {
  float eps;
};
struct ScaleParams {
  float scale;
};
enum class RopeMode : int32_t {
  Normal = 0,  // rotates pairs (x[2i], x[2i+1]) — LLaMA as stored in GGUF
  NeoX = 2,    // rotates pairs (x[i], x[i + n_dims/2]) — GPT-NeoX, Falcon, ...
};
/// YaRN and the attention factor of a rope (ggml's rope_ext): the defaults leave the plain
/// rotation. Pair i's angle mixes the interpolated theta (freq_scale theta) with the
/// extrapolated one by ramp(i) ext_factor, the ramp falling from 1 to 0 between the
/// correction dims of beta_fast and beta_slow rotations over n_ctx_orig positions; cos and
/// sin are multiplied by attn_factor, and by 1 + 0.1 ln(1 / freq_scale) when ext_factor != 0.
struct RopeYarn {
  float ext_factor = 0.0f;
  float attn_factor = 1.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int32_t n_ctx_orig = 0;
  /// Whether the result is the plain rotation (no YaRN mix, magnitude 1).
  bool plain() const { return ext_factor == 0.0f && attn_factor == 1.0f; }
  /// The magnitude cos and sin are multiplied by for a freq_scale.
  float magnitude(float freq_scale) const;
  /// The first and last pair of the YaRN ramp: ggml_rope_yarn_corr_dims.
  void corr_dims(int n_dims, float freq_base, float dims[2]) const;
  bool operator==(const RopeYarn&) const = default;
};
struct RopeParams {
  int32_t n_dims;  // leading dimensions rotated; the rest pass through
  RopeMode mode;
  float freq_base;
  float freq_scale;
  bool inverse = false;  // rotates by -theta: the gradient of the forward rotation
  RopeYarn yarn = {};
};
struct SoftMaxParams {
  float scale;
};
struct ConcatParams {
  int32_t dim;
};
struct AttentionParams {
  float scale;
  float max_bias = 0.0f;  // ALiBi: > 0 multiplies head h's mask by its slope (alibi_slope)
  float softcap = 0.0f;   // > 0: each score scale q.k becomes softcap tanh(score / softcap)
                          // before the mask is added (Gemma 2)
};
struct TopKParams {
  int32_t k;
};
struct ClampParams {
  float lo;
  float hi;
};
struct PermuteParams {
  std::array<int8_t, kMaxDims> axes;  // source dim i went to position axes[i]
};
struct AccParams {
  Strides nb;     // the window's strides in the result's (contiguous) memory, in bytes
  size_t offset;  // the window's first element, in bytes from the result's start
};

/// ALiBi's slope of head `h` of `n_head` for a maximum bias `max_bias` (Press et al.; the
/// heads past the largest power of two get the interleaved slopes of twice as many heads).
float alibi_slope(int64_t h, int64_t n_head, float max_bias);

using OpParams =
    std::variant<std::monostate, NormParams, ScaleParams, RopeParams, SoftMaxParams, ConcatParams,
                 AttentionParams, ClampParams, AccParams, PermuteParams, TopKParams>;

}  // namespace tessera
