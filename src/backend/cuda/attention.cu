// The fused attention op (ops::attention), what the CPU's ops/attention.cpp supports:
// q F32 [hd, n_tokens, n_head] with dense rows (any other strides), K and V both F32 or
// both F16 [hd, n_kv, n_head_kv] with dense rows (views into the cache: any row and head
// strides), an optional F32 mask [n_kv, >= n_tokens] with dense rows (one row per token,
// its dims 2-3 unused), ALiBi slopes, grouped-query heads; the result F32
// [hd, n_head, n_tokens], contiguous. Refused, and so left to the CPU: BF16 or mixed K/V,
// head dimensions over 256, ALiBi with more than 256 heads.
//
// attention_plan.h picks the kernel: the decode kernel (attention_decode.cu) for at most
// 8 query rows per KV head, else the flash kernel (attention_flash.cu); either may split
// the cells over blocks, after which reduce_kernel below merges the partial softmaxes.
#include <climits>
#include <variant>

#include "backend/cuda/attention.cuh"
#include "backend/cuda/ops.cuh"

namespace tessera::cuda {
namespace {

constexpr int kReduceThreads = 128;

// Row blockIdx.x of KV head blockIdx.y: the splits' (max m_s, sum l_s, acc_s) merged as
// sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M), M the largest m_s.
__global__ void reduce_kernel(AttnArgs a) {
  const int r = blockIdx.x, hk = blockIdx.y;
  const int64_t p0 = int64_t(hk) * a.splits * a.rows + r;
  float mx = -INFINITY;
  for (int s = 0; s < a.splits; ++s) mx = fmaxf(mx, a.part_ml[2 * (p0 + int64_t(s) * a.rows)]);
  float* out = a.out + (int64_t(row_token(a, r)) * a.n_head + row_head(a, hk, r)) * a.hd;
  for (int d = threadIdx.x; d < a.hd; d += blockDim.x) {
    float sum = 0.0f, acc = 0.0f;
    if (mx != -INFINITY) {
      for (int s = 0; s < a.splits; ++s) {
        const int64_t p = p0 + int64_t(s) * a.rows;
        const float ms = a.part_ml[2 * p];
        const float e = ms == -INFINITY ? 0.0f : expf(ms - mx);
        sum += a.part_ml[2 * p + 1] * e;
        acc += a.part_acc[p * a.hd + d] * e;
      }
    }
    out[d] = sum > 0.0f ? acc / sum : 0.0f;
  }
}

bool fits_int(const Tensor* t) {
  for (int64_t n : t->ne) {
    if (n < 0 || n > INT_MAX / 2) return false;  // room for a split's rounding up
  }
  return true;
}

}  // namespace

bool attention_supports(const Tensor* node) {
  const Tensor* q = node->src[0];
  const Tensor* k = node->src[1];
  const Tensor* v = node->src[2];
  const Tensor* mask = node->src[3];
  const auto* ap = std::get_if<AttentionParams>(&node->params);
  if (ap == nullptr || q == nullptr || k == nullptr || v == nullptr) return false;
  if (ap->softcap != 0.0f) return false;  // soft-capped scores: the CPU's
  if (node->type != DType::F32 || !node->is_contiguous() || q->type != DType::F32 ||
      q->nb[0] != 4 || !aligned(q, 4))
    return false;
  if (k->type != v->type || (k->type != DType::F32 && k->type != DType::F16)) return false;
  const size_t es = dtype_traits(k->type).type_size;
  if (k->nb[0] != es || v->nb[0] != es || !aligned(k, es) || !aligned(v, es)) return false;
  if (mask != nullptr && (mask->type != DType::F32 || mask->nb[0] != 4 || !aligned(mask, 4) ||
                          mask->ne[0] != k->ne[1] || mask->ne[1] < q->ne[1]))
    return false;
  const int64_t hd = q->ne[0];
  if (attn_head_bucket(hd) == 0 || k->ne[0] != hd || v->ne[0] != hd || k->ne[1] != v->ne[1] ||
      k->ne[2] != v->ne[2])
    return false;
  if (k->ne[2] == 0 || q->ne[2] % k->ne[2] != 0 || k->ne[2] > 65535)
    return false;  // grid dimension y
  if (!fits_int(q) || !fits_int(k) || q->ne[1] * (q->ne[2] / k->ne[2]) > INT_MAX / 2) return false;
  if (node->ne[0] != hd || node->ne[1] != q->ne[2] || node->ne[2] != q->ne[1]) return false;
  return ap->max_bias <= 0.0f || (mask != nullptr && q->ne[2] <= kAttnMaxAlibiHeads);
}

void attention_compute(Tensor* node, Ctx& ctx) {
  if (node->nelements() == 0) return;
  const Tensor* q = node->src[0];
  const Tensor* k = node->src[1];
  const Tensor* v = node->src[2];
  const Tensor* mask = node->src[3];
  const AttentionParams ap = std::get<AttentionParams>(node->params);

  AttnArgs a{};
  a.q = static_cast<const char*>(q->data);
  a.q_nb1 = int64_t(q->nb[1]);
  a.q_nb2 = int64_t(q->nb[2]);
  a.k = static_cast<const char*>(k->data);
  a.v = static_cast<const char*>(v->data);
  a.k_nb1 = int64_t(k->nb[1]);
  a.k_nb2 = int64_t(k->nb[2]);
  a.v_nb1 = int64_t(v->nb[1]);
  a.v_nb2 = int64_t(v->nb[2]);
  a.mask = mask ? static_cast<const char*>(mask->data) : nullptr;
  a.mask_nb1 = mask ? int64_t(mask->nb[1]) : 0;
  a.out = static_cast<float*>(node->data);
  a.hd = int(q->ne[0]);
  a.n_tokens = int(q->ne[1]);
  a.n_head = int(q->ne[2]);
  a.n_head_kv = int(k->ne[2]);
  a.group = a.n_head / a.n_head_kv;
  a.n_kv = int(k->ne[1]);
  a.rows = a.group * a.n_tokens;
  a.scale = ap.scale;
  a.alibi = ap.max_bias > 0.0f;

  AttnSlopes sl{};
  if (a.alibi) {
    for (int h = 0; h < a.n_head; ++h) sl.v[h] = alibi_slope(h, a.n_head, ap.max_bias);
  }
  const AttnPlan p = plan_attention(a.hd, a.rows, a.n_kv, a.n_head_kv, ctx.sm_count);
  a.splits = p.splits;
  a.cells_per_split = int(p.cells_per_split);
  if (p.splits > 1) {
    const size_t parts = size_t(a.n_head_kv) * size_t(p.splits) * size_t(a.rows);
    a.part_ml = ctx.take<float>(2 * parts);
    a.part_acc = ctx.take<float>(parts * size_t(a.hd));
  }

  const bool f16 = k->type == DType::F16;
  if (p.decode) {
    f16 ? launch_attn_decode<__half>(a, sl, p, ctx) : launch_attn_decode<float>(a, sl, p, ctx);
  } else {
    f16 ? launch_attn_flash<__half>(a, sl, p, ctx) : launch_attn_flash<float>(a, sl, p, ctx);
  }
  if (p.splits > 1) {
    reduce_kernel<<<dim3(unsigned(a.rows), unsigned(a.n_head_kv)), kReduceThreads, 0, ctx.stream>>>(
        a);
    TESSERA_CUDA_LAUNCHED();
  }
}

}  // namespace tessera::cuda
