#include "model/weights.h"

#include <unordered_set>

#include "model/arch.h"
#include "model/variant_check.h"
#include "quant/convert.h"

namespace tessera {
namespace {

std::string shape_string(const Shape& ne, int n_dims) {
  std::string s = "[";
  for (int i = 0; i < n_dims; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

int shape_dims(const Shape& ne) {
  int n = kMaxDims;
  while (n > 1 && ne[n - 1] == 1) --n;
  return n;
}

Status check_tensor(const gguf::TensorInfo& info, const Shape& expected, bool matrix) {
  if (info.ne != expected) {
    return Status::error("model: tensor '" + info.name + "' has shape " +
                         shape_string(info.ne, info.n_dims) + ", expected " +
                         shape_string(expected, shape_dims(expected)));
  }
  const DTypeTraits& t = dtype_traits(info.type);
  if (quant::to_float_fn(info.type) == nullptr) {
    return Status::error("model: tensor '" + info.name + "' has type " + std::string(t.name) +
                         ", which this build of tessera cannot compute with yet");
  }
  // Norms, biases and rope factors enter elementwise ops, which take f32 only.
  if (shape_dims(expected) == 1 && !matrix && info.type != DType::F32) {
    return Status::error("model: tensor '" + info.name + "' has type " + std::string(t.name) +
                         ", but a 1-D weight (a norm, a bias) must be f32");
  }
  return Status::ok();
}

}  // namespace

void for_each_tensor(const LayerWeights& l, const std::function<void(Tensor*)>& fn) {
  static constexpr Tensor* LayerWeights::*kFields[] = {
      &LayerWeights::attn_norm,   &LayerWeights::attn_norm_b,   &LayerWeights::attn_norm_2,
      &LayerWeights::attn_norm_2_b, &LayerWeights::wq,          &LayerWeights::wk,
      &LayerWeights::wv,          &LayerWeights::bq,            &LayerWeights::bk,
      &LayerWeights::bv,          &LayerWeights::bqkv,          &LayerWeights::attn_q_norm,
      &LayerWeights::attn_q_norm_b, &LayerWeights::attn_k_norm, &LayerWeights::attn_k_norm_b,
      &LayerWeights::wo,          &LayerWeights::bo,            &LayerWeights::ffn_norm,
      &LayerWeights::ffn_norm_b,  &LayerWeights::ffn_gate,      &LayerWeights::ffn_up,
      &LayerWeights::ffn_up_b,    &LayerWeights::ffn_down,      &LayerWeights::ffn_down_b,
      &LayerWeights::wqkv,        &LayerWeights::ffn_gate_up,   &LayerWeights::post_attn_norm,
      &LayerWeights::post_ffn_norm, &LayerWeights::ffn_gate_inp,
      &LayerWeights::ffn_gate_exps, &LayerWeights::ffn_up_exps, &LayerWeights::ffn_down_exps,
      &LayerWeights::ffn_gate_inp_shexp, &LayerWeights::ffn_gate_shexp, &LayerWeights::ffn_up_shexp,
      &LayerWeights::ffn_down_shexp, &LayerWeights::wq_a, &LayerWeights::attn_q_a_norm, &LayerWeights::wq_b,
      &LayerWeights::wkv_a_mqa, &LayerWeights::attn_kv_a_norm, &LayerWeights::wkv_b,
      &LayerWeights::attn_out_norm, &LayerWeights::attn_out_norm_b, &LayerWeights::layer_out_norm,
      &LayerWeights::layer_out_norm_b,
  };
  for (Tensor* LayerWeights::*f : kFields) {
    if (l.*f) fn(l.*f);
  }
  for (const LoraDelta& d : l.lora) {
    fn(d.a);
    fn(d.b);
  }
}

std::string weight_name(const WeightSpec& spec, int64_t il) {
  std::string name = spec.name;
  const size_t at = name.find("{}");
  if (at != std::string::npos) name.replace(at, 2, std::to_string(il));
  return name;
}

void for_each_weight(std::span<const WeightSpec> specs, const HParams& h,
                     const std::function<void(const WeightSpec&, const std::string&, int64_t)>& fn) {
  for (const WeightSpec& spec : specs) {
    if (spec.model_field) fn(spec, spec.name, -1);
  }
  for (int64_t il = 0; il < h.n_layer; ++il) {
    for (const WeightSpec& spec : specs) {
      if (spec.layer_field) fn(spec, weight_name(spec, il), il);
    }
  }
}

Result<ModelWeights> load_weights(const gguf::File& file, const Arch& arch, const HParams& h,
                                  TensorArena& arena) {
  ModelWeights w;
  Result<BlockVariant> variant =
      decide_variant(arch, h, [&](const std::string& name) { return file.find_tensor(name) != nullptr; });
  if (!variant) return variant.status();
  w.variant = *variant;
  w.layers.resize(size_t(h.n_layer));
  std::unordered_set<std::string> used;
  Status status;
  for_each_weight(arch.weights, h, [&](const WeightSpec& spec, const std::string& name, int64_t il) {
    if (!status.is_ok()) return;
    const gguf::TensorInfo* info = file.find_tensor(name);
    if (presence_of(il < 0 ? w.variant : layer_variant(w.variant, h, il), spec) != Presence::Yes) {
      if (info != nullptr) {
        status = Status::error("model: tensor '" + name + "' is not used by the " + h.arch +
                               " variant this file chose (decided from its global and layer-0 tensors" +
                               (w.variant.leading_dense ? " and leading_dense_block_count)" : ")"));
      }
      return;
    }
    if (info == nullptr) {
      status = Status::error("model: required tensor '" + name + "' is missing");
      return;
    }
    status = check_tensor(*info, spec.shape(h), spec.matrix);
    if (!status.is_ok()) return;
    Tensor* t = arena.new_tensor(info->type, info->ne, name);
    t->data = const_cast<uint8_t*>(info->data);  // weights are only ever read
    t->flags |= kFlagWeight;
    used.insert(name);
    if (spec.model_field) {
      w.*spec.model_field = t;
    } else {
      w.layers[size_t(il)].*spec.layer_field = t;
    }
  });
  if (!status.is_ok()) return status;
  for (const gguf::TensorInfo& info : file.tensors()) {
    if (!used.count(info.name)) {
      return Status::error("model: tensor '" + info.name + "' is not part of the " + h.arch +
                           " architecture (" + std::to_string(h.n_layer) + " layers)");
    }
  }
  return w;
}

}  // namespace tessera
