// Random-weight models of any registered architecture, written from the architecture's
// own tensor list: the shapes are what the loader checks, read from the hyper-parameters
// the loader itself derives from the keys (read_hparams, then Arch::configure).
#include "tessera/synth.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "core/rng.h"
#include "model/arch.h"
#include "model/hparams.h"
#include "model/variant_check.h"
#include "quant/convert.h"

namespace tessera {
namespace {

/// The hyper-parameters the loader would derive from w's keys (no tensors yet).
Result<HParams> loader_hparams(const gguf::Writer& w, const Arch& arch) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::from_bytes(w.to_bytes(), "synth");
  if (!f) return f.status();
  Result<HParams> h = read_hparams(**f);
  if (!h) return h.status();
  if (arch.configure != nullptr) TESSERA_RETURN_IF_ERROR(arch.configure(**f, *h));
  return h;
}

int shape_dims(const Shape& ne) {
  int n = kMaxDims;
  while (n > 1 && ne[size_t(n - 1)] == 1) --n;
  return n;
}

}  // namespace

Status write_random_model(const SynthParams& p, const std::string& path) {
  const Arch* arch = find_arch(p.arch);
  if (arch == nullptr) {
    return Status::error("synth: architecture '" + p.arch + "' is not supported (supported: " +
                         registered_arch_names() + ")");
  }
  if (p.type != DType::F32 && p.type != DType::F16 && p.type != DType::BF16) {
    return Status::error("synth: weight type " + std::string(dtype_name(p.type)) +
                         " is not f32, f16 or bf16 (quantize the written model instead)");
  }
  if (p.n_embd <= 0 || p.n_layer <= 0 || p.n_head <= 0 || p.n_head_kv <= 0 || p.n_ff <= 0 || p.n_ctx <= 0) {
    return Status::error("synth: every dimension must be positive");
  }
  gguf::Writer w;
  const std::string a = p.arch + ".";
  w.set("general.architecture", p.arch);
  w.set("general.name", p.name.empty() ? "tessera-synth-" + p.arch : p.name);
  w.set("general.file_type", uint32_t(p.type == DType::F32 ? 0 : p.type == DType::F16 ? 1 : 32));
  w.set(a + "context_length", uint32_t(p.n_ctx));
  w.set(a + "embedding_length", uint32_t(p.n_embd));
  w.set(a + "block_count", uint32_t(p.n_layer));
  w.set(a + "feed_forward_length", uint32_t(p.n_ff));
  w.set(a + "attention.head_count", uint32_t(p.n_head));
  // Multi-head latent attention expands keys and values for every head.
  w.set(a + "attention.head_count_kv", uint32_t(arch->variant.mla ? p.n_head : p.n_head_kv));
  // Both: the architecture's norm reads the one it needs.
  w.set(a + "attention.layer_norm_epsilon", 1e-5f);
  w.set(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  // What the variant reads from keys of its own: token type rows, and an encoder's
  // non-causal attention and pooling (mean, as the encoders' goldens use).
  if (arch->variant.token_types) w.set("tokenizer.ggml.token_type_count", uint32_t(2));
  if (p.rank_head && arch->variant.rank_head == Presence::No) {
    return Status::error("synth: architecture '" + p.arch + "' has no reranker's classification head");
  }
  if (!arch->variant.logits) {
    w.set(a + "attention.causal", false);
    w.set(a + "pooling_type", uint32_t(p.rank_head ? 4 : 1));
  }

  if (arch->variant.mla) {  // a latent of half the width; YaRN's log multiplier (V2-Lite's)
    w.set(a + "attention.kv_lora_rank", uint32_t(std::max<int64_t>(1, p.n_embd / 2)));
    w.set(a + "rope.scaling.yarn_log_multiplier", 0.0707f);
  }
  if (arch->variant.leading_dense) w.set(a + "leading_dense_block_count", uint32_t(p.n_layer > 1 ? 1 : 0));
  if (arch->variant.shared_experts == SharedExperts::Ungated) {  // DeepSeek's: one, the experts unscaled
    w.set(a + "expert_shared_count", uint32_t(1));
    w.set(a + "expert_weights_scale", 1.0f);
  }

  // What the architecture leaves to keys, from how it encodes positions: RoPE's dims and
  // base where it rotates; ALiBi's bias where it reads it from a key rather than fixing it.
  gguf::Writer trial = w;
  trial.set(a + "vocab_size", uint32_t(1));  // any count: positions do not depend on it
  Result<HParams> first = loader_hparams(trial, *arch);
  if (!first) return first.status().with_context("synth");
  if (first->positions == PositionKind::Rope) {
    // MLA: half of each key head rotated, the other half not.
    w.set(a + "rope.dimension_count", uint32_t(arch->variant.mla ? first->head_dim / 2 / 2 * 2 : first->head_dim));
    w.set(a + "rope.freq_base", 10000.0f);
  }
  if (first->positions == PositionKind::Alibi && first->alibi_max_bias == 0) {
    w.set(a + "attention.max_alibi_bias", 8.0f);
  }
  // Experts: as asked (an architecture whose FFN may be either, llama, then has them), or
  // a small mixture of 4, 2 used where every file has experts.
  const bool experts = p.n_expert > 0 ? arch->variant.moe != Presence::No : arch->variant.moe == Presence::Yes;
  if (p.n_expert > 0 && !experts) {
    return Status::error("synth: architecture '" + p.arch + "' has no mixture-of-experts feed-forward");
  }
  if (experts) {
    const int64_t n_expert = p.n_expert > 0 ? p.n_expert : 4;
    const int64_t n_used = p.n_expert > 0 ? p.n_expert_used : 2;
    if (n_used < 1 || n_used > n_expert) return Status::error("synth: the experts used must be 1 to the expert count");
    w.set(a + "expert_count", uint32_t(n_expert));
    w.set(a + "expert_used_count", uint32_t(n_used));
  }
  if (p.vocab) {
    TESSERA_RETURN_IF_ERROR(p.vocab(w));
  } else {
    w.set(a + "vocab_size", uint32_t(p.n_vocab));
  }
  Result<HParams> h = loader_hparams(w, *arch);  // the final keys, with the real n_vocab
  if (!h) return h.status().with_context("synth");

  Rng rng(p.seed);
  std::vector<std::vector<uint8_t>> storage;  // tensor bytes, alive until write()
  int64_t layer = -1;
  BlockVariant chosen = arch->variant;
  if (chosen.moe == Presence::Either) chosen.moe = experts ? Presence::Yes : Presence::No;
  if (p.rank_head) chosen.rank_head = chosen.rank_out = Presence::Yes;
  if (chosen.q_lora == Presence::Either) chosen.q_lora = Presence::No;  // MLA's plain attn_q (V2-Lite)
  for_each_weight(arch->weights, *h, [&](const WeightSpec& spec, const std::string& name, int64_t il) {
    // Optional tensors are left out, except an untied output, as most real files have it
    // (and the output projection then gets the repacked GEMM path, as in benchmarks).
    // A feed-forward the file may have dense or as experts (llama / Mixtral) is as chosen.
    // Leading dense layers have the dense FFN, the others the experts (layer_variant).
    const Presence has = presence_of(il < 0 ? chosen : layer_variant(chosen, *h, il), spec);
    if (has == Presence::No || (has == Presence::Either && spec.model_field != &ModelWeights::output)) return;
    if (il != layer && p.progress && il > 0) p.progress(il, h->n_layer);
    layer = il;
    const Shape ne = spec.shape(*h);
    const int n_dims = shape_dims(ne);
    // Norms and biases stay F32, and BERT's token_types (added to F32 activations), and
    // the expert routers (converters keep them F32).
    const bool f32 = n_dims == 1 || spec.model_field == &ModelWeights::token_types ||
                     spec.layer_field == &LayerWeights::ffn_gate_inp;
    const DType t = f32 ? DType::F32 : p.type;
    // 1-D weights are norms (a multiplier of 1), except one-row matrices; biases and
    // matrices are small.
    const bool is_norm = n_dims == 1 && !spec.matrix && name.ends_with(".weight");
    const float mean = is_norm ? 1.0f : 0.0f;
    const float stddev = is_norm ? 0.0f : 0.02f;
    const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    std::vector<float> values(static_cast<size_t>(n));
    for (float& v : values) v = mean + stddev * rng.normal();
    std::vector<uint8_t>& bytes = storage.emplace_back(dtype_row_size(t, ne[0]) * size_t(n / ne[0]));
    quant::from_float_fn(t)(values.data(), bytes.data(), n);
    w.add_tensor_ref(name, t, ne, n_dims, bytes.data(), bytes.size());
  });
  if (p.progress) p.progress(h->n_layer, h->n_layer);
  return w.write(path);
}

}  // namespace tessera
