// The per-tensor type rules of the quantization recipes (see quant_recipe.h for the table).
#include "model/quant_recipe.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <initializer_list>
#include <numeric>

#include "model/arch.h"
#include "quant/convert.h"
#include "quant/quant.h"

namespace tessera {
namespace {

using FT = FileType;

// needs_imatrix: the reference refuses these targets without an importance matrix.
constexpr QuantRecipe kRecipes[] = {
    {"Q4_0", FT::Q4_0, DType::Q4_0, "legacy 32-blocks, symmetric"},
    {"Q4_1", FT::Q4_1, DType::Q4_1, "legacy 32-blocks with a minimum"},
    {"Q5_0", FT::Q5_0, DType::Q5_0, "legacy 32-blocks, symmetric"},
    {"Q5_1", FT::Q5_1, DType::Q5_1, "legacy 32-blocks with a minimum"},
    {"Q8_0", FT::Q8_0, DType::Q8_0, "nearly lossless"},
    {"Q2_K", FT::Q2_K, DType::Q2_K, "Q2_K mix with Q3_K/Q4_K attn_v, Q3_K ffn_down/attn_output"},
    {"Q2_K_S", FT::Q2_K_S, DType::Q2_K, "Q2_K, smaller mix; needs --imatrix", 0, true},
    {"Q3_K_S", FT::Q3_K_S, DType::Q3_K, "Q3_K throughout"},
    {"Q3_K_M", FT::Q3_K_M, DType::Q3_K, "Q3_K mix with Q4_K/Q5_K attn_v, ffn_down, attn_output"},
    {"Q3_K", FT::Q3_K_M, DType::Q3_K, "alias of Q3_K_M"},
    {"Q3_K_L", FT::Q3_K_L, DType::Q3_K, "Q3_K mix with Q5_K attn_v, ffn_down, attn_output"},
    {"Q4_K_S", FT::Q4_K_S, DType::Q4_K, "Q4_K, Q5_K in the first layers' attn_v/ffn_down"},
    {"Q4_K_M", FT::Q4_K_M, DType::Q4_K, "Q4_K mix with Q6_K attn_v/ffn_down in more-bits layers"},
    {"Q4_K", FT::Q4_K_M, DType::Q4_K, "alias of Q4_K_M"},
    {"Q5_K_S", FT::Q5_K_S, DType::Q5_K, "Q5_K throughout"},
    {"Q5_K_M", FT::Q5_K_M, DType::Q5_K, "Q5_K mix with Q6_K attn_v/ffn_down in more-bits layers"},
    {"Q5_K", FT::Q5_K_M, DType::Q5_K, "alias of Q5_K_M"},
    {"Q6_K", FT::Q6_K, DType::Q6_K, "k-quant throughout"},
    {"IQ1_S", FT::IQ1_S, DType::IQ1_S, "i-quant mix; needs --imatrix", 1.56, true},
    {"IQ1_M", FT::IQ1_M, DType::IQ1_M, "i-quant mix; needs --imatrix", 1.75, true},
    {"IQ2_XXS", FT::IQ2_XXS, DType::IQ2_XXS, "i-quant mix; needs --imatrix", 2.06, true},
    {"IQ2_XS", FT::IQ2_XS, DType::IQ2_XS, "i-quant mix; needs --imatrix", 2.31, true},
    {"IQ2_S", FT::IQ2_S, DType::IQ2_XS, "IQ2_XS/IQ3_S mix; needs --imatrix", 2.5, true},
    {"IQ2_M", FT::IQ2_M, DType::IQ2_S, "IQ2_S/IQ3_S mix", 2.7},
    {"IQ3_XXS", FT::IQ3_XXS, DType::IQ3_XXS, "i-quant mix (IQ2_S attn_q/k, IQ3_S attn_output)", 3.06},
    {"IQ3_XS", FT::IQ3_XS, DType::IQ3_S, "IQ3_S/IQ3_XXS mix", 3.3},
    {"IQ3_S", FT::IQ3_S, DType::IQ3_S, "i-quant throughout", 3.44},
    {"IQ3_M", FT::IQ3_M, DType::IQ3_S, "IQ3_S mix with Q4_K attn_v/attn_output", 3.66},
    {"IQ4_NL", FT::IQ4_NL, DType::IQ4_NL, "non-linear 32-blocks", 4.50},
    {"IQ4_XS", FT::IQ4_XS, DType::IQ4_XS, "non-linear 256-blocks", 4.25},
    {"TQ1_0", FT::TQ1_0, DType::TQ1_0, "ternary (for ternary-trained models)", 1.69},
    {"TQ2_0", FT::TQ2_0, DType::TQ2_0, "ternary (for ternary-trained models)", 2.06},
    {"F16", FT::F16, DType::F16, "16-bit floats"},
    {"BF16", FT::BF16, DType::BF16, "bfloat16"},
    {"F32", FT::F32, DType::F32, "32-bit floats"},
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) !=
        std::toupper(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

/// The groups of tensors the rules tell apart; matched by name fragments, in this order.
enum class Kind {
  Output,
  TokenEmbd,
  AttnV,
  AttnK,
  AttnQ,
  FfnDown,
  AttnOutput,
  AttnQkv,
  FfnGate,
  FfnUp,
  Other
};

Kind kind_of(std::string_view name, bool has_output) {
  if (name == "output.weight" || (!has_output && name == "token_embd.weight")) return Kind::Output;
  if (name == "token_embd.weight") return Kind::TokenEmbd;
  if (contains(name, "attn_v.weight")) return Kind::AttnV;
  if (contains(name, "attn_k.weight")) return Kind::AttnK;
  if (contains(name, "attn_q.weight")) return Kind::AttnQ;
  if (contains(name, "ffn_down")) return Kind::FfnDown;
  if (contains(name, "attn_output.weight")) return Kind::AttnOutput;
  if (contains(name, "attn_qkv.weight")) return Kind::AttnQkv;
  if (contains(name, "ffn_gate")) return Kind::FfnGate;
  if (contains(name, "ffn_up")) return Kind::FfnUp;
  return Kind::Other;
}

/// The layer of "blk.N.…", or -1.
int64_t layer_of(std::string_view name) {
  if (name.substr(0, 4) != "blk.") return -1;
  int64_t v = 0;
  size_t i = 4;
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i)
    v = v * 10 + (name[i] - '0');
  return i > 4 && i < name.size() && name[i] == '.' ? v : -1;
}

/// The reference's "use more bits" layers: the first and last eighth, and every third between.
bool use_more_bits(int64_t i, int64_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/// Where a tensor sits among the tensors of its kind, for the layer-counting rules.
struct Position {
  int64_t index = 0;  // 0-based
  int64_t count = 0;
};

/// Everything a rule looks at.
struct RuleInput {
  FT ft;
  DType base;
  const QuantModelFacts& facts;
  bool falcon;
  Position pos;
  int64_t row_size;
  bool has_imatrix;
};

bool is_one_of(FT ft, std::initializer_list<FT> list) {
  return std::find(list.begin(), list.end(), ft) != list.end();
}

/// The 1- and 2-bit i-quant targets, which share one set of rules for the layers.
bool low_iq(FT ft) { return is_one_of(ft, {FT::IQ2_XXS, FT::IQ2_XS, FT::IQ1_S, FT::IQ2_S, FT::IQ2_M, FT::IQ1_M}); }
/// IQ2_S and IQ2_M, which give IQ3_S where the other low i-quants give Q2_K.
bool iq2_s_or_m(FT ft) { return ft == FT::IQ2_S || ft == FT::IQ2_M; }

DType rule_output(const RuleInput& in) {
  if (in.falcon || in.row_size % dtype_traits(in.base).block_size != 0) return DType::Q8_0;
  if (low_iq(in.ft) || in.ft == FT::IQ3_XXS) return DType::Q5_K;
  return in.base == DType::Q8_0 ? DType::Q8_0 : DType::Q6_K;
}

DType rule_token_embd(const RuleInput& in) {
  if (is_one_of(in.ft, {FT::IQ2_XXS, FT::IQ2_XS, FT::IQ1_S, FT::IQ1_M})) return DType::Q2_K;
  if (iq2_s_or_m(in.ft) || in.ft == FT::IQ3_XXS) return DType::IQ3_S;
  if (in.ft == FT::TQ1_0 || in.ft == FT::TQ2_0) return DType::Q4_K;
  return in.base;
}

/// The layers' rules of the 1- and 2-bit i-quants.
DType rule_low_iq(Kind kind, const RuleInput& in) {
  switch (kind) {
    case Kind::AttnV:
      if (in.facts.n_gqa >= 4 || in.facts.n_expert >= 4) return DType::Q4_K;
      return iq2_s_or_m(in.ft) ? DType::IQ3_S : DType::Q2_K;
    case Kind::AttnK:
      return in.facts.n_expert == 8 ? DType::Q4_K : in.base;
    case Kind::FfnDown:
      if (in.pos.index >= in.pos.count / 8) return in.base;
      return iq2_s_or_m(in.ft) ? DType::IQ3_S : DType::Q2_K;
    case Kind::AttnOutput:
      if (in.facts.n_expert == 8) return DType::Q5_K;
      if (in.ft == FT::IQ1_S || in.ft == FT::IQ1_M) return DType::IQ2_XXS;
      return iq2_s_or_m(in.ft) ? DType::IQ3_S : in.base;
    default:
      return in.base;
  }
}

DType rule_attn_v(const RuleInput& in) {
  const int64_t i = in.pos.index;
  const bool gqa4 = in.facts.n_gqa >= 4;
  DType t = in.base;
  switch (in.ft) {
    case FT::Q2_K:
      t = gqa4 ? DType::Q4_K : DType::Q3_K;
      break;
    case FT::Q2_K_S:
      if (gqa4) t = DType::Q4_K;
      break;
    case FT::IQ3_XXS:
      t = gqa4 ? DType::Q4_K : in.has_imatrix ? DType::IQ3_XXS : DType::IQ3_S;
      break;
    case FT::IQ3_XS:
    case FT::IQ3_S:
      if (gqa4) t = DType::Q4_K;
      break;
    case FT::IQ3_M:
      t = DType::Q4_K;
      break;
    case FT::Q3_K_M:
      t = i < 2 ? DType::Q5_K : DType::Q4_K;
      break;
    case FT::Q3_K_L:
      t = DType::Q5_K;
      break;
    case FT::IQ4_NL:
    case FT::IQ4_XS:
      if (gqa4) t = DType::Q5_K;
      break;
    case FT::Q4_K_M:
    case FT::Q5_K_M:
      if (use_more_bits(i, in.pos.count)) t = DType::Q6_K;
      break;
    case FT::Q4_K_S:
      if (i < 4) t = DType::Q5_K;
      break;
    default:
      break;
  }
  // 70B: 8 query heads share each attn_v, so it is small and more bits cost little.
  if (in.facts.is_70b && (t == DType::Q3_K || t == DType::Q4_K)) t = DType::Q5_K;
  if (in.facts.n_expert == 8) t = DType::Q8_0;
  return t;
}

DType rule_attn_k(const RuleInput& in) {
  if (in.facts.n_expert == 8) return DType::Q8_0;
  if (in.ft == FT::IQ3_XS) return DType::IQ3_XXS;
  if (in.ft == FT::IQ3_XXS) return DType::IQ2_S;
  return in.base;
}

DType rule_attn_q(const RuleInput& in) {
  if (in.ft == FT::IQ3_XS) return DType::IQ3_XXS;
  if (in.ft == FT::IQ3_XXS) return DType::IQ2_S;
  return in.base;
}

DType rule_ffn_down(const RuleInput& in) {
  const int64_t i = in.pos.index, n = in.pos.count;
  switch (in.ft) {
    case FT::Q2_K:
      return DType::Q3_K;
    case FT::Q2_K_S:
      return i < n / 8 ? DType::Q4_K : in.base;
    case FT::IQ3_XXS:
      if (in.has_imatrix) return in.base;
      return i < n / 8 ? DType::Q4_K : DType::Q3_K;
    case FT::Q3_K_M:
      if (i < n / 16) return DType::Q5_K;
      return !in.falcon || use_more_bits(i, n) ? DType::Q4_K : DType::Q3_K;
    case FT::IQ3_M:
      return i < n / 8 || (in.facts.n_expert == 8 && use_more_bits(i, n)) ? DType::Q4_K : in.base;
    case FT::Q3_K_L:
      return in.falcon ? DType::Q4_K : DType::Q5_K;
    case FT::Q4_K_M:
      if (!in.falcon) return use_more_bits(i, n) ? DType::Q6_K : in.base;
      if (i < n / 16) return DType::Q6_K;
      return use_more_bits(i, n) ? DType::Q5_K : DType::Q4_K;
    case FT::IQ4_NL:
    case FT::IQ4_XS:
      return i < n / 8 && !in.has_imatrix ? DType::Q5_K : in.base;
    case FT::Q5_K_M:
      return use_more_bits(i, n) ? DType::Q6_K : in.base;
    case FT::Q4_K_S:
      return !in.falcon && i < n / 8 ? DType::Q5_K : in.base;
    case FT::Q4_0:
    case FT::Q5_0:
      // With an importance matrix the first layers' ffn_down get the variant with a
      // minimum (the reference guards against their outliers only then, to keep files
      // made without one as they were).
      if (!in.has_imatrix || i >= n / 8) return in.base;
      return in.ft == FT::Q4_0 ? DType::Q4_1 : DType::Q5_1;
    default:
      return in.base;
  }
}

DType rule_attn_output(const RuleInput& in) {
  if (in.falcon) return in.ft == FT::Q3_K_L ? DType::Q4_K : in.base;
  if (in.facts.n_expert == 8) {
    return is_one_of(in.ft, {FT::Q2_K, FT::IQ3_XS, FT::IQ3_XXS, FT::Q3_K_S, FT::Q3_K_M, FT::IQ4_NL,
                             FT::Q4_K_S, FT::Q4_K_M, FT::IQ3_S, FT::IQ3_M, FT::IQ4_XS})
               ? DType::Q5_K
               : in.base;
  }
  switch (in.ft) {
    case FT::Q2_K:
      return DType::Q3_K;
    case FT::IQ3_XXS:
      return DType::IQ3_S;
    case FT::Q3_K_M:
    case FT::IQ3_M:
      return DType::Q4_K;
    case FT::Q3_K_L:
      return DType::Q5_K;
    default:
      return in.base;
  }
}

DType rule_attn_qkv(const RuleInput& in) {
  switch (in.ft) {
    case FT::Q3_K_M:
    case FT::Q3_K_L:
    case FT::IQ3_M:
      return DType::Q4_K;
    case FT::Q4_K_M:
      return DType::Q5_K;
    case FT::Q5_K_M:
      return DType::Q6_K;
    default:
      return in.base;
  }
}

/// ffn_gate and ffn_up: IQ3_XS keeps IQ3_S in the first and last eighth of the layers.
DType rule_ffn_gate_up(const RuleInput& in) {
  const int64_t i = in.pos.index, n = in.pos.count;
  return in.ft == FT::IQ3_XS && i >= n / 8 && i < 7 * n / 8 ? DType::IQ3_XXS : in.base;
}

/// The recipe's type for a tensor, before the block-size check.
DType recipe_type(Kind kind, const RuleInput& in) {
  if (kind == Kind::Output) return rule_output(in);
  if (kind == Kind::TokenEmbd) return rule_token_embd(in);
  if (low_iq(in.ft)) return rule_low_iq(kind, in);
  switch (kind) {
    case Kind::AttnV:
      return rule_attn_v(in);
    case Kind::AttnK:
      return rule_attn_k(in);
    case Kind::AttnQ:
      return rule_attn_q(in);
    case Kind::FfnDown:
      return rule_ffn_down(in);
    case Kind::AttnOutput:
      return rule_attn_output(in);
    case Kind::AttnQkv:
      return rule_attn_qkv(in);
    case Kind::FfnGate:
    case Kind::FfnUp:
      return rule_ffn_gate_up(in);
    default:
      return in.base;
  }
}

/// The type the reference falls back to when rows do not fit `t`'s blocks (before the
/// last resort, F16). Where the reference takes IQ4_NL and this build cannot write it,
/// Q4_0 (the same size) stands in.
DType fallback_type(DType t) {
  switch (t) {
    case DType::TQ1_0:
    case DType::TQ2_0:
      return DType::Q4_0;
    case DType::IQ2_XXS:
    case DType::IQ2_XS:
    case DType::IQ2_S:
    case DType::IQ3_XXS:
    case DType::IQ3_S:
    case DType::IQ1_S:
    case DType::IQ1_M:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::IQ4_XS:
      return quant::from_float_fn(DType::IQ4_NL) != nullptr ? DType::IQ4_NL : DType::Q4_0;
    case DType::Q4_K:
      return DType::Q5_0;
    case DType::Q5_K:
      return DType::Q5_1;
    case DType::Q6_K:
      return DType::Q8_0;
    default:
      return DType::F16;
  }
}

/// A type whose blocks fit rows of `row_size`: the k-quants and i-quants step down to a
/// 32-block type of similar size, and anything that still does not fit becomes F16.
TensorPlan fit_rows(DType t, int64_t row_size) {
  const int64_t block = dtype_traits(t).block_size;
  if (row_size % block == 0) return {t, true, {}};
  DType f = fallback_type(t);
  if (row_size % dtype_traits(f).block_size != 0) f = DType::F16;
  char note[160];
  std::snprintf(note, sizeof note, "row length %lld is not a multiple of %lld (%s): using %s",
                static_cast<long long>(row_size), static_cast<long long>(block),
                std::string(dtype_name(t)).c_str(), std::string(dtype_name(f)).c_str());
  return {f, true, note};
}

/// Index and count of each tensor among those of its kind, counted in the reference's
/// order: tensors outside layers first, then layer by layer, names sorted within each.
std::vector<Position> positions(std::span<const TensorDesc> tensors, const std::vector<Kind>& kinds,
                                const QuantModelFacts& facts) {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
    return la != lb ? la < lb : tensors[a].name < tensors[b].name;
  });
  int64_t n_attn_v = 0;  // the reference counts fused and compressed V projections too
  for (const TensorDesc& t : tensors) {
    if (contains(t.name, "attn_v.weight") || contains(t.name, "attn_qkv.weight") ||
        contains(t.name, "attn_kv_b.weight")) {
      ++n_attn_v;
    }
  }
  std::vector<Position> pos(tensors.size());
  int64_t i_attn_v = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;
  for (size_t idx : order) {
    // Experts of a layer are not stored in order, so MoE models use the layer number.
    auto layer_pos = [&](int64_t& counter) {
      const int64_t i = facts.n_expert > 1 ? layer_of(tensors[idx].name) : counter++;
      return Position{std::max<int64_t>(i, 0), facts.n_layer};
    };
    switch (kinds[idx]) {
      case Kind::AttnV:
        pos[idx] = {i_attn_v++, n_attn_v};
        break;
      case Kind::FfnDown:
        pos[idx] = layer_pos(i_ffn_down);
        break;
      case Kind::FfnGate:
        pos[idx] = layer_pos(i_ffn_gate);
        break;
      case Kind::FfnUp:
        pos[idx] = layer_pos(i_ffn_up);
        break;
      default:
        break;
    }
  }
  return pos;
}

}  // namespace

std::span<const QuantRecipe> quant_recipes() { return kRecipes; }

const QuantRecipe* find_quant_recipe(std::string_view name) {
  for (const QuantRecipe& r : kRecipes) {
    if (iequals(r.name, name)) return &r;
  }
  return nullptr;
}

double recipe_bpw(const QuantRecipe& r) {
  if (r.mix_bpw > 0) return r.mix_bpw;
  const DTypeTraits& t = dtype_traits(r.base);
  return 8.0 * double(t.type_size) / double(t.block_size);
}

bool tensor_needs_imatrix(FileType ft, DType type, std::string_view name) {
  switch (type) {
    case DType::IQ2_XXS:
    case DType::IQ2_XS:
    case DType::IQ2_S:
    case DType::IQ1_S:
      return true;
    case DType::IQ1_M:
      return name != "token_embd.weight" && name != "output.weight";
    case DType::Q2_K:
      return ft == FT::Q2_K_S && name != "token_embd.weight";
    default: {
      const quant::Format* f = quant::format(type);
      return f != nullptr && f->needs_importance;
    }
  }
}

std::string_view file_type_name(FileType ft) {
  for (const QuantRecipe& r : kRecipes) {
    if (r.file_type == ft) return r.name;  // the canonical entry precedes its alias
  }
  return {};
}

QuantModelFacts quant_model_facts(const gguf::File& file) {
  QuantModelFacts f;
  if (Result<std::string> arch = file.get_string("general.architecture")) f.arch = *arch;
  auto get = [&](const std::string& key, int64_t fallback) {
    Result<int64_t> v = file.get_int(f.arch + "." + key);
    return v ? *v : fallback;
  };
  f.n_layer = get("block_count", 0);
  const int64_t n_head = get("attention.head_count", 0);
  const int64_t n_head_kv = get("attention.head_count_kv", n_head);
  f.n_gqa = n_head > 0 && n_head_kv > 0 ? n_head / n_head_kv : 1;
  f.n_expert = get("expert_count", 0);
  const Arch* a = find_arch(f.arch);
  f.is_70b = a != nullptr && a->quant.rule_70b && f.n_layer == 80 && f.n_gqa > 1;
  f.falcon = a != nullptr && a->quant.falcon_mixes;
  return f;
}

bool is_quantizable(std::string_view name, int n_dims) {
  if (n_dims < 2 || name.size() < 6 || name.substr(name.size() - 6) != "weight") return false;
  // Kept as they are: norms, MoE routers, small embeddings and the recurrent models'
  // convolution and mixing parameters, which are sensitive and tiny.
  constexpr std::string_view kKeep[] = {
      "_norm.weight",        "ffn_gate_inp.weight", "position_embd",     "pos_embd",
      "token_types",         "ssm_conv1d",          "time_mix_first",    "time_mix_w0",
      "time_mix_w1",         "time_mix_w2",         "time_mix_decay_w1", "time_mix_decay_w2",
      "time_mix_lerp_fused", "attn_rel_b",
  };
  for (std::string_view k : kKeep) {
    if (contains(name, k)) return false;
  }
  return true;
}

std::vector<TensorPlan> plan_quantization(const QuantRecipe& recipe, const QuantModelFacts& facts,
                                          std::span<const TensorDesc> tensors, bool pure, bool has_imatrix) {
  const bool has_output = std::any_of(tensors.begin(), tensors.end(), [](const TensorDesc& t) {
    return t.name == "output.weight";
  });
  std::vector<Kind> kinds;
  for (const TensorDesc& t : tensors) kinds.push_back(kind_of(t.name, has_output));
  const std::vector<Position> pos = positions(tensors, kinds, facts);
  const bool mixes = dtype_traits(recipe.base).is_quantized && !pure;

  std::vector<TensorPlan> plans;
  plans.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorDesc& t = tensors[i];
    if (!is_quantizable(t.name, t.n_dims)) {
      plans.push_back({t.type, false, {}});
      continue;
    }
    const RuleInput in{recipe.file_type, recipe.base, facts, facts.falcon, pos[i], t.row_size, has_imatrix};
    const DType want = mixes ? recipe_type(kinds[i], in) : recipe.base;
    plans.push_back(fit_rows(want, t.row_size));
  }
  return plans;
}

}  // namespace tessera
