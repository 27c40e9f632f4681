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

bool fp8(safetensors::Dtype t) { return t == safetensors::Dtype::F8_E4M3 || t == safetensors::Dtype::F8_E5M2; }

/// The scale tensor of FP8 source `name` (taken from `ck`), checked against the weight's
/// shape; no values when the checkpoint has none.
Result<SourceScale> fp8_scale(const std::string& name, const safetensors::TensorInfo& t, Checkpoint& ck,
                              std::array<int64_t, 2> block) {
  SourceScale s;
  if (!fp8(t.dtype)) return s;
  const int64_t rows = t.shape.size() >= 2 ? t.n_elements() / t.shape.back() : 1;
  s.cols = t.shape.empty() ? 1 : t.shape.back();
  const bool per_block = ck.has(name + "_scale_inv");
  const std::string scale_name = name + (per_block ? "_scale_inv" : "_scale");
  const safetensors::TensorInfo* scale = ck.take(scale_name);
  if (scale == nullptr) return s;
  const int64_t n = scale->n_elements();
  const int64_t want = per_block ? ((rows + block[0] - 1) / block[0]) * ((s.cols + block[1] - 1) / block[1]) : rows;
  if (n != want && (per_block || n != 1)) {
    return Status::error("convert: tensor '" + scale_name + "' (" + ck.file_of(scale_name) + ") has " +
                         std::to_string(n) + " scales, but '" + name + "' " + shape_text(t.shape) + " needs " +
                         std::to_string(want) +
                         (per_block ? " (blocks of " + std::to_string(block[0]) + " x " + std::to_string(block[1]) + ")"
                                    : " (one a row) or 1"));
  }
  s.values.resize(size_t(n));
  if (Status st = safetensors::to_float(*scale, s.values); !st) {
    return Status::error("convert: tensor '" + scale_name + "' (" + ck.file_of(scale_name) + ") is " +
                         safetensors::dtype_name(scale->dtype) + ", not a float type");
  }
  if (per_block) {
    s.block_rows = block[0];
    s.block_cols = block[1];
  }
  return s;
}

/// Values [first, first + v.size()) of a source times their scales.
void apply_scale(const SourceScale& s, int64_t first, std::span<float> v) {
  if (s.values.empty()) return;
  if (s.values.size() == 1) {
    for (float& x : v) x *= s.values[0];
    return;
  }
  const int64_t block_cols = s.block_cols > 0 ? (s.cols + s.block_cols - 1) / s.block_cols : 0;
  for (size_t k = 0; k < v.size(); ++k) {
    const int64_t e = first + int64_t(k), r = e / s.cols;
    v[k] *= s.block_rows > 0 ? s.values[size_t((r / s.block_rows) * block_cols + (e % s.cols) / s.block_cols)]
                             : s.values[size_t(r)];
  }
}

}  // namespace

Result<TensorJob> prepare_tensor(const TensorPlan& p, Checkpoint& ck, DType weights, std::array<int64_t, 2> fp8_block) {
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
    Result<SourceScale> scale = fp8_scale(name, *t, ck, fp8_block);
    if (!scale) return scale.status();
    job.sources.push_back(t);
    job.scales.push_back(std::move(*scale));
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
    for (size_t s = 0; s < job.sources.size(); ++s) {
      const size_t at = values.size();
      values.resize(at + size_t(job.sources[s]->n_elements()));
      TESSERA_RETURN_IF_ERROR(read_part(*job.sources[s], 0, std::span(values).subspan(at)));
      apply_scale(job.scales[s], 0, std::span(values).subspan(at));
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
      apply_scale(job.scales[s], at, values);
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
