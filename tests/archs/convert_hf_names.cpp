#include "convert_hf_names.h"

#include <cstring>
#include <map>
#include <vector>

namespace tessera::test {
namespace {

using nlohmann::json;
using Names = std::map<std::string, std::string>;

/// BERT's names (BertForMaskedLM's: with the "bert." prefix).
std::string bert_name(const std::string& g) {
  static const Names globals = {{"token_embd.weight", "embeddings.word_embeddings.weight"},
                                {"token_types.weight", "embeddings.token_type_embeddings.weight"},
                                {"position_embd.weight", "embeddings.position_embeddings.weight"},
                                {"token_embd_norm.weight", "embeddings.LayerNorm.weight"},
                                {"token_embd_norm.bias", "embeddings.LayerNorm.bias"}};
  if (globals.count(g)) return "bert." + globals.at(g);
  const size_t dot = g.find('.', 4);
  const std::string il = g.substr(4, dot - 4), rest = g.substr(dot + 1);
  static const Names layer = {
      {"attn_q", "attention.self.query"}, {"attn_k", "attention.self.key"}, {"attn_v", "attention.self.value"},
      {"attn_output", "attention.output.dense"}, {"attn_output_norm", "attention.output.LayerNorm"},
      {"ffn_up", "intermediate.dense"}, {"ffn_down", "output.dense"}, {"layer_output_norm", "output.LayerNorm"}};
  const size_t kind = rest.rfind('.');
  return "bert.encoder.layer." + il + "." + layer.at(rest.substr(0, kind)) + rest.substr(kind);
}

/// The LLaMA-layout architectures' names (model.layers.N.*).
std::string llama_name(const std::string& g, HfStyle style) {
  static const Names globals = {{"token_embd.weight", "model.embed_tokens.weight"},
                                {"output_norm.weight", "model.norm.weight"},
                                {"output_norm.bias", "model.norm.bias"},
                                {"output.weight", "lm_head.weight"}};
  if (globals.count(g)) return globals.at(g);
  if (!g.starts_with("blk.")) return "";
  const size_t dot = g.find('.', 4);
  const std::string il = g.substr(4, dot - 4), rest = g.substr(dot + 1);
  Names layer = {
      {"attn_norm.weight", "input_layernorm.weight"},     {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},       {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},           {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},           {"attn_output.weight", "self_attn.o_proj.weight"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"},  {"attn_k_norm.weight", "self_attn.k_norm.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},            {"ffn_down.weight", "mlp.down_proj.weight"},
      {"ffn_gate_inp.weight", "mlp.gate.weight"},         {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"},
      {"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"},
      {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"},
      {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight"}};
  if (style == HfStyle::Mixtral) layer["ffn_gate_inp.weight"] = "block_sparse_moe.gate.weight";
  if (style == HfStyle::Gemma2 || style == HfStyle::Olmo2) {
    layer["post_attention_norm.weight"] = "post_attention_layernorm.weight";
    layer["post_ffw_norm.weight"] = "post_feedforward_layernorm.weight";
  }
  if (style == HfStyle::Gemma2) layer["ffn_norm.weight"] = "pre_feedforward_layernorm.weight";
  if (style == HfStyle::Starcoder2) {
    layer["ffn_up.weight"] = "mlp.c_fc.weight";
    layer["ffn_down.weight"] = "mlp.c_proj.weight";
    layer["ffn_up.bias"] = "mlp.c_fc.bias";
    layer["ffn_down.bias"] = "mlp.c_proj.bias";
    layer["attn_norm.bias"] = "input_layernorm.bias";
    layer["ffn_norm.bias"] = "post_attention_layernorm.bias";
    layer["attn_output.bias"] = "self_attn.o_proj.bias";
  }
  if (style == HfStyle::Deepseek2) {
    layer["attn_kv_a_mqa.weight"] = "self_attn.kv_a_proj_with_mqa.weight";
    layer["attn_kv_a_norm.weight"] = "self_attn.kv_a_layernorm.weight";
    layer["attn_kv_b.weight"] = "self_attn.kv_b_proj.weight";
    layer["ffn_gate_shexp.weight"] = "mlp.shared_experts.gate_proj.weight";
    layer["ffn_up_shexp.weight"] = "mlp.shared_experts.up_proj.weight";
    layer["ffn_down_shexp.weight"] = "mlp.shared_experts.down_proj.weight";
  }
  if (style == HfStyle::Phi3) {
    layer["attn_qkv.weight"] = "self_attn.qkv_proj.weight";
    layer["ffn_up.weight"] = "mlp.gate_up_proj.weight";
  }
  return "model.layers." + il + "." + layer.at(rest);
}

/// The other architectures' modules: outside the blocks, the block prefix, in a block
/// (GGUF names without .weight/.bias, which carry over).
struct Modules {
  Names globals;
  std::string block;  // before the layer index
  Names layer;
};

const Modules& modules_of(HfStyle style) {
  // GPT-2's checkpoints name its modules without "transformer." (the reference maps both).
  static const Modules gpt2 = {{{"token_embd", "wte"}, {"position_embd", "wpe"}, {"output_norm", "ln_f"},
                                {"output", "lm_head"}},
                               "h.",
                               {{"attn_norm", "ln_1"}, {"attn_qkv", "attn.c_attn"}, {"attn_output", "attn.c_proj"},
                                {"ffn_norm", "ln_2"}, {"ffn_up", "mlp.c_fc"}, {"ffn_down", "mlp.c_proj"}}};
  static const Modules starcoder = {{{"token_embd", "transformer.wte"}, {"position_embd", "transformer.wpe"},
                                     {"output_norm", "transformer.ln_f"}, {"output", "lm_head"}},
                                    "transformer.h.", gpt2.layer};
  static const Modules refact = {{{"token_embd", "transformer.wte"}, {"output_norm", "transformer.ln_f"},
                                  {"output", "lm_head"}},
                                 "transformer.h.",
                                 {{"attn_norm", "ln_1"}, {"attn_q", "attn.q"}, {"attn_k", "attn.kv"}, {"attn_v", "attn.kv"},
                                  {"attn_output", "attn.c_proj"}, {"ffn_norm", "ln_2"}, {"ffn_gate", "mlp.gate_up_proj"},
                                  {"ffn_up", "mlp.gate_up_proj"}, {"ffn_down", "mlp.c_proj"}}};
  static const Modules mpt = {{{"token_embd", "transformer.wte"}, {"output_norm", "transformer.norm_f"}},
                              "transformer.blocks.",
                              {{"attn_norm", "norm_1"}, {"attn_qkv", "attn.Wqkv"}, {"attn_output", "attn.out_proj"},
                               {"ffn_norm", "norm_2"}, {"ffn_up", "ffn.up_proj"}, {"ffn_down", "ffn.down_proj"}}};
  static const Modules neox = {{{"token_embd", "gpt_neox.embed_in"}, {"output_norm", "gpt_neox.final_layer_norm"},
                                {"output", "embed_out"}},
                               "gpt_neox.layers.",
                               {{"attn_norm", "input_layernorm"}, {"attn_qkv", "attention.query_key_value"},
                                {"attn_output", "attention.dense"}, {"ffn_norm", "post_attention_layernorm"},
                                {"ffn_up", "mlp.dense_h_to_4h"}, {"ffn_down", "mlp.dense_4h_to_h"}}};
  static const Modules bloom = {{{"token_embd", "transformer.word_embeddings"},
                                 {"token_embd_norm", "transformer.word_embeddings_layernorm"},
                                 {"output_norm", "transformer.ln_f"}, {"output", "lm_head"}},
                                "transformer.h.",
                                {{"attn_norm", "input_layernorm"}, {"attn_qkv", "self_attention.query_key_value"},
                                 {"attn_output", "self_attention.dense"}, {"ffn_norm", "post_attention_layernorm"},
                                 {"ffn_up", "mlp.dense_h_to_4h"}, {"ffn_down", "mlp.dense_4h_to_h"}}};
  // Falcon-40B (new_decoder_architecture): the attention's norm is ln_attn, the FFN's ln_mlp.
  static const Modules falcon40b = {bloom.globals, bloom.block,
                                    {{"attn_norm", "ln_mlp"}, {"attn_norm_2", "ln_attn"},
                                     {"attn_qkv", "self_attention.query_key_value"},
                                     {"attn_output", "self_attention.dense"}, {"ffn_up", "mlp.dense_h_to_4h"},
                                     {"ffn_down", "mlp.dense_4h_to_h"}}};
  static const Modules persimmon = {{{"token_embd", "model.embed_tokens"}, {"output_norm", "model.final_layernorm"},
                                     {"output", "lm_head"}},
                                    "model.layers.",
                                    {{"attn_norm", "input_layernorm"}, {"attn_qkv", "self_attn.query_key_value"},
                                     {"attn_output", "self_attn.dense"}, {"attn_q_norm", "self_attn.q_layernorm"},
                                     {"attn_k_norm", "self_attn.k_layernorm"}, {"ffn_norm", "post_attention_layernorm"},
                                     {"ffn_up", "mlp.dense_h_to_4h"}, {"ffn_down", "mlp.dense_4h_to_h"}}};
  static const Modules nomic = {{{"token_embd", "embeddings.word_embeddings"},
                                 {"token_types", "embeddings.token_type_embeddings"}, {"token_embd_norm", "emb_ln"}},
                                "encoder.layers.",
                                {{"attn_qkv", "attn.Wqkv"}, {"attn_output", "attn.out_proj"}, {"attn_output_norm", "norm1"},
                                 {"ffn_up", "mlp.fc11"}, {"ffn_gate", "mlp.fc12"}, {"ffn_down", "mlp.fc2"},
                                 {"layer_output_norm", "norm2"}}};
  switch (style) {
    case HfStyle::Gpt2: return gpt2;
    case HfStyle::Starcoder: return starcoder;
    case HfStyle::Refact: return refact;
    case HfStyle::Mpt: return mpt;
    case HfStyle::GptNeox: return neox;
    case HfStyle::Bloom:
    case HfStyle::Falcon: return bloom;  // Falcon-7B's names are BLOOM's (it has no embedding norm)
    case HfStyle::Falcon40b: return falcon40b;
    case HfStyle::Persimmon: return persimmon;
    default: return nomic;
  }
}


int64_t key_int(const gguf::File& f, const std::string& key) { return f.find(key)->as_int().value(); }
double key_float(const gguf::File& f, const std::string& key) { return *f.find(key)->as_float(); }

/// The config.json of the architectures that keep their own key names (GPT-2's n_embd,
/// MPT's d_model, ...), with the settings the reference requires of them.
json own_config(const gguf::File& f, HfStyle style, const std::string& a) {
  const int64_t n_embd = key_int(f, a + "embedding_length"), n_ff = key_int(f, a + "feed_forward_length");
  const int64_t n_layer = key_int(f, a + "block_count"), n_head = key_int(f, a + "attention.head_count");
  const int64_t ctx = key_int(f, a + "context_length");
  const int64_t n_kv = f.find(a + "attention.head_count_kv") ? key_int(f, a + "attention.head_count_kv") : n_head;
  const double eps = f.find(a + "attention.layer_norm_epsilon") ? key_float(f, a + "attention.layer_norm_epsilon")
                                                                 : key_float(f, a + "attention.layer_norm_rms_epsilon");
  switch (style) {
    case HfStyle::Gpt2:
      return {{"n_layer", n_layer}, {"n_embd", n_embd}, {"n_head", n_head}, {"n_ctx", ctx}, {"n_positions", ctx},
              {"n_inner", n_ff}, {"layer_norm_epsilon", eps}};
    case HfStyle::Starcoder:
      return {{"n_layer", n_layer}, {"n_embd", n_embd}, {"n_head", n_head}, {"n_positions", ctx}, {"n_inner", n_ff},
              {"multi_query", n_kv == 1}, {"layer_norm_epsilon", eps}};
    case HfStyle::Refact:
      return {{"n_layer", n_layer}, {"n_embd", n_embd}, {"n_head", n_head}, {"n_positions", ctx},
              {"multi_query", true}, {"layer_norm_epsilon", eps}};
    case HfStyle::Mpt:
      return {{"n_layers", n_layer}, {"d_model", n_embd}, {"n_heads", n_head}, {"max_seq_len", ctx},
              {"expansion_ratio", n_ff / n_embd}, {"no_bias", true},
              {"attn_config", {{"kv_n_heads", n_kv}, {"alibi", true}, {"clip_qkv", nullptr},
                               {"alibi_bias_max", key_float(f, a + "attention.max_alibi_bias")}}}};
    case HfStyle::GptNeox:
      return {{"num_hidden_layers", n_layer}, {"hidden_size", n_embd}, {"num_attention_heads", n_head},
              {"intermediate_size", n_ff}, {"max_position_embeddings", ctx}, {"layer_norm_eps", eps},
              {"rotary_pct", double(key_int(f, a + "rope.dimension_count")) / double(n_embd / n_head)},
              {"use_parallel_residual", *f.find(a + "use_parallel_residual")->as_bool()}};
    case HfStyle::Bloom:
      return {{"n_layer", n_layer}, {"hidden_size", n_embd}, {"n_head", n_head}, {"seq_length", ctx},
              {"layer_norm_epsilon", eps}};
    case HfStyle::Falcon:
    case HfStyle::Falcon40b:
      return {{"num_hidden_layers", n_layer}, {"hidden_size", n_embd}, {"num_attention_heads", n_head},
              {"num_kv_heads", n_kv}, {"ffn_hidden_size", n_ff}, {"layer_norm_epsilon", eps},
              {"new_decoder_architecture", style == HfStyle::Falcon40b}, {"multi_query", n_kv == 1},
              {"parallel_attn", true}, {"bias", false}};
    case HfStyle::Persimmon:
      return {{"num_hidden_layers", n_layer}, {"hidden_size", n_embd}, {"num_attention_heads", n_head},
              {"intermediate_size", n_ff}, {"max_position_embeddings", ctx}, {"layer_norm_eps", eps},
              {"rope_theta", key_float(f, a + "rope.freq_base")}, {"partial_rotary_factor", 0.5}, {"qk_layernorm", true}};
    default:  // Nomic-BERT
      return {{"n_layer", n_layer}, {"n_embd", n_embd}, {"n_head", n_head}, {"n_inner", n_ff}, {"n_positions", 8192},
              {"num_key_value_heads", n_kv}, {"layer_norm_epsilon", eps},
              {"rotary_emb_base", key_float(f, a + "rope.freq_base")},
              {"type_vocab_size", f.find_tensor("token_types.weight")->ne[1]}, {"activation_function", "swiglu"},
              {"causal", false}, {"qkv_proj_bias", false}, {"mlp_fc1_bias", false}, {"mlp_fc2_bias", false},
              {"prenorm", false}, {"rotary_emb_fraction", 1.0}, {"rotary_emb_interleaved", false},
              {"rotary_emb_scale_base", nullptr}};
  }
}


json llama_config(const gguf::File& f, HfStyle style, const std::string& hf_arch) {
  const std::string a = *f.find("general.architecture")->as_string() + ".";
  json j = {{"architectures", {hf_arch}}, {"vocab_size", f.find_tensor("token_embd.weight")->ne[1]},
            {"tie_word_embeddings", f.find_tensor("output.weight") == nullptr}};
  // The HF name of each GGUF key.
  const std::vector<std::pair<std::string, std::string>> keys = {
      {"embedding_length", "hidden_size"}, {"block_count", "num_hidden_layers"},
      {"attention.head_count", "num_attention_heads"}, {"attention.head_count_kv", "num_key_value_heads"},
      {"feed_forward_length", "intermediate_size"}, {"context_length", "max_position_embeddings"},
      {"attention.layer_norm_rms_epsilon", "rms_norm_eps"}, {"attention.layer_norm_epsilon", "norm_epsilon"},
      {"rope.freq_base", "rope_theta"}, {"expert_used_count", "num_experts_per_tok"},
      {"expert_feed_forward_length", "moe_intermediate_size"},
      {"expert_shared_feed_forward_length", "shared_expert_intermediate_size"},
      {"attention.key_length", "head_dim"}, {"attn_logit_softcapping", "attn_logit_softcapping"},
      {"final_logit_softcapping", "final_logit_softcapping"}, {"attention.sliding_window", "sliding_window"},
      {"embedding_scale", "embedding_multiplier"}, {"residual_scale", "residual_multiplier"},
      {"attention.scale", "attention_multiplier"},
      {"rope.scaling.original_context_length", "original_max_position_embeddings"},
      {"expert_count", style == HfStyle::Mixtral ? "num_local_experts" : "num_experts"},
      {"logit_scale", hf_arch == "GraniteForCausalLM" ? "logits_scaling" : "logit_scale"}};
  for (const auto& [g, h] : keys) {
    const gguf::Value* v = f.find(a + g);
    if (v == nullptr || (style == HfStyle::Deepseek2 && h == "head_dim")) continue;
    if (v->as_int()) {
      j[h] = *v->as_int();
    } else {
      j[h] = *v->as_float();
    }
  }
  if (style == HfStyle::Bert) j["type_vocab_size"] = f.find_tensor("token_types.weight")->ne[1];
  if (style == HfStyle::Deepseek2) {  // DeepSeek-V2's own names
    const int64_t rope = key_int(f, a + "rope.dimension_count");
    j["first_k_dense_replace"] = key_int(f, a + "leading_dense_block_count");
    j["kv_lora_rank"] = key_int(f, a + "attention.kv_lora_rank");
    j["qk_rope_head_dim"] = rope;
    j["qk_nope_head_dim"] = key_int(f, a + "attention.key_length") - rope;
    j["v_head_dim"] = key_int(f, a + "attention.value_length");
    j["moe_intermediate_size"] = key_int(f, a + "expert_feed_forward_length");
    j["n_routed_experts"] = key_int(f, a + "expert_count");
    j["n_shared_experts"] = key_int(f, a + "expert_shared_count");
    j["routed_scaling_factor"] = *f.find(a + "expert_weights_scale")->as_float();
    j["norm_topk_prob"] = *f.find(a + "expert_weights_norm")->as_bool();
    j["scoring_func"] = key_int(f, a + "expert_gating_func") == 2 ? "sigmoid" : "softmax";
    j.erase("num_experts");
    j["rope_scaling"] = {{"type", "yarn"}, {"factor", *f.find(a + "rope.scaling.factor")->as_float()},
                         {"original_max_position_embeddings", key_int(f, a + "rope.scaling.original_context_length")},
                         {"mscale_all_dim", *f.find(a + "rope.scaling.yarn_log_multiplier")->as_float() / 0.1}};
  }
  if (f.find_tensor("rope_freqs.weight")) {  // LLaMA 3.1's published settings
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  }
  if (const gguf::TensorInfo* lf = f.find_tensor("rope_factors_long.weight")) {
    const gguf::TensorInfo* sf = f.find_tensor("rope_factors_short.weight");
    const auto floats = [](const gguf::TensorInfo* t) {
      std::vector<float> v(size_t(t->ne[0]));
      std::memcpy(v.data(), t->data, v.size() * 4);
      return v;
    };
    j["rope_scaling"] = {{"type", "longrope"}, {"long_factor", floats(lf)}, {"short_factor", floats(sf)}};
  }
  return j;
}

}  // namespace

HfPlace hf_place(const std::string& g, HfStyle style) {
  if (style == HfStyle::Bert) return {bert_name(g)};
  if (style == HfStyle::Baichuan && g.starts_with("blk.") && g.find(".attn_") != std::string::npos &&
      g.find("attn_norm") == std::string::npos && g.find("attn_output") == std::string::npos) {
    const size_t dot = g.find('.', 4);
    const std::string kind = g.substr(dot + 1, g.rfind('.') - dot - 1);
    // W_pack = [q | k | v].
    return {"model.layers." + g.substr(4, dot - 4) + ".self_attn.W_pack.weight", kind == "attn_q" ? 0 : kind == "attn_k" ? 1 : 2,
            3};
  }
  if (style < HfStyle::Bert || style == HfStyle::Baichuan) return {llama_name(g, style)};
  const Modules& m = modules_of(style);
  const size_t suffix = g.rfind('.');
  const std::string kind = g.substr(0, suffix), tail = g.substr(suffix);
  if (m.globals.count(kind)) return {m.globals.at(kind) + tail};
  const size_t dot = g.find('.', 4);
  const std::string il = g.substr(4, dot - 4), in_block = g.substr(dot + 1, suffix - dot - 1);
  HfPlace p{m.block + il + "." + m.layer.at(in_block) + tail};
  if (style == HfStyle::Refact && (in_block == "attn_k" || in_block == "attn_v" || in_block == "ffn_gate" ||
                                   in_block == "ffn_up")) {
    p.part = in_block == "attn_v" || in_block == "ffn_up" ? 1 : 0;  // kv = [k | v], gate_up = [gate | up]
    p.parts = 2;
  }
  return p;
}

std::string hf_expert(const std::string& g, int64_t e, HfStyle style) {
  const std::string il = g.substr(4, g.find('.', 4) - 4);
  const std::string kind = g.find("gate") != std::string::npos ? "gate" : g.find("down") != std::string::npos ? "down" : "up";
  if (style == HfStyle::Mixtral) {
    const char* w = kind == "gate" ? "w1" : kind == "down" ? "w2" : "w3";
    return "model.layers." + il + ".block_sparse_moe.experts." + std::to_string(e) + "." + w + ".weight";
  }
  return "model.layers." + il + ".mlp.experts." + std::to_string(e) + "." + kind + "_proj.weight";
}

json hf_config(const gguf::File& f, HfStyle style, const std::string& hf_arch) {
  if (style <= HfStyle::Bert || style == HfStyle::Baichuan) return llama_config(f, style, hf_arch);
  json j = own_config(f, style, *f.find("general.architecture")->as_string() + ".");
  j["architectures"] = {hf_arch};
  j["vocab_size"] = f.find_tensor("token_embd.weight")->ne[1];
  j["tie_word_embeddings"] = f.find_tensor("output.weight") == nullptr;
  return j;
}

}  // namespace tessera::test
