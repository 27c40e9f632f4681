// convert_checkpoint (tessera/convert.h): config.json → the architecture's keys and tensor
// plan → each planned tensor read from the mapped shards, checked against the plan's
// shape, rearranged and converted → one GGUF file, written to a temporary name and renamed
// (or quantized into place) only when everything succeeded.
#include <unistd.h>

#include <strings.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "convert/hf_arch.h"
#include "convert/hf_vocab.h"
#include "convert/transforms.h"
#include "quant/convert.h"
#include "tessera/convert.h"
#include "tessera/quantize.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using convert::Checkpoint;
using convert::TensorPlan;

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

/// `s` with trailing 1s dropped (GGUF's ne and PyTorch's shape agree up to them).
std::vector<int64_t> trimmed(std::vector<int64_t> s) {
  while (s.size() > 1 && s.back() == 1) s.pop_back();
  return s;
}

/// The plan's values as floats: its sources, checked against the plan's shape, stacked.
/// `n_dims`: the dimensions of the checkpoint's tensor (one more when stacked), which
/// decide, as in the reference, what stays F32 and the n_dims written.
Result<std::vector<float>> gather(const TensorPlan& p, Checkpoint& ck, int* n_dims) {
  *n_dims = int(p.shape.size());
  if (!p.generated.empty()) return p.generated;
  // Each source is one slice of the outermost GGUF dimension when the plan stacks them.
  const std::vector<int64_t> slice = convert::source_ne(p);
  std::vector<float> values;
  for (const std::string& name : p.sources) {
    const safetensors::TensorInfo* t = ck.take(name);
    if (t == nullptr) {
      return Status::error("convert: tensor '" + name + "' (for " + p.name + ") is missing from the checkpoint");
    }
    const std::vector<int64_t> ne(t->shape.rbegin(), t->shape.rend());  // innermost first
    *n_dims = int(t->shape.size()) + (p.name.ends_with("_exps.weight") ? 1 : 0);
    if (trimmed(ne) != trimmed(slice)) {
      return Status::error("convert: tensor '" + name + "' (" + ck.file_of(name) + ") has shape " +
                           shape_text(t->shape) + ", but config.json makes " + p.name + " " +
                           shape_text(std::vector<int64_t>(slice.rbegin(), slice.rend())));
    }
    const size_t at = values.size();
    values.resize(at + size_t(t->n_elements()));
    if (Status s = safetensors::to_float(*t, std::span(values).subspan(at)); !s) {
      return Status::error("convert: tensor '" + name + "' (" + ck.file_of(name) + ") is " +
                           safetensors::dtype_name(t->dtype) + ", which convert cannot read as weights");
    }
  }
  TESSERA_RETURN_IF_ERROR(convert::apply_transform(p, values));
  return values;
}

Result<DType> float_type(const std::string& type) {
  if (type == "f32") return DType::F32;
  if (type == "f16") return DType::F16;
  if (type == "bf16") return DType::BF16;
  return Status::error("not a float type");
}

/// The GGUF of the checkpoint's weights at `type` (f32/f16/bf16), written to `path`.
Status write_weights(const ConvertParams& p, const convert::HfConfig& c, const convert::HfArch& arch, DType type,
                     gguf::Writer& w, const std::string& path, ConvertReport& report) {
  Result<std::unique_ptr<Checkpoint>> ck = Checkpoint::open(p.input_dir);
  if (!ck) return ck.status();
  Result<std::vector<TensorPlan>> plan = convert::plan_tensors(arch, c, **ck, w);
  if (!plan) return plan.status();
  std::vector<std::vector<uint8_t>> storage;  // the converted tensors, alive until write()
  storage.reserve(plan->size());
  for (size_t i = 0; i < plan->size(); ++i) {
    const TensorPlan& tp = (*plan)[i];
    if (p.progress) p.progress({i, plan->size(), tp.name});
    int n_dims = 0;
    Result<std::vector<float>> v = gather(tp, **ck, &n_dims);
    if (!v) return v.status();
    // As the reference's prepare_tensors: 1-D tensors and every *_norm.weight stay F32.
    const DType t = tp.keep_f32 || n_dims <= 1 || tp.name.ends_with("_norm.weight") ? DType::F32 : type;
    std::array<int64_t, 4> ne = {1, 1, 1, 1};
    for (size_t d = 0; d < tp.shape.size(); ++d) ne[d] = tp.shape[d];
    std::vector<uint8_t>& bytes = storage.emplace_back(dtype_row_size(t, ne[0]) * size_t(v->size() / size_t(ne[0])));
    quant::from_float_fn(t)(v->data(), bytes.data(), int64_t(v->size()));
    w.add_tensor_ref(tp.name, t, ne, std::max(1, n_dims), bytes.data(), bytes.size());
  }
  if (const std::vector<std::string> left = (*ck)->left_over(); !left.empty()) {
    return Status::error("convert: tensor '" + left.front() + "' (" + (*ck)->file_of(left.front()) + ") has no place in a " +
                         arch.arch + " GGUF" + (left.size() > 1 ? " (nor " + std::to_string(left.size() - 1) + " more)" : ""));
  }
  report.n_tensors = plan->size();
  if (p.progress) p.progress({plan->size(), plan->size(), ""});
  return w.write(path);
}

uint32_t file_type_of(DType t) { return t == DType::F32 ? 0 : t == DType::F16 ? 1 : 32; }

}  // namespace

Result<ConvertReport> convert_checkpoint(const ConvertParams& p) {
  const auto start = std::chrono::steady_clock::now();
  Result<convert::HfConfig> c = convert::HfConfig::load(p.input_dir);
  if (!c) return c.status();
  ConvertReport report;
  report.hf_arch = c->hf_arch();
  Result<const convert::HfArch*> arch = convert::find_hf_arch(report.hf_arch, p.arch_override);
  if (!arch) return arch.status();
  report.arch = (*arch)->arch;
  Result<DType> type = float_type(p.type);
  const bool quantized = !type;
  if (quantized) {
    bool known = false;
    for (const std::string& n : quantize_type_names()) known = known || strcasecmp(n.c_str(), p.type.c_str()) == 0;
    if (!known) return Status::error("convert: --type '" + p.type + "' is not f32, f16, bf16 or a quantize type");
  }
  if (p.vocab_only && !convert::has_hf_vocab(p.input_dir)) {
    return Status::error("convert: --vocab-only: " + p.input_dir + " has no tokenizer.json, tokenizer.model or vocab.txt");
  }

  gguf::Writer w;
  w.set("general.architecture", report.arch);
  w.set("general.name", fs::path(p.input_dir).lexically_normal().filename().string());
  w.set("general.file_type", file_type_of(quantized ? DType::F16 : *type));
  // --vocab-only needs only config.json's architectures: the <arch>.* keys are written when
  // config.json gives them all (tried on a scratch writer first), as the reference does.
  gguf::Writer scratch;
  if (!p.vocab_only || (*arch)->keys(*c, report.arch, scratch)) TESSERA_RETURN_IF_ERROR((*arch)->keys(*c, report.arch, w));
  if (convert::has_hf_vocab(p.input_dir)) {
    TESSERA_RETURN_IF_ERROR(convert::add_hf_vocab(p.input_dir, report.arch, w));
    report.vocab = true;
  }

  // Written beside the output under a temporary name: no partial OUT, ever.
  const std::string tmp = p.output_path + ".tmp-" + std::to_string(::getpid());
  Status s = p.vocab_only ? w.write(tmp) : write_weights(p, *c, **arch, quantized ? DType::F16 : *type, w, tmp, report);
  if (s && quantized && !p.vocab_only) {
    QuantizeParams qp;
    qp.type_name = p.type;
    qp.n_threads = p.n_threads;
    Result<QuantizeReport> q = quantize_model(tmp, p.output_path, qp);
    s = q ? Status::ok() : q.status();
  } else if (s) {
    std::error_code ec;
    fs::rename(tmp, p.output_path, ec);
    if (ec) s = Status::error("convert: cannot move the output to '" + p.output_path + "': " + ec.message());
  }
  std::error_code ignored;
  fs::remove(tmp, ignored);
  if (!s) return s;
  report.out_bytes = fs::file_size(p.output_path, ignored);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::vector<std::pair<std::string, std::string>> convertible_architectures() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const convert::HfArch* a : convert::hf_archs()) out.emplace_back(a->hf_name, a->arch);
  return out;
}

}  // namespace tessera
