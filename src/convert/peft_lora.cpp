// convert_peft_lora (tessera/convert.h): a PEFT LoRA adapter folder to a GGUF adapter for a
// GGUF base model. Each lora_A/lora_B pair of adapter_model.safetensors names a module of
// the Hugging Face model (base_model.model.<module>.lora_A.weight); <module>.weight is
// placed by the name maps of the base's architecture (hf_arch.h), as the weight converter
// places the checkpoint's own tensor, and its transform is applied to the pair: a row
// permutation of W (LLaMA's q/k) permutes the rows of B·A, which are B's rows, so lora_B's
// rows are permuted and lora_A is unchanged. PEFT's lora_A [r, in] and lora_B [out, r]
// are already GGUF's lora_a ne [in, r] and lora_b ne [r, out]: no transpose.
#include <strings.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "convert/hf_arch.h"
#include "convert/json_file.h"
#include "convert/transforms.h"
#include "model/arch.h"
#include "model/hparams.h"
#include "model/lora.h"
#include "quant/convert.h"
#include "tessera/convert.h"
#include "tessera/safetensors.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using convert::HfArch;
using convert::Transform;
using nlohmann::json;

constexpr const char* kPrefix = "base_model.model.";
constexpr const char* kSuffixA = ".lora_A.weight";
constexpr const char* kSuffixB = ".lora_B.weight";

/// What adapter_config.json decides about the conversion.
struct PeftConfig {
  int64_t r = 0;
  double alpha = 0;
  bool rslora = false;
  bool rank_pattern = false;  // per-module ranks: each pair's own r is its tensors' rank
};

Status config_error(const std::string& what) { return Status::error("convert --lora: adapter_config.json " + what); }

/// `key`, which must be absent, null or a boolean.
Result<bool> flag(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return false;
  if (!j[key].is_boolean()) return config_error("'" + std::string(key) + "' is not true or false");
  return j[key].get<bool>();
}

/// `key` as a non-empty object (PEFT's per-module patterns; {} when unused).
bool has_entries(const json& j, const char* key) { return j.contains(key) && j[key].is_object() && !j[key].empty(); }

/// The settings that change what a pair means; what GGUF's adapter cannot express is
/// refused by its key.
Result<PeftConfig> read_config(const fs::path& dir) {
  if (!fs::exists(dir / "adapter_config.json")) {
    return Status::error("convert --lora: " + dir.string() + " has no adapter_config.json (a PEFT adapter folder holds "
                         "adapter_config.json and adapter_model.safetensors)");
  }
  Result<json> j = convert::read_json_object(dir / "adapter_config.json");
  if (!j) return j.status();
  if (j->contains("peft_type") && (*j)["peft_type"] != "LORA") {
    return config_error("'peft_type' is " + (*j)["peft_type"].dump() + ": only LORA adapters convert");
  }
  PeftConfig c;
  if (!j->contains("r") || !(*j)["r"].is_number_integer() || (*j)["r"].get<int64_t>() <= 0) {
    return config_error("'r' is missing or not a positive integer");
  }
  c.r = (*j)["r"].get<int64_t>();
  const json& alpha = j->contains("lora_alpha") ? (*j)["lora_alpha"] : json();
  if (!alpha.is_number() || !std::isfinite(alpha.get<double>())) {
    return config_error("'lora_alpha' is missing or not a number");
  }
  c.alpha = alpha.get<double>();
  Result<bool> fan_in_fan_out = flag(*j, "fan_in_fan_out"), dora = flag(*j, "use_dora");
  Result<bool> rslora = flag(*j, "use_rslora");
  if (!fan_in_fan_out) return fan_in_fan_out.status();
  if (!dora) return dora.status();
  if (!rslora) return rslora.status();
  if (*fan_in_fan_out) {
    return config_error("'fan_in_fan_out' is true: the pairs are stored transposed for Conv1D weights, which convert "
                        "does not map");
  }
  if (*dora) return config_error("'use_dora' is true: DoRA's magnitude vectors have no place in a GGUF LoRA adapter");
  if (j->contains("bias") && (*j)["bias"].is_string() && (*j)["bias"] != "none") {
    return config_error("'bias' is " + (*j)["bias"].dump() + ": trained biases have no place in a GGUF LoRA adapter");
  }
  // One adapter.lora.alpha serves every pair: a per-module alpha cannot be written.
  if (has_entries(*j, "alpha_pattern")) return config_error("'alpha_pattern' gives per-module alphas: not converted");
  c.rslora = *rslora;
  c.rank_pattern = has_entries(*j, "rank_pattern");
  if (c.rslora && c.rank_pattern) {
    return config_error("'rank_pattern' with 'use_rslora': rsLoRA's scale with several ranks needs per-module alphas");
  }
  return c;
}

/// The base model: its architecture's name maps, hyper-parameters and the weights an
/// adapter may update.
struct Base {
  std::unique_ptr<gguf::File> file;
  const HfArch* hf = nullptr;
  HParams h;
  struct Place {
    std::string gguf;
    Transform transform = Transform::None;
  };
  std::map<std::string, Place> places;  // HF weight name -> its GGUF tensor
  std::set<std::string> adaptable;      // the GGUF weights the adapter loader updates
};

std::string with_layer(std::string pattern, int64_t il) {
  const size_t at = pattern.find("{}");
  return at == std::string::npos ? pattern : pattern.replace(at, 2, std::to_string(il));
}

/// The HfArch of the base's general.architecture (the maps of one tessera architecture's
/// Hugging Face variants agree on the names a LoRA targets: the first is taken).
Result<const HfArch*> hf_arch_of(const std::string& arch, const std::string& path) {
  std::string known;
  for (const HfArch* a : convert::hf_archs()) {
    if (a->arch == arch) return a;
    if (known.find(std::string(" ") + a->arch + ",") == std::string::npos) known += std::string(" ") + a->arch + ",";
  }
  known.pop_back();
  return Status::error("convert --lora: the base " + path + " is a '" + arch +
                       "' model, an architecture convert does not map (it maps" + known + ")");
}

Result<Base> open_base(const std::string& path) {
  Base b;
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open(path);
  if (!f) return f.status().with_context("convert --lora: --base");
  b.file = std::move(*f);
  Result<std::string> arch = b.file->get_string("general.architecture");
  if (!arch) return Status::error("convert --lora: the base " + path + " has no general.architecture");
  Result<const HfArch*> hf = hf_arch_of(*arch, path);
  if (!hf) return hf.status();
  b.hf = *hf;
  const Arch* a = find_arch(*arch);
  if (a == nullptr) return Status::error("convert --lora: tessera has no architecture '" + *arch + "'");
  Result<HParams> h = read_hparams(*b.file);
  if (!h) return h.status().with_context("convert --lora: the base " + path);
  if (a->configure != nullptr) {
    TESSERA_RETURN_IF_ERROR(a->configure(*b.file, *h).with_context("convert --lora: the base"));
  }
  b.h = *h;
  for (const convert::NameMap& m : b.hf->globals) {
    if (m.gguf != nullptr) b.places[m.hf] = {m.gguf, m.transform};
  }
  for (int64_t il = 0; il < b.h.n_layer; ++il) {
    for (const convert::NameMap& m : b.hf->layers) {
      if (m.gguf != nullptr) b.places[with_layer(m.hf, il)] = {with_layer(m.gguf, il), m.transform};
    }
  }
  for_each_weight(a->weights, b.h, [&](const WeightSpec& spec, const std::string& name, int64_t) {
    if (spec.layer_field != nullptr && adaptable(spec.layer_field)) b.adaptable.insert(name);
  });
  return b;
}

/// One module's lora_A and lora_B.
struct Pair {
  std::string module;  // the HF module name, without PEFT's prefix
  const safetensors::TensorInfo* a = nullptr;
  const safetensors::TensorInfo* b = nullptr;
};

/// The tensors of adapter_model.safetensors by module; each must be a lora_A or lora_B
/// with its partner.
Result<std::map<std::string, Pair>> pairs_of(const safetensors::File& f) {
  std::map<std::string, Pair> pairs;
  for (const safetensors::TensorInfo& t : f.tensors()) {
    const bool is_a = t.name.ends_with(kSuffixA), is_b = t.name.ends_with(kSuffixB);
    if (!t.name.starts_with(kPrefix) || (!is_a && !is_b)) {
      return Status::error("convert --lora: tensor '" + t.name + "' of adapter_model.safetensors is not a LoRA pair's "
                           "(base_model.model.<module>.lora_A.weight or .lora_B.weight)");
    }
    const size_t prefix = std::string(kPrefix).size(), suffix = std::string(kSuffixA).size();
    const std::string module = t.name.substr(prefix, t.name.size() - prefix - suffix);
    Pair& p = pairs[module];
    p.module = module;
    (is_a ? p.a : p.b) = &t;
  }
  for (const auto& [module, p] : pairs) {
    if (p.a == nullptr || p.b == nullptr) {
      const std::string has = kPrefix + module + (p.a ? kSuffixA : kSuffixB);
      const std::string lacks = kPrefix + module + (p.a ? kSuffixB : kSuffixA);
      return Status::error("convert --lora: tensor '" + has + "' has no partner '" + lacks + "'");
    }
  }
  if (pairs.empty()) return Status::error("convert --lora: adapter_model.safetensors holds no LoRA tensors");
  return pairs;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

/// One pair in GGUF's order, as floats: lora_a [r·in], lora_b [out·r].
struct Converted {
  int64_t n_in = 0, n_out = 0, r = 0;
  std::vector<float> a, b;
};

/// The base tensor `p` updates, checked to be one the adapter loader adapts.
Result<Base::Place> target_of(const Base& base, const Pair& p) {
  std::string weight = p.module + ".weight";
  if (base.hf->strip_prefix != nullptr && weight.starts_with(base.hf->strip_prefix)) {
    weight = weight.substr(std::string(base.hf->strip_prefix).size());
  }
  const std::string a_name = kPrefix + p.module + kSuffixA;
  const auto place = base.places.find(weight);
  if (place == base.places.end()) {
    return Status::error("convert --lora: tensor '" + a_name + "': module '" + p.module + "' has no place in a " +
                         base.hf->arch + " model (convert maps no '" + weight + "')");
  }
  const std::string& g = place->second.gguf;
  if (base.file->find_tensor(g) == nullptr) {
    return Status::error("convert --lora: tensor '" + a_name + "': module '" + p.module + "' would update " + g +
                         ", which the base " + base.file->path() + " does not have");
  }
  if (base.adaptable.count(g) == 0) {
    return Status::error("convert --lora: tensor '" + a_name + "': module '" + p.module + "' would update " + g +
                         ", which a LoRA adapter cannot update (only attention and feed-forward projections)");
  }
  return place->second;
}

/// The pair's shapes against the base tensor [out, in] (PyTorch's order): lora_A [r, in],
/// lora_B [out, r].
Status check_shapes(const PeftConfig& c, const Pair& p, const gguf::TensorInfo& w) {
  const std::vector<int64_t>& sa = p.a->shape;
  const std::vector<int64_t>& sb = p.b->shape;
  const bool fits = w.n_dims == 2 && sa.size() == 2 && sb.size() == 2 && sa[1] == w.ne[0] && sb[0] == w.ne[1] &&
                    sa[0] == sb[1] && sa[0] > 0;
  if (!fits) {
    return Status::error("convert --lora: tensors '" + p.a->name + "' " + shape_text(sa) + " and '" + p.b->name + "' " +
                         shape_text(sb) + " do not fit the base's " + w.name + " [" + std::to_string(w.ne[1]) + ", " +
                         std::to_string(w.ne[0]) + "] (lora_A [r, " + std::to_string(w.ne[0]) + "], lora_B [" +
                         std::to_string(w.ne[1]) + ", r])");
  }
  if (!c.rank_pattern && sa[0] != c.r) {
    return Status::error("convert --lora: tensor '" + p.a->name + "' has rank " + std::to_string(sa[0]) +
                         ", but adapter_config.json's r is " + std::to_string(c.r));
  }
  return Status::ok();
}

Result<std::vector<float>> floats_of(const safetensors::TensorInfo& t) {
  std::vector<float> v(size_t(t.n_elements()));
  if (Status s = safetensors::to_float(t, v); !s) {
    return Status::error("convert --lora: tensor '" + t.name + "' is " + safetensors::dtype_name(t.dtype) +
                         ", which convert cannot read as weights");
  }
  return v;
}

/// The pair `p` for the base tensor `to`, lora_B's rows rearranged by its transform.
Result<Converted> convert_pair(const Base& base, const PeftConfig& c, const Pair& p, const Base::Place& to) {
  const std::string& g = to.gguf;
  const gguf::TensorInfo& w = *base.file->find_tensor(g);
  TESSERA_RETURN_IF_ERROR(check_shapes(c, p, w));
  Converted out{w.ne[0], w.ne[1], p.a->shape[0], {}, {}};
  Result<std::vector<float>> a = floats_of(*p.a), b = floats_of(*p.b);
  if (!a) return a.status();
  if (!b) return b.status();
  const Transform t = to.transform;
  if (t == Transform::PermuteRope) {
    convert::TensorPlan plan;
    plan.name = g + ".lora_b";
    plan.shape = {out.r, out.n_out};
    plan.transform = t;
    // As plan_tensors: the query heads for attn_q, the key/value heads otherwise.
    plan.heads = g.find("attn_q") != std::string::npos ? base.h.n_head : base.h.n_head_kv;
    TESSERA_RETURN_IF_ERROR(convert::apply_transform(plan, *b));
  } else if (t != Transform::None) {
    return Status::error("convert --lora: " + g +
                         " is rearranged by a transform that does not carry over to a LoRA pair");
  }
  out.a = std::move(*a);
  out.b = std::move(*b);
  return out;
}

Result<DType> adapter_type(const std::string& type) {
  for (auto [name, t] : {std::pair{"f32", DType::F32}, std::pair{"f16", DType::F16}, std::pair{"bf16", DType::BF16}}) {
    if (strcasecmp(type.c_str(), name) == 0) return t;
  }
  return Status::error("convert --lora: --type '" + type +
                       "' is not f32, f16 or bf16 (an adapter is written as floats)");
}

void add_tensor(gguf::Writer& w, const std::string& name, DType type, int64_t ne0, int64_t ne1,
                const std::vector<float>& v) {
  std::vector<uint8_t> bytes(dtype_row_size(type, ne0) * size_t(ne1));
  quant::from_float_fn(type)(v.data(), bytes.data(), int64_t(v.size()));
  w.add_tensor(name, type, {ne0, ne1, 1, 1}, 2, bytes.data(), bytes.size());
}

/// Every pair, converted, by the GGUF name of the weight it updates.
Result<std::map<std::string, Converted>> convert_pairs(const Base& base, const PeftConfig& c,
                                                       const std::map<std::string, Pair>& pairs) {
  std::map<std::string, Converted> out;
  for (const auto& [module, pair] : pairs) {
    Result<Base::Place> to = target_of(base, pair);
    if (!to) return to.status();
    Result<Converted> conv = convert_pair(base, c, pair, *to);
    if (!conv) return conv.status();
    out[to->gguf] = std::move(*conv);
  }
  return out;
}

/// `w` written to `path` under a temporary name and renamed: no partial output.
Status write_whole(const gguf::Writer& w, const std::string& path) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  Status s = w.write(tmp);
  std::error_code ec;
  if (s) fs::rename(tmp, path, ec);
  if (s && ec) s = Status::error("convert --lora: cannot move the output to '" + path + "': " + ec.message());
  fs::remove(tmp, ec);
  return s;
}

}  // namespace

Result<LoraConvertReport> convert_peft_lora(const LoraConvertParams& p) {
  const fs::path dir(p.adapter_dir);
  Result<PeftConfig> c = read_config(dir);
  if (!c) return c.status();
  if (!fs::exists(dir / "adapter_model.safetensors")) {
    return Status::error("convert --lora: " + dir.string() + " has no adapter_model.safetensors" +
                         (fs::exists(dir / "adapter_model.bin") ? " (adapter_model.bin, a pickle, is not read)" : ""));
  }
  Result<DType> type = adapter_type(p.type);
  if (!type) return type.status();
  std::error_code same;
  if (fs::equivalent(p.output_path, p.base_path, same)) {
    return Status::error("convert --lora: the output " + p.output_path + " is the base model itself");
  }
  Result<Base> base = open_base(p.base_path);
  if (!base) return base.status();
  Result<std::unique_ptr<safetensors::File>> st = safetensors::File::open((dir / "adapter_model.safetensors").string());
  if (!st) return st.status();
  Result<std::map<std::string, Pair>> pairs = pairs_of(**st);
  if (!pairs) return pairs.status();

  Result<std::map<std::string, Converted>> by_target = convert_pairs(*base, *c, *pairs);
  if (!by_target) return by_target.status();

  LoraConvertReport report;
  report.arch = base->hf->arch;
  report.r = c->r;
  // tessera scales b·a by alpha / r (LoraDelta::scale_for); rsLoRA by lora_alpha / sqrt(r).
  // The alpha written, lora_alpha·sqrt(r), gives rsLoRA's scale under tessera's rule.
  report.alpha = float(c->rslora ? c->alpha * std::sqrt(double(c->r)) : c->alpha);
  gguf::Writer w;
  w.set("general.architecture", report.arch);
  w.set("general.type", std::string("adapter"));
  w.set("general.name", dir.lexically_normal().filename().string());
  w.set("adapter.type", std::string("lora"));
  w.set("adapter.lora.alpha", report.alpha);
  for (const gguf::TensorInfo& t : base->file->tensors()) {  // in the base's order
    const auto it = by_target->find(t.name);
    if (it == by_target->end()) continue;
    const Converted& v = it->second;
    add_tensor(w, t.name + ".lora_a", *type, v.n_in, v.r, v.a);
    add_tensor(w, t.name + ".lora_b", *type, v.r, v.n_out, v.b);
  }
  report.n_weights = by_target->size();
  TESSERA_RETURN_IF_ERROR(write_whole(w, p.output_path));
  std::error_code ec;
  report.out_bytes = fs::file_size(p.output_path, ec);
  return report;
}

}  // namespace tessera
