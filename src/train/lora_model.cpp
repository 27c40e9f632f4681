#include "train/lora_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/rng.h"
#include "model/lora.h"
#include "model/model_impl.h"

namespace tessera::train {
namespace {

// A target's short name and the stem of the weights it names (blk.N.<stem>.weight).
struct TargetName {
  const char* name;
  const char* stem;
};

// gate, up and down also name the shared experts' projections (Qwen2-MoE): a dense
// feed-forward beside the routed experts, adapted as the dense one is.
constexpr TargetName kTargets[] = {
    {"q", "attn_q"},      {"k", "attn_k"},        {"v", "attn_v"},     {"qkv", "attn_qkv"},
    {"o", "attn_output"}, {"gate", "ffn_gate"},   {"up", "ffn_up"},    {"down", "ffn_down"},
    {"gate", "ffn_gate_shexp"}, {"up", "ffn_up_shexp"}, {"down", "ffn_down_shexp"},
};

constexpr const char* kTargetList = "q, k, v, qkv, o, gate, up, down";

const TargetName* target_named(const std::string& name) {
  for (const TargetName& t : kTargets) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

// The short name of the weight spec named `pattern` ("blk.{}.attn_q.weight" -> "q"), or
// null when it is not one of the targets.
const char* target_of_spec(std::string_view pattern) {
  for (const TargetName& t : kTargets) {
    if (pattern == "blk.{}." + std::string(t.stem) + ".weight") return t.name;
  }
  return nullptr;
}

// a and b for weight w of layer l, as parameters of m.
void add_pair(TrainModel& m, LayerWeights& l, Tensor* w, const LoraShape& s) {
  Tensor* a = m.arena.new_tensor(DType::F32, {w->ne[0], s.r, 1, 1}, w->name + ".lora_a");
  Tensor* b = m.arena.new_tensor(DType::F32, {s.r, w->ne[1], 1, 1}, w->name + ".lora_b");
  m.params.push_back(a);
  m.params.push_back(b);
  l.lora.push_back({.target = w, .a = a, .b = b, .scale = s.alpha / float(s.r)});
}

bool wanted(const std::vector<std::string>& targets, const char* name) {
  if (targets.size() == 1 && targets[0] == "all") return true;
  return std::find(targets.begin(), targets.end(), name) != targets.end();
}

// The stem of a layer weight spec ("blk.{}.ffn_up_exps.weight" -> "ffn_up_exps").
std::string stem_of(std::string_view pattern) {
  constexpr std::string_view kPrefix = "blk.{}.";
  constexpr std::string_view kSuffix = ".weight";
  if (!pattern.starts_with(kPrefix) || !pattern.ends_with(kSuffix)) return std::string(pattern);
  return std::string(pattern.substr(kPrefix.size(), pattern.size() - kPrefix.size() - kSuffix.size()));
}

// Whether field holds routed experts (3-D, one matrix per expert): LoRA does not adapt
// them, an adapter pair being one 2-D update.
bool expert_field(Tensor* LayerWeights::*field) {
  for (Tensor* LayerWeights::*f : {&LayerWeights::ffn_gate_exps, &LayerWeights::ffn_up_exps, &LayerWeights::ffn_down_exps}) {
    if (f == field) return true;
  }
  return false;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

// Attaches a pair to every projection of m's base that the architecture's weight list
// declares as adaptable and `targets` names; each named target must occur (the refusal
// of a model with routed experts names them as not adaptable).
Status attach_pairs(TrainModel& m, const LoraShape& s) {
  std::vector<std::string> found;    // the targets the model has
  std::vector<std::string> experts;  // its routed experts' weights, not adaptable
  for_each_weight(m.arch->weights, m.h, [&](const WeightSpec& spec, const std::string&, int64_t il) {
    if (spec.layer_field == nullptr) return;
    LayerWeights& l = m.w.layers[size_t(il)];
    Tensor* w = l.*spec.layer_field;
    if (w == nullptr) return;
    if (expert_field(spec.layer_field)) {
      const std::string stem = stem_of(spec.name);
      if (std::find(experts.begin(), experts.end(), stem) == experts.end()) experts.push_back(stem);
      return;
    }
    const char* name = adaptable(spec.layer_field) ? target_of_spec(spec.name) : nullptr;
    if (name == nullptr) return;
    if (std::find(found.begin(), found.end(), name) == found.end()) found.emplace_back(name);
    if (wanted(s.targets, name)) add_pair(m, l, w, s);
  });
  const std::string not_adapted = experts.empty() ? ""
                                                  : "; its routed experts (" + joined(experts) +
                                                        ") are not adaptable: LoRA adapts attention, dense "
                                                        "feed-forward and shared-expert projections";
  for (const std::string& t : s.targets) {
    if (t != "all" && std::find(found.begin(), found.end(), t) == found.end()) {
      return Status::error("finetune: architecture '" + std::string(m.arch->name) + "' has no '" + t +
                           "' projection (its projections: " + (found.empty() ? "none" : joined(found)) + ")" + not_adapted);
    }
  }
  if (m.params.empty()) {
    return Status::error("finetune: architecture '" + std::string(m.arch->name) + "' has no projection to adapt" + not_adapted);
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<std::string>> parse_lora_targets(const std::string& list) {
  if (list == "all") return std::vector<std::string>{"all"};
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (target_named(item) == nullptr) {
      return Status::error("finetune: unknown LoRA target '" + item + "' (targets: all, or some of " + kTargetList + ")");
    }
    out.push_back(item);
  }
  if (out.empty()) return Status::error("finetune: no LoRA targets");
  return out;
}

Result<std::unique_ptr<TrainModel>> create_lora(const Model& base, const LoraShape& s, uint64_t seed,
                                                Backend& backend) {
  const detail::ModelImpl& b = base.impl();
  if (s.r <= 0) return Status::error("finetune: the LoRA rank must be positive");
  auto m = std::make_unique<TrainModel>();
  m->arch = b.arch;
  m->h = b.hparams;
  m->w = b.weights;  // the frozen base, shared
  for (LayerWeights& l : m->w.layers) l.lora.clear();
  TESSERA_RETURN_IF_ERROR(attach_pairs(*m, s));
  TESSERA_RETURN_IF_ERROR(place_params(*m, backend));
  Rng rng(seed);
  for (Tensor* p : m->params) {
    std::vector<float> v(size_t(p->nelements()), 0.0f);
    if (p->name.ends_with(".lora_a")) {
      const float bound = 1.0f / std::sqrt(float(p->ne[0]));
      for (float& x : v) x = bound * (2.0f * rng.uniform() - 1.0f);
    }
    write_param(backend, p, v);
  }
  m->keys.set("general.architecture", b.hparams.arch);
  m->keys.set("general.type", "adapter");
  m->keys.set("general.name", (b.info.name.empty() ? std::string("model") : b.info.name) + " lora");
  m->keys.set("adapter.type", "lora");
  m->keys.set("adapter.lora.alpha", s.alpha);
  return m;
}

}  // namespace tessera::train
