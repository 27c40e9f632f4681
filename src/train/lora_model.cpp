#include "train/lora_model.h"

#include <cmath>
#include <sstream>

#include "core/rng.h"
#include "model/model_impl.h"

namespace tessera::train {
namespace {

struct TargetField {
  const char* name;
  Tensor* LayerWeights::*field;
};

constexpr TargetField kTargets[] = {
    {"q", &LayerWeights::wq},        {"k", &LayerWeights::wk},      {"v", &LayerWeights::wv},
    {"o", &LayerWeights::wo},        {"gate", &LayerWeights::ffn_gate}, {"up", &LayerWeights::ffn_up},
    {"down", &LayerWeights::ffn_down},
};

const TargetField* target_field(const std::string& name) {
  for (const TargetField& t : kTargets) {
    if (name == t.name) return &t;
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

}  // namespace

Result<std::vector<std::string>> parse_lora_targets(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (target_field(item) == nullptr) {
      return Status::error("finetune: unknown LoRA target '" + item + "' (targets: q, k, v, o, gate, up, down)");
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
  if (b.arch->name != std::string_view("llama")) {
    return Status::error("finetune: LoRA training supports llama models, not '" + b.hparams.arch + "'");
  }
  auto m = std::make_unique<TrainModel>();
  m->arch = b.arch;
  m->h = b.hparams;
  m->w = b.weights;  // the frozen base, shared
  for (LayerWeights& l : m->w.layers) l.lora.clear();
  Rng rng(seed);
  for (LayerWeights& l : m->w.layers) {
    for (const std::string& t : s.targets) {
      Tensor* w = l.*(target_field(t)->field);
      if (w == nullptr) return Status::error("finetune: the model has no '" + t + "' projection");
      add_pair(*m, l, w, s);
    }
  }
  TESSERA_RETURN_IF_ERROR(place_params(*m, backend));
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
