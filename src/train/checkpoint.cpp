#include "train/checkpoint.h"

#include "train/preflight.h"

#include <cstdio>
#include <cstring>

namespace tessera::train {
namespace {

constexpr const char* kM = "optimizer.m.";
constexpr const char* kV = "optimizer.v.";

void add_f32(gguf::Writer& w, const std::string& name, const Tensor* like, const std::vector<float>& v) {
  int n_dims = kMaxDims;
  while (n_dims > 1 && like->ne[size_t(n_dims - 1)] == 1) --n_dims;
  w.add_tensor(name, DType::F32, like->ne, n_dims, v.data(), v.size() * sizeof(float));
}

Result<std::vector<float>> read_f32(const gguf::File& f, const std::string& name, const Tensor* like) {
  const gguf::TensorInfo* info = f.find_tensor(name);
  if (info == nullptr) return Status::error(f.path() + ": checkpoint tensor '" + name + "' is missing");
  if (info->type != DType::F32 || info->ne != like->ne) {
    return Status::error(f.path() + ": checkpoint tensor '" + name + "' has the wrong type or shape");
  }
  std::vector<float> v(size_t(info->n_elements()));
  std::memcpy(v.data(), info->data, v.size() * sizeof(float));
  return v;
}

}  // namespace

Status write_checkpoint(const std::string& path, Trainer& t, Backend& backend, const RunExtras& extras) {
  const RunConfig& c = t.config();
  gguf::Writer w = model_writer(t.model(), backend, DType::F32);
  w.set("training.step", t.step());
  // u64 values are stored as i64 bit patterns: the reader's integers are signed.
  w.set("training.rng_state", int64_t(t.rng().state()));
  w.set("training.batch", c.batch);
  w.set("training.accum", c.accum);
  w.set("training.n_ctx", c.n_ctx);
  w.set("training.steps", c.steps);
  w.set("training.eval_windows", c.eval_windows);
  w.set("training.seed", int64_t(c.seed));
  w.set("training.lr", c.adam.lr);
  w.set("training.min_lr_ratio", c.adam.min_lr_ratio);
  w.set("training.warmup", c.adam.warmup);
  w.set("training.beta1", c.adam.beta1);
  w.set("training.beta2", c.adam.beta2);
  w.set("training.eps", c.adam.eps);
  w.set("training.weight_decay", c.adam.weight_decay);
  w.set("training.grad_clip", c.adam.grad_clip);
  w.set("training.eval_every", extras.eval_every);
  w.set("training.val_fraction", extras.val_fraction);
  w.set("training.text_hash", int64_t(extras.text_hash));
  w.set("training.text_path", extras.text_path);
  const std::vector<Tensor*>& params = t.model().params;
  for (size_t i = 0; i < params.size(); ++i) {
    const AdamWState& s = t.optimizer()[i];
    const std::vector<float> zeros(s.m.empty() ? size_t(params[i]->nelements()) : 0, 0.0f);
    add_f32(w, kM + params[i]->name, params[i], s.m.empty() ? zeros : s.m);
    add_f32(w, kV + params[i]->name, params[i], s.v.empty() ? zeros : s.v);
  }
  return write_atomically(w, path);
}

Result<RunConfig> read_run_config(const gguf::File& f, RunExtras* extras) {
  RunConfig c;
  Status err;
  auto i64 = [&](const char* key, int64_t& out) {
    Result<int64_t> v = f.get_int(key);
    if (v) out = *v; else if (err.is_ok()) err = v.status();
  };
  auto f32 = [&](const char* key, float& out) {
    Result<double> v = f.get_float(key);
    if (v) out = float(*v); else if (err.is_ok()) err = v.status();
  };
  int64_t seed = 0;
  i64("training.batch", c.batch);
  i64("training.accum", c.accum);
  i64("training.n_ctx", c.n_ctx);
  i64("training.steps", c.steps);
  i64("training.eval_windows", c.eval_windows);
  i64("training.seed", seed);
  i64("training.warmup", c.adam.warmup);
  i64("training.eval_every", extras->eval_every);
  f32("training.lr", c.adam.lr);
  f32("training.min_lr_ratio", c.adam.min_lr_ratio);
  f32("training.beta1", c.adam.beta1);
  f32("training.beta2", c.adam.beta2);
  f32("training.eps", c.adam.eps);
  f32("training.weight_decay", c.adam.weight_decay);
  f32("training.grad_clip", c.adam.grad_clip);
  Result<double> vf = f.get_float("training.val_fraction");
  if (vf) extras->val_fraction = *vf; else if (err.is_ok()) err = vf.status();
  if (!err.is_ok()) return err.with_context(f.path() + " (is it a tessera training checkpoint?)");
  // Checkpoints written before the text's hash was kept have neither key.
  if (Result<int64_t> h = f.get_int("training.text_hash"); h) extras->text_hash = uint64_t(*h);
  if (Result<std::string> t = f.get_string("training.text_path"); t) extras->text_path = *t;
  c.seed = uint64_t(seed);
  c.adam.total_steps = c.steps;
  return c;
}

Status restore_checkpoint(const gguf::File& f, Trainer& t) {
  Result<int64_t> step = f.get_int("training.step");
  if (!step) return step.status();
  Result<int64_t> rng = f.get_int("training.rng_state");
  if (!rng) return rng.status();
  const std::vector<Tensor*>& params = t.model().params;
  for (size_t i = 0; i < params.size(); ++i) {
    Result<std::vector<float>> m = read_f32(f, kM + params[i]->name, params[i]);
    if (!m) return m.status();
    Result<std::vector<float>> v = read_f32(f, kV + params[i]->name, params[i]);
    if (!v) return v.status();
    t.optimizer()[i] = {std::move(*m), std::move(*v)};
  }
  t.set_step(*step);
  t.rng().set_state(uint64_t(*rng));
  return Status::ok();
}

}  // namespace tessera::train
