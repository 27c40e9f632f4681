#include "convert/tensor_stream.h"

#include <algorithm>
#include <span>

#include "convert/transforms.h"
#include "quant/convert.h"

namespace tessera::convert {
namespace {

/// Floats converted at a time (4 MiB of them, whole rows).
constexpr int64_t kBlockElements = int64_t(1) << 20;

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

bool readable(safetensors::Dtype t) {
  using safetensors::Dtype;
  return t == Dtype::F32 || t == Dtype::F64 || t == Dtype::F16 || t == Dtype::BF16 || t == Dtype::F8_E4M3 ||
         t == Dtype::F8_E5M2;
}

/// Transforms that act on each value alone, so a source can be converted a block at a time.
bool elementwise(Transform t) { return t == Transform::None || t == Transform::AddOne; }

/// `v` (whole rows of `row` values) converted to `type` and given to `out`, a block at a time.
Status emit(std::span<const float> v, DType type, int64_t row, const gguf::Writer::ByteSink& out) {
  const size_t block = size_t(std::max<int64_t>(1, kBlockElements / row) * row);
  std::vector<uint8_t> bytes;
  for (size_t at = 0; at < v.size(); at += block) {
    const size_t n = std::min(block, v.size() - at);
    bytes.resize(dtype_row_size(type, row) * (n / size_t(row)));
    quant::from_float_fn(type)(v.data() + at, bytes.data(), int64_t(n));
    // The writer reports a failed sink with the file and the OS error: this only stops.
    if (!out(bytes.data(), bytes.size())) return Status::error("convert: the output could not be written");
  }
  return Status::ok();
}

/// Elements [begin, begin + n) of `t` as floats (a view of its bytes, converted).
Status read_part(const safetensors::TensorInfo& t, int64_t begin, std::span<float> out) {
  safetensors::TensorInfo part = t;
  const size_t size = safetensors::dtype_size(t.dtype);
  part.data = t.data + size_t(begin) * size;
  part.shape = {int64_t(out.size())};
  part.nbytes = out.size() * size;
  return safetensors::to_float(part, out);
}

}  // namespace

Result<TensorJob> prepare_tensor(const TensorPlan& p, Checkpoint& ck, DType weights) {
  TensorJob job;
  job.plan = &p;
  job.n_dims = int(p.shape.size());
  // Each source is one slice of the outermost GGUF dimension when the plan stacks them.
  const bool stacked = p.name.ends_with("_exps.weight");
  const std::vector<int64_t> slice = source_ne(p);
  for (const std::string& name : p.sources) {
    const safetensors::TensorInfo* t = ck.take(name);
    if (t == nullptr) {
      return Status::error("convert: tensor '" + name + "' (for " + p.name + ") is missing from the checkpoint");
    }
    const std::vector<int64_t> ne(t->shape.rbegin(), t->shape.rend());  // innermost first
    job.n_dims = int(t->shape.size()) + (stacked ? 1 : 0);
    if (trimmed(ne) != trimmed(slice)) {
      return Status::error("convert: tensor '" + name + "' (" + ck.file_of(name) + ") has shape " +
                           shape_text(t->shape) + ", but config.json makes " + p.name + " " +
                           shape_text(std::vector<int64_t>(slice.rbegin(), slice.rend())));
    }
    if (!readable(t->dtype)) {
      return Status::error("convert: tensor '" + name + "' (" + ck.file_of(name) + ") is " +
                           safetensors::dtype_name(t->dtype) + ", which convert cannot read as weights");
    }
    job.sources.push_back(t);
  }
  // As the reference's prepare_tensors: 1-D tensors and every *_norm.weight stay F32.
  job.type = p.keep_f32 || job.n_dims <= 1 || p.name.ends_with("_norm.weight") ? DType::F32 : weights;
  for (size_t d = 0; d < p.shape.size(); ++d) job.ne[d] = p.shape[d];
  job.n_dims = std::max(1, job.n_dims);
  job.nbytes = dtype_row_size(job.type, job.ne[0]) * size_t(job.ne[1] * job.ne[2] * job.ne[3]);
  return job;
}

Status produce_tensor(const TensorJob& job, const Checkpoint& ck, const gguf::Writer::ByteSink& out) {
  const TensorPlan& p = *job.plan;
  const int64_t row = job.ne[0];
  if (!p.generated.empty()) return emit(p.generated, job.type, row, out);
  if (!elementwise(p.transform)) {
    // The transform moves values across rows: the whole tensor at once.
    std::vector<float> values;
    for (const safetensors::TensorInfo* t : job.sources) {
      const size_t at = values.size();
      values.resize(at + size_t(t->n_elements()));
      TESSERA_RETURN_IF_ERROR(read_part(*t, 0, std::span(values).subspan(at)));
    }
    for (const std::string& name : p.sources) ck.release(name);
    TESSERA_RETURN_IF_ERROR(apply_transform(p, values));
    return emit(values, job.type, row, out);
  }
  const int64_t block = std::max<int64_t>(1, kBlockElements / row) * row;
  std::vector<float> values;
  for (size_t s = 0; s < job.sources.size(); ++s) {
    const safetensors::TensorInfo& t = *job.sources[s];
    // A fused source (p.parts blocks of rows): this tensor's block alone.
    const int64_t per = t.n_elements() / p.parts, begin = per * p.part, end = begin + per;
    for (int64_t at = begin; at < end; at += block) {
      values.resize(size_t(std::min(block, end - at)));
      TESSERA_RETURN_IF_ERROR(read_part(t, at, values));
      if (p.transform == Transform::AddOne) {
        for (float& x : values) x += 1.0f;
      }
      TESSERA_RETURN_IF_ERROR(emit(values, job.type, row, out));
    }
    ck.release(p.sources[s]);
  }
  return Status::ok();
}

}  // namespace tessera::convert
