// The GPT-2 family as the reference converter maps it (convert_hf_to_gguf.py: GPT2Model,
// StarCoderModel, RefactModel, MPTModel): transformer.* names (the prefix dropped), GPT-2's
// Conv1D weights transposed, Refact's fused kv and gate_up split, and each one's keys from
// its own config.json names (n_embd, n_layer, ... or MPT's d_model, n_layers, ...).
//
// One deliberate difference: the reference writes feed_forward_length = 4·n_embd for GPT-2,
// StarCoder and MPT whatever config.json says; here config.json's own FFN size (n_inner,
// MPT's expansion_ratio) is taken where it gives one, which is the same number for every
// checkpoint whose FFN is 4·n_embd and the right one (not a file that fails to load) for the
// others.
#include <map>

#include "convert/hf_arch.h"

namespace tessera::convert {
namespace {

/// The keys GPT-2, StarCoder and Refact share (their config.json names), and the FFN size.
Result<std::map<std::string, int64_t>> gpt_ints(const HfConfig& c, const std::string& arch, gguf::Writer& w,
                                                const char* ctx_key) {
  Result<std::map<std::string, int64_t>> v = c.integers({"n_layer", "n_embd", "n_head", ctx_key});
  if (!v) return v.status();
  const std::string a = arch + ".";
  w.set(a + "block_count", uint32_t((*v)["n_layer"]));
  w.set(a + "context_length", uint32_t((*v)[ctx_key]));
  w.set(a + "embedding_length", uint32_t((*v)["n_embd"]));
  w.set(a + "attention.head_count", uint32_t((*v)["n_head"]));
  Result<double> eps = c.number("layer_norm_epsilon");
  if (!eps) return eps.status();
  w.set(a + (arch == "refact" ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon"), float(*eps));
  return v;
}

Status gpt2_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  Result<std::map<std::string, int64_t>> v = gpt_ints(c, arch, w, "n_ctx");
  if (!v) return v.status();
  w.set(arch + ".feed_forward_length", uint32_t(c.integer_or("n_inner", 4 * (*v)["n_embd"])));
  return Status::ok();
}

/// GPTBigCode: multi-query (one key/value head) unless config.json says multi_query false.
Status starcoder_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  Result<std::map<std::string, int64_t>> v = gpt_ints(c, arch, w, "n_positions");
  if (!v) return v.status();
  w.set(arch + ".feed_forward_length", uint32_t(c.integer_or("n_inner", 4 * (*v)["n_embd"])));
  w.set(arch + ".attention.head_count_kv", uint32_t(c.boolean_or("multi_query", true) ? 1 : (*v)["n_head"]));
  return Status::ok();
}

/// Refact's FFN size, as its modeling code computes it: 2/3 of 4·n_embd, rounded up to a
/// multiple of 256.
int64_t refact_ff(int64_t n_embd) {
  const int64_t hidden = 2 * (4 * n_embd) / 3;
  return 256 * ((hidden + 255) / 256);
}

Status refact_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  Result<std::map<std::string, int64_t>> v = gpt_ints(c, arch, w, "n_positions");
  if (!v) return v.status();
  w.set(arch + ".feed_forward_length", uint32_t(refact_ff((*v)["n_embd"])));
  w.set(arch + ".attention.head_count_kv", uint32_t(1));
  return Status::ok();
}

/// MPT's names, and its attn_config: kv_n_heads, clip_qkv, ALiBi.
Status mpt_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w) {
  Result<std::map<std::string, int64_t>> v = c.integers({"n_layers", "max_seq_len", "d_model", "n_heads"});
  if (!v) return v.status();
  const std::string a = arch + ".";
  w.set(a + "block_count", uint32_t((*v)["n_layers"]));
  w.set(a + "context_length", uint32_t((*v)["max_seq_len"]));
  w.set(a + "embedding_length", uint32_t((*v)["d_model"]));
  w.set(a + "feed_forward_length", uint32_t(c.number_or("expansion_ratio", 4.0) * double((*v)["d_model"])));
  w.set(a + "attention.head_count", uint32_t((*v)["n_heads"]));
  const nlohmann::json& ac = c.json().contains("attn_config") ? c.json()["attn_config"] : nlohmann::json::object();
  if (!ac.is_object()) return Status::error("convert: config.json's 'attn_config' is not an object");
  if (ac.contains("kv_n_heads") && ac["kv_n_heads"].is_number_integer() && ac["kv_n_heads"].get<int64_t>() != 0) {
    w.set(a + "attention.head_count_kv", uint32_t(ac["kv_n_heads"].get<int64_t>()));
  }
  w.set(a + "attention.layer_norm_epsilon", 1e-5f);
  if (ac.contains("clip_qkv") && ac["clip_qkv"].is_number()) w.set(a + "attention.clamp_kqv", ac["clip_qkv"].get<float>());
  const bool alibi = ac.value("alibi", false);
  w.set(a + "attention.max_alibi_bias", alibi ? float(ac.value("alibi_bias_max", 8.0)) : 0.0f);
  return Status::ok();
}

constexpr NameMap kGptGlobals[] = {
    {"wte.weight", "token_embd.weight"},     {"wpe.weight", "position_embd.weight"},
    {"ln_f.weight", "output_norm.weight"},   {"ln_f.bias", "output_norm.bias"},
    {"lm_head.weight", "output.weight"},
};

/// GPT-2's and StarCoder's blocks; `conv` is GPT-2's Conv1D transpose (StarCoder's
/// projections are nn.Linear).
#define TESSERA_GPT_LAYER(conv)                                           \
  {"h.{}.ln_1.weight", "blk.{}.attn_norm.weight"},                        \
  {"h.{}.ln_1.bias", "blk.{}.attn_norm.bias"},                            \
  {"h.{}.attn.c_attn.weight", "blk.{}.attn_qkv.weight", conv},            \
  {"h.{}.attn.c_attn.bias", "blk.{}.attn_qkv.bias"},                      \
  {"h.{}.attn.c_proj.weight", "blk.{}.attn_output.weight", conv},         \
  {"h.{}.attn.c_proj.bias", "blk.{}.attn_output.bias"},                   \
  {"h.{}.ln_2.weight", "blk.{}.ffn_norm.weight"},                         \
  {"h.{}.ln_2.bias", "blk.{}.ffn_norm.bias"},                             \
  {"h.{}.mlp.c_fc.weight", "blk.{}.ffn_up.weight", conv},                 \
  {"h.{}.mlp.c_fc.bias", "blk.{}.ffn_up.bias"},                           \
  {"h.{}.mlp.c_proj.weight", "blk.{}.ffn_down.weight", conv},             \
  {"h.{}.mlp.c_proj.bias", "blk.{}.ffn_down.bias"}

constexpr NameMap kGpt2Layers[] = {TESSERA_GPT_LAYER(Transform::Transpose)};
constexpr NameMap kStarcoderLayers[] = {TESSERA_GPT_LAYER(Transform::None)};
#undef TESSERA_GPT_LAYER

/// GPT-2's causal-mask buffers, which some checkpoints save.
constexpr const char* kGpt2Dropped[] = {"*.attn.bias", "*.attn.masked_bias"};

/// Refact: LLaMA's blocks under GPT-2's names, k/v fused in kv, gate/up in gate_up_proj.
constexpr NameMap kRefactLayers[] = {
    {"h.{}.ln_1.weight", "blk.{}.attn_norm.weight"},
    {"h.{}.attn.q.weight", "blk.{}.attn_q.weight"},
    {"h.{}.attn.kv.weight", "blk.{}.attn_k.weight", Transform::None, 0, 2},
    {"h.{}.attn.kv.weight", "blk.{}.attn_v.weight", Transform::None, 1, 2},
    {"h.{}.attn.c_proj.weight", "blk.{}.attn_output.weight"},
    {"h.{}.ln_2.weight", "blk.{}.ffn_norm.weight"},
    {"h.{}.mlp.gate_up_proj.weight", "blk.{}.ffn_gate.weight", Transform::None, 0, 2},
    {"h.{}.mlp.gate_up_proj.weight", "blk.{}.ffn_up.weight", Transform::None, 1, 2},
    {"h.{}.mlp.c_proj.weight", "blk.{}.ffn_down.weight"},
};

constexpr NameMap kMptGlobals[] = {
    {"wte.weight", "token_embd.weight"},
    {"norm_f.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

constexpr NameMap kMptLayers[] = {
    {"blocks.{}.norm_1.weight", "blk.{}.attn_norm.weight"},
    {"blocks.{}.attn.Wqkv.weight", "blk.{}.attn_qkv.weight"},
    {"blocks.{}.attn.out_proj.weight", "blk.{}.attn_output.weight"},
    {"blocks.{}.norm_2.weight", "blk.{}.ffn_norm.weight"},
    {"blocks.{}.ffn.up_proj.weight", "blk.{}.ffn_up.weight"},
    {"blocks.{}.ffn.down_proj.weight", "blk.{}.ffn_down.weight"},
};

}  // namespace

extern const HfArch kHfGpt2{"GPT2LMHeadModel", "gpt2", gpt2_keys, kGptGlobals, kGpt2Layers, {}, nullptr,
                            "transformer.", kGpt2Dropped, "wte.weight"};
extern const HfArch kHfStarcoder{"GPTBigCodeForCausalLM", "starcoder", starcoder_keys, kGptGlobals, kStarcoderLayers,
                                 {}, nullptr, "transformer."};
extern const HfArch kHfRefact{"GPTRefactForCausalLM", "refact", refact_keys, kGptGlobals, kRefactLayers, {}, nullptr,
                              "transformer."};
extern const HfArch kHfMpt{"MPTForCausalLM", "mpt", mpt_keys, kMptGlobals, kMptLayers, {}, nullptr, "transformer."};

}  // namespace tessera::convert
