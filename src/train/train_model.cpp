#include "train/train_model.h"

#include <cmath>
#include <set>

#include "core/check.h"
#include "core/rng.h"
#include "model/hparams.h"
#include "model/variant_check.h"
#include "quant/convert.h"

namespace tessera::train {
namespace {

int shape_dims(const Shape& ne) {
  int n = kMaxDims;
  while (n > 1 && ne[size_t(n - 1)] == 1) --n;
  return n;
}

// The hyper-parameters the loader derives from these keys.
Result<HParams> hparams_of(const gguf::Writer& keys, const Arch& arch) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::from_bytes(keys.to_bytes(), "training model");
  if (!f) return f.status();
  Result<HParams> h = read_hparams(**f);
  if (!h) return h.status();
  if (arch.configure != nullptr) TESSERA_RETURN_IF_ERROR(arch.configure(**f, *h));
  return h;
}

// Creates the parameter tensors of m.arch's list (those present per `present`), points
// m.w's fields at them, and decides the block variant they make.
Status make_params(TrainModel& m, const std::function<bool(const WeightSpec&, const std::string&)>& present) {
  m.w.layers.resize(size_t(m.h.n_layer));
  std::set<std::string> made;
  for_each_weight(m.arch->weights, m.h, [&](const WeightSpec& spec, const std::string& name, int64_t il) {
    if (!present(spec, name)) return;
    made.insert(name);
    Tensor* t = m.arena.new_tensor(DType::F32, spec.shape(m.h), name);
    t->flags |= kFlagWeight;
    (spec.model_field ? m.w.*spec.model_field : m.w.layers[size_t(il)].*spec.layer_field) = t;
    m.params.push_back(t);
  });
  Result<BlockVariant> v = decide_variant(*m.arch, m.h, [&](const std::string& name) { return made.count(name) > 0; });
  if (!v) return v.status();
  m.w.variant = *v;
  return Status::ok();
}

Status finish(TrainModel& m) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::from_bytes(m.keys.to_bytes(), "training model");
  if (!f) return f.status();
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::from_gguf(**f);
  if (!tok) return tok.status().with_context("training model");
  m.tokenizer = std::move(*tok);
  return Status::ok();
}

}  // namespace

Status place_params(TrainModel& m, Backend& backend) {
  const size_t align = backend.alignment();
  auto padded = [align](const Tensor* t) { return (t->nbytes() + align - 1) / align * align; };
  size_t bytes = 0;
  for (const Tensor* t : m.params) bytes += padded(t);
  Result<std::unique_ptr<Buffer>> buf = backend.alloc_buffer(bytes);
  if (!buf) return buf.status().with_context("train: the parameters");
  m.buffer = std::move(*buf);
  size_t offset = 0;
  for (Tensor* t : m.params) {
    m.buffer->place(t, offset);
    offset += padded(t);
  }
  return Status::ok();
}

int64_t TrainModel::n_params() const {
  int64_t n = 0;
  for (const Tensor* p : params) n += p->nelements();
  return n;
}

Result<std::unique_ptr<TrainModel>> create_model(const ModelShape& s, const gguf::Writer& vocab_keys,
                                                 const std::string& name, uint64_t seed, Backend& backend) {
  if (s.n_embd <= 0 || s.n_layer <= 0 || s.n_head <= 0 || s.n_head_kv <= 0 || s.n_ff <= 0 || s.n_ctx <= 0) {
    return Status::error("train: every dimension of the model must be positive");
  }
  if (s.n_embd % s.n_head != 0 || (s.n_embd / s.n_head) % 2 != 0 || s.n_head % s.n_head_kv != 0) {
    return Status::error("train: n_embd must be a multiple of n_head with an even head size, and n_head a multiple of n_head_kv");
  }
  auto m = std::make_unique<TrainModel>();
  m->arch = find_arch("llama");
  TESSERA_CHECK(m->arch != nullptr);
  m->keys = vocab_keys;
  m->keys.set("general.architecture", "llama");
  m->keys.set("general.name", name);
  m->keys.set("general.file_type", uint32_t(0));
  m->keys.set("llama.context_length", uint32_t(s.n_ctx));
  m->keys.set("llama.embedding_length", uint32_t(s.n_embd));
  m->keys.set("llama.block_count", uint32_t(s.n_layer));
  m->keys.set("llama.feed_forward_length", uint32_t(s.n_ff));
  m->keys.set("llama.attention.head_count", uint32_t(s.n_head));
  m->keys.set("llama.attention.head_count_kv", uint32_t(s.n_head_kv));
  m->keys.set("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  m->keys.set("llama.rope.dimension_count", uint32_t(s.n_embd / s.n_head));
  m->keys.set("llama.rope.freq_base", 10000.0f);
  Result<HParams> h = hparams_of(m->keys, *m->arch);
  if (!h) return h.status().with_context("train");
  m->h = *h;
  // The required tensors, the output unless tied, and the dense feed-forward: a llama
  // file's FFN is dense or experts (variant moe Either), and a model trained here is dense.
  const auto dense_ffn = [](const WeightSpec& spec) {
    return spec.layer_field == &LayerWeights::ffn_gate || spec.layer_field == &LayerWeights::ffn_up ||
           spec.layer_field == &LayerWeights::ffn_down;
  };
  TESSERA_RETURN_IF_ERROR(make_params(*m, [&](const WeightSpec& spec, const std::string&) {
    return spec.required || (spec.model_field == &ModelWeights::output && !s.tied_output) || dense_ffn(spec);
  }).with_context("train"));
  TESSERA_RETURN_IF_ERROR(place_params(*m, backend));
  Rng rng(seed);
  const float residual = 0.02f / std::sqrt(2.0f * float(s.n_layer));
  for (Tensor* p : m->params) {
    std::vector<float> v(size_t(p->nelements()));
    const bool norm = shape_dims(p->ne) == 1;
    const bool into_residual = p->name.ends_with("attn_output.weight") || p->name.ends_with("ffn_down.weight");
    const float sd = into_residual ? residual : 0.02f;
    for (float& x : v) x = norm ? 1.0f : sd * rng.normal();
    write_param(backend, p, v);
  }
  TESSERA_RETURN_IF_ERROR(finish(*m));
  return m;
}

Result<std::unique_ptr<TrainModel>> load_model(const gguf::File& file, const std::string& skip_prefix,
                                               Backend& backend) {
  auto m = std::make_unique<TrainModel>();
  Result<HParams> h = read_hparams(file);
  if (!h) return h.status();
  m->arch = find_arch(h->arch);
  if (m->arch == nullptr || h->arch != "llama") {
    return Status::error(file.path() + ": training supports llama models, not '" + h->arch + "'");
  }
  if (m->arch->configure != nullptr) TESSERA_RETURN_IF_ERROR(m->arch->configure(file, *h));
  m->h = *h;
  for (const auto& [key, value] : file.metadata()) {
    if (skip_prefix.empty() || !key.starts_with(skip_prefix)) m->keys.set(key, value);
  }
  Status missing;
  const Status made = make_params(*m, [&](const WeightSpec& spec, const std::string& name) {
    const bool found = file.find_tensor(name) != nullptr;
    if (!found && spec.required && missing.is_ok()) {
      missing = Status::error(file.path() + ": tensor '" + name + "' is missing");
    }
    return found;
  });
  TESSERA_RETURN_IF_ERROR(missing);
  TESSERA_RETURN_IF_ERROR(made.with_context(file.path()));
  TESSERA_RETURN_IF_ERROR(place_params(*m, backend));
  for (Tensor* p : m->params) {
    const gguf::TensorInfo* info = file.find_tensor(p->name);
    if (info->ne != p->ne) return Status::error(file.path() + ": tensor '" + p->name + "' has the wrong shape");
    if (info->type != DType::F32 && info->type != DType::F16 && info->type != DType::BF16) {
      return Status::error(file.path() + ": tensor '" + p->name + "' is " + std::string(dtype_name(info->type)) +
                           "; training continues from f32, f16 or bf16 weights only");
    }
    std::vector<float> v(size_t(p->nelements()));
    quant::to_float_fn(info->type)(info->data, v.data(), p->nelements());
    write_param(backend, p, v);
  }
  TESSERA_RETURN_IF_ERROR(finish(*m));
  return m;
}

std::vector<float> read_param(Backend& backend, const Tensor* p) {
  std::vector<float> v(size_t(p->nelements()));
  backend.get_tensor(p, v.data(), 0, v.size() * sizeof(float));
  return v;
}

void write_param(Backend& backend, Tensor* p, const std::vector<float>& values) {
  TESSERA_CHECK(int64_t(values.size()) == p->nelements());
  backend.set_tensor(p, values.data(), 0, values.size() * sizeof(float));
}

gguf::Writer model_writer(const TrainModel& m, Backend& backend, DType type) {
  gguf::Writer w = m.keys;
  w.set("general.file_type", uint32_t(type == DType::F32 ? 0 : type == DType::F16 ? 1 : 32));
  for (const Tensor* p : m.params) {
    const int n_dims = shape_dims(p->ne);
    const DType t = n_dims == 1 ? DType::F32 : type;
    const std::vector<float> v = read_param(backend, p);
    std::vector<uint8_t> bytes(dtype_row_size(t, p->ne[0]) * size_t(p->nrows()));
    quant::from_float_fn(t)(v.data(), bytes.data(), p->nelements());
    w.add_tensor(p->name, t, p->ne, n_dims, bytes.data(), bytes.size());
  }
  return w;
}

}  // namespace tessera::train
