#include "model/lora.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>

#include "core/check.h"
#include "quant/convert.h"

namespace tessera {
namespace {

struct Target {
  Tensor* weight = nullptr;
  int64_t layer = -1;
};

// Every adaptable weight of the base by name.
std::map<std::string, Target> targets_of(const Arch& arch, const HParams& h, ModelWeights& w) {
  std::map<std::string, Target> out;
  for_each_weight(arch.weights, h, [&](const WeightSpec& spec, const std::string& name, int64_t il) {
    if (spec.layer_field == nullptr || !adaptable(spec.layer_field)) return;
    Tensor* t = w.layers[size_t(il)].*spec.layer_field;
    if (t != nullptr) out[name] = {t, il};
  });
  return out;
}

Status check_keys(const gguf::File& f, const HParams& h) {
  Result<std::string> type = f.get_string("general.type");
  if (!type || *type != "adapter") return Status::error("general.type is not 'adapter': not an adapter file");
  Result<std::string> kind = f.get_string("adapter.type");
  if (!kind || *kind != "lora") return Status::error("adapter.type is not 'lora'");
  Result<std::string> arch = f.get_string("general.architecture");
  if (!arch || *arch != h.arch) {
    return Status::error("the adapter is for architecture '" + (arch ? *arch : std::string("?")) +
                         "', the model is '" + h.arch + "'");
  }
  return Status::ok();
}

// One a/b pair for `target`; the shapes must fit it.
Result<LoraDelta> delta_of(const gguf::TensorInfo& a, const gguf::TensorInfo& b,
                           const Target& target, int adapter, float scale, float alpha,
                           TensorArena& arena) {
  const Tensor* w = target.weight;
  const int64_t r = a.ne[1];
  if (a.ne[2] * a.ne[3] != 1 || b.ne[2] * b.ne[3] != 1 || a.ne[0] != w->ne[0] || b.ne[0] != r || b.ne[1] != w->ne[1]) {
    return Status::error("tensor '" + a.name + "' / '" + b.name + "' do not fit weight '" + w->name +
                         "' (want lora_a [" + std::to_string(w->ne[0]) + ", r] and lora_b [r, " +
                         std::to_string(w->ne[1]) + "])");
  }
  for (const gguf::TensorInfo* t : {&a, &b}) {
    if (quant::to_float_fn(t->type) == nullptr) {
      return Status::error("tensor '" + t->name + "' has type " + std::string(dtype_name(t->type)) + ", which tessera cannot compute with");
    }
  }
  auto make = [&](const gguf::TensorInfo& info) {
    Tensor* t = arena.new_tensor(info.type, info.ne, info.name);
    t->data = const_cast<uint8_t*>(info.data);  // only ever read
    t->flags |= kFlagWeight;
    return t;
  };
  LoraDelta d{w, make(a), make(b), adapter, alpha};
  d.scale = d.scale_for(scale);
  return d;
}

Status attach_one(const gguf::File& f, int adapter, float scale,
                  const std::map<std::string, Target>& targets, ModelWeights& w, TensorArena& arena,
                  const HParams& h) {
  TESSERA_RETURN_IF_ERROR(check_keys(f, h));
  float alpha = 0;
  if (f.find("adapter.lora.alpha")) {
    Result<double> v = f.get_float("adapter.lora.alpha");
    if (!v) return v.status();
    // Checked as a double: a value beyond float's range has no float to convert to.
    if (!std::isfinite(*v) || std::fabs(*v) > double(std::numeric_limits<float>::max())) {
      char value[32];
      std::snprintf(value, sizeof value, "%g", *v);
      return Status::error("key 'adapter.lora.alpha' = " + std::string(value) + " is not a finite number");
    }
    alpha = float(*v);
  }
  for (const gguf::TensorInfo& a : f.tensors()) {
    const bool is_a = a.name.ends_with(".lora_a");
    if (!is_a && !a.name.ends_with(".lora_b")) {
      return Status::error("tensor '" + a.name + "' is neither a .lora_a nor a .lora_b");
    }
    const std::string base = a.name.substr(0, a.name.size() - 7);
    const gguf::TensorInfo* b = f.find_tensor(base + (is_a ? ".lora_b" : ".lora_a"));
    if (b == nullptr) return Status::error("tensor '" + a.name + "' has no partner");
    if (!is_a) continue;  // each pair once, from its lora_a
    auto target = targets.find(base);
    if (target == targets.end()) {
      return Status::error("tensor '" + a.name + "' updates '" + base +
                           "', which is not an attention or feed-forward projection of this model");
    }
    Result<LoraDelta> d = delta_of(a, *b, target->second, adapter, scale, alpha, arena);
    if (!d) return d.status();
    w.layers[size_t(target->second.layer)].lora.push_back(*d);
  }
  return Status::ok();
}

}  // namespace

bool adaptable(Tensor* LayerWeights::*field) {
  for (Tensor* LayerWeights::*f : {&LayerWeights::wq, &LayerWeights::wk, &LayerWeights::wv, &LayerWeights::wqkv,
                                   &LayerWeights::wo, &LayerWeights::ffn_gate, &LayerWeights::ffn_up,
                                   &LayerWeights::ffn_down, &LayerWeights::ffn_gate_up, &LayerWeights::ffn_gate_shexp,
                                   &LayerWeights::ffn_up_shexp, &LayerWeights::ffn_down_shexp}) {
    if (f == field) return true;
  }
  return false;
}

Status attach_adapters(const std::vector<AdapterSpec>& specs, const Arch& arch, const HParams& h,
                       ModelWeights& w, TensorArena& arena, std::vector<std::unique_ptr<gguf::File>>& files) {
  const std::map<std::string, Target> targets = targets_of(arch, h, w);
  for (size_t i = 0; i < specs.size(); ++i) {
    const AdapterSpec& spec = specs[i];
    Result<std::unique_ptr<gguf::File>> f = gguf::File::open(spec.path);
    if (!f) return f.status();
    TESSERA_RETURN_IF_ERROR(attach_one(**f, int(i), spec.scale, targets, w, arena, h)
                                .with_context(spec.path + ": lora"));
    files.push_back(std::move(*f));
  }
  return Status::ok();
}

ModelWeights with_adapter_scales(const ModelWeights& w, std::span<const float> scales) {
  ModelWeights out = w;
  for (LayerWeights& l : out.layers) {
    std::vector<LoraDelta> kept;
    for (LoraDelta d : l.lora) {
      TESSERA_CHECK(d.adapter >= 0 && size_t(d.adapter) < scales.size());
      const float s = scales[size_t(d.adapter)];
      if (s == 0) continue;  // no update: left out, so the graph is the base model's
      d.scale = d.scale_for(s);
      kept.push_back(d);
    }
    l.lora = std::move(kept);
  }
  return out;
}

AdapterSpec parse_adapter_spec(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon != std::string::npos && colon + 1 < text.size()) {
    char* end = nullptr;
    const std::string tail = text.substr(colon + 1);
    const float scale = std::strtof(tail.c_str(), &end);
    if (end != nullptr && *end == '\0') return {text.substr(0, colon), scale};
  }
  return {text, 1.0f};
}

}  // namespace tessera
