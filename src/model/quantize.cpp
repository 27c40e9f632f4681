// quantize_model: reads a GGUF model, converts each weight matrix to the type its recipe
// gives it (rows shared across threads), and writes a new GGUF file.
#include "tessera/quantize.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <thread>

#include "model/quant_recipe.h"
#include "quant/imatrix_file.h"
#include "quant/quant.h"
#include "tessera/gguf.h"
#include "tessera/log.h"
#include "quant/convert.h"

namespace tessera {
namespace {

constexpr uint32_t kQuantizationVersion = 2;          // the block layouts of the k-quants era
constexpr int64_t kChunkElements = int64_t(1) << 16;  // floats converted at a time per thread

/// Converts rows [r0, r1) of `t` into `dst` (the output's first row), a chunk at a time.
/// With `importance` (ne[0] values per plane: an expert stack's experts each have theirs)
/// the type's weighted search quantizes the rows.
void convert_range(const gguf::TensorInfo& t, DType to, int64_t r0, int64_t r1, uint8_t* dst,
                   const float* importance) {
  const ToFloatFn to_float = quant::to_float_fn(t.type);
  const FromFloatFn from_float = quant::from_float_fn(to);
  const int64_t n = t.ne[0];
  const size_t in_row = dtype_row_size(t.type, n), out_row = dtype_row_size(to, n);
  const int64_t chunk = std::max<int64_t>(1, kChunkElements / n);
  std::vector<float> buf(static_cast<size_t>(std::min(chunk, r1 - r0) * n));
  for (int64_t r = r0; r < r1;) {
    // Rows are whole blocks: convert m at once, within one plane.
    const int64_t plane = r / t.ne[1];
    const int64_t m = std::min({chunk, r1 - r, (plane + 1) * t.ne[1] - r});
    to_float(t.data + size_t(r) * in_row, buf.data(), m * n);
    if (importance != nullptr) {
      const float* imp = importance + (plane % t.ne[2]) * n;
      quant::quantize_rows(to, buf.data(), dst + size_t(r) * out_row, m, n, imp);
    } else {
      from_float(buf.data(), dst + size_t(r) * out_row, m * n);
    }
    r += m;
  }
}

/// Converts all rows of `t` to `to`, the rows split into n_threads contiguous ranges.
void convert_tensor(const gguf::TensorInfo& t, DType to, uint8_t* dst, int n_threads,
                    const float* importance) {
  const int64_t rows = t.n_elements() / t.ne[0];
  const int64_t min_rows = std::max<int64_t>(1, kChunkElements / (4 * t.ne[0]));  // not tiny slices
  const int64_t n_parts = std::clamp<int64_t>(rows / min_rows, 1, n_threads);
  std::vector<std::thread> workers;
  for (int64_t p = 1; p < n_parts; ++p) {
    workers.emplace_back(convert_range, std::cref(t), to, rows * p / n_parts,
                         rows * (p + 1) / n_parts, dst, importance);
  }
  convert_range(t, to, 0, rows / n_parts, dst, importance);
  for (std::thread& w : workers) w.join();
}

std::string valid_names() {
  std::string s;
  for (const std::string& n : quantize_type_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

/// Refuses already-quantized inputs (unless allowed) and types tessera cannot convert.
Status check_input(const gguf::File& file, const std::vector<TensorPlan>& plans,
                   bool allow_requantize) {
  const std::vector<gguf::TensorInfo>& tensors = file.tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const gguf::TensorInfo& t = tensors[i];
    const std::string type(dtype_name(t.type));
    if (dtype_traits(t.type).is_quantized && !allow_requantize) {
      return Status::error("quantize: " + file.path() + ": tensor '" + t.name +
                           "' is already quantized (" + type +
                           "); requantizing loses accuracy and is off unless allowed "
                           "(--allow-requantize)");
    }
    if (plans[i].type == t.type) continue;
    if (quant::to_float_fn(t.type) == nullptr) {
      return Status::error("quantize: " + file.path() + ": tensor '" + t.name + "' has type " +
                           type + ", which tessera cannot convert yet");
    }
    if (quant::from_float_fn(plans[i].type) == nullptr) {
      return Status::error("quantize: tensor '" + t.name + "': tessera cannot produce type " +
                           std::string(dtype_name(plans[i].type)) + " yet");
    }
  }
  return Status::ok();
}

Status check_paths(const std::string& in, const std::string& out) {
  std::error_code ec;
  if (std::filesystem::exists(out, ec) && std::filesystem::equivalent(in, out, ec)) {
    return Status::error("quantize: the output " + out + " is the input file; choose another path");
  }
  return Status::ok();
}

/// One quantization run: the input, its plan and the writer. Each tensor's bytes are
/// produced as the file is written (converted, or the input's own), one tensor at a time,
/// and the input's pages given back after it: the output is never held whole.
struct Job {
  const gguf::File& file;
  const QuantRecipe& recipe;
  const QuantizeParams& params;
  std::vector<TensorPlan> plans;
  const quant::Imatrix* imatrix;               // null without --imatrix
  std::vector<std::vector<float>> importance;  // per tensor: empty, or its importance
  gguf::Writer writer;
  QuantizeReport report;
  uint64_t in_bytes_total = 0;

  void copy_metadata() {
    for (const auto& [key, value] : file.metadata()) writer.set(key, value);
    writer.set("general.file_type", static_cast<uint32_t>(recipe.file_type));
    writer.set("general.quantization_version", kQuantizationVersion);
    if (imatrix == nullptr) return;
    // The reference's keys, its strings cut at 127 bytes as it cuts them.
    writer.set("quantize.imatrix.file", params.imatrix_path.substr(0, 127));
    if (!imatrix->dataset.empty()) writer.set("quantize.imatrix.dataset", imatrix->dataset.substr(0, 127));
    writer.set("quantize.imatrix.entries_count", int32_t(imatrix->entries.size()));
    if (imatrix->chunks > 0) writer.set("quantize.imatrix.chunks_count", imatrix->chunks);
  }

  void add_tensor(size_t i, int n_threads) {
    const gguf::TensorInfo& t = file.tensors()[i];
    const DType to = plans[i].type;
    const size_t nbytes = dtype_row_size(to, t.ne[0]) * size_t(t.n_elements() / t.ne[0]);
    writer.add_tensor_stream(t.name, to, t.ne, t.n_dims, nbytes, [this, i, n_threads, &t, to, nbytes](const auto& out) {
      bool ok = true;
      if (to == t.type) {
        ok = out(t.data, t.nbytes);
      } else {
        std::vector<uint8_t> bytes;
        try {
          bytes.resize(nbytes);
        } catch (const std::bad_alloc&) {
          return Status::error("quantize: tensor '" + t.name + "': out of memory for " +
                               std::to_string(nbytes >> 20) + " MiB of output");
        }
        const std::vector<float>& imp = importance[i];
        convert_tensor(t, to, bytes.data(), n_threads, imp.empty() ? nullptr : imp.data());
        ok = out(bytes.data(), bytes.size());
        ++report.n_converted;
        report.n_imatrix += !imp.empty() && quant::format(to)->quantize_weighted != nullptr;  // (Q8_0 has no search)
      }
      file.release_tensor_pages(t.data, t.nbytes);
      report.out_tensor_bytes += nbytes;
      report.in_tensor_bytes += t.nbytes;
      report.n_elements += uint64_t(t.n_elements());
      notify(i);
      // The writer reports a failed sink with the file and the OS error: this only stops.
      return ok ? Status::ok() : Status::error("quantize: the output could not be written");
    });
  }

  void notify(size_t i) {
    const gguf::TensorInfo& t = file.tensors()[i];
    if (!plans[i].note.empty()) {
      ++report.n_fallbacks;
      log(LogLevel::Debug, "quantize: %s: %s", t.name.c_str(), plans[i].note.c_str());
    }
    if (!params.progress) return;
    QuantizeProgress p;
    p.index = i;
    p.n_tensors = file.tensors().size();
    p.name = t.name;
    p.from = t.type;
    p.to = plans[i].type;
    p.ne = t.ne;
    p.n_dims = t.n_dims;
    p.converted = p.from != p.to;
    p.note = plans[i].note;
    p.in_bytes_done = report.in_tensor_bytes;
    p.in_bytes_total = in_bytes_total;
    p.out_bytes_done = report.out_tensor_bytes;
    params.progress(p);
  }

  void count_types() {
    std::map<DType, size_t> counts;
    for (const TensorPlan& p : plans) ++counts[p.type];
    report.type_counts.assign(counts.begin(), counts.end());
    std::sort(report.type_counts.begin(), report.type_counts.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
  }
};

std::vector<TensorPlan> plan_for(const gguf::File& file, const QuantRecipe& recipe, bool pure,
                                 bool has_imatrix) {
  std::vector<TensorDesc> descs;
  descs.reserve(file.tensors().size());
  for (const gguf::TensorInfo& t : file.tensors()) {
    // Dims as the reference counts them (ggml_n_dims: trailing 1s dropped), so that a
    // one-row matrix (Qwen2-MoE's ffn_gate_inp_shexp [n_embd, 1]) stays unquantized.
    int n_dims = t.n_dims;
    while (n_dims > 1 && t.ne[size_t(n_dims - 1)] == 1) --n_dims;
    descs.push_back({t.name, t.type, n_dims, t.ne[0]});
  }
  return plan_quantization(recipe, quant_model_facts(file), descs, pure, has_imatrix);
}

Result<quant::Imatrix> load_imatrix(const std::string& path) {
  Result<quant::Imatrix> m = quant::read_imatrix(path);
  if (!m) return m.status().with_context("quantize");
  for (const quant::ImatrixEntry& e : m->entries) {
    for (float v : e.values) {
      if (!std::isfinite(v)) {
        return Status::error("quantize: " + path + ": entry '" + e.name + "' has a non-finite value");
      }
    }
  }
  return m;
}

/// Each converted tensor's importance (its entry / ncall, when the file has one of its
/// size), and the refusals: a wrong size, a tensor whose type needs one and has none.
Status assign_importance(Job& job) {
  const std::vector<gguf::TensorInfo>& tensors = job.file.tensors();
  job.importance.assign(tensors.size(), {});
  for (size_t i = 0; i < tensors.size(); ++i) {
    const gguf::TensorInfo& t = tensors[i];
    const DType to = job.plans[i].type;
    if (to == t.type || quant::format(to) == nullptr) continue;  // copied, or not block-quantized
    const quant::ImatrixEntry* e = job.imatrix ? job.imatrix->find(t.name) : nullptr;
    if (e != nullptr) {
      const int64_t want = t.ne[0] * t.ne[2];
      if (int64_t(e->values.size()) == want) {
        job.importance[i] = e->importance();
      } else if (t.name != "token_embd.weight") {  // the reference ignores this one's
        return Status::error("quantize: " + job.params.imatrix_path + ": the entry of tensor '" + t.name + "' has " +
                             std::to_string(e->values.size()) + " values; the tensor needs " +
                             std::to_string(want) + " (row length x experts)");
      }
    } else if (job.imatrix) {
      log(LogLevel::Info, "quantize: no importance matrix entry for %s", t.name.c_str());
    }
    if (job.importance[i].empty() && tensor_needs_imatrix(job.recipe.file_type, to, t.name)) {
      return Status::error("quantize: tensor '" + t.name + "' gets type " + std::string(dtype_name(to)) + " in " +
                           std::string(file_type_name(job.recipe.file_type)) +
                           ", which needs an importance matrix entry for it" +
                           (job.imatrix ? " (" + job.params.imatrix_path + " has none)"
                                        : " (--imatrix FILE, made by `tessera imatrix`)"));
    }
  }
  return Status::ok();
}

Result<QuantizeReport> run_job(Job& job, const std::string& out) {
  const auto start = std::chrono::steady_clock::now();
  const int n_threads = job.params.n_threads > 0
                            ? job.params.n_threads
                            : int(std::max(1u, std::thread::hardware_concurrency()));
  job.copy_metadata();
  for (const gguf::TensorInfo& t : job.file.tensors()) job.in_bytes_total += t.nbytes;
  for (size_t i = 0; i < job.file.tensors().size(); ++i) job.add_tensor(i, n_threads);
  TESSERA_RETURN_IF_ERROR(job.writer.write(out));
  QuantizeReport& r = job.report;
  r.recipe = std::string(file_type_name(job.recipe.file_type));
  r.file_type = static_cast<uint32_t>(job.recipe.file_type);
  r.n_tensors = job.file.tensors().size();
  r.in_file_bytes = job.file.file_size();
  std::error_code ec;
  r.out_file_bytes = std::filesystem::file_size(out, ec);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  job.count_types();
  return r;
}

}  // namespace

std::vector<std::string> quantize_type_names() {
  std::vector<std::string> names;
  for (const QuantRecipe& r : quant_recipes()) names.emplace_back(r.name);
  return names;
}

std::string quantize_type_summary(std::string_view name) {
  const QuantRecipe* r = find_quant_recipe(name);
  return r ? std::string(r->summary) : std::string();
}

double quantize_type_bpw(std::string_view name) {
  const QuantRecipe* r = find_quant_recipe(name);
  return r ? recipe_bpw(*r) : 0.0;
}

bool quantize_type_bpw_is_mix(std::string_view name) {
  const QuantRecipe* r = find_quant_recipe(name);
  return r != nullptr && r->mix_bpw > 0;
}

Result<QuantizeReport> quantize_model(const std::string& in, const std::string& out,
                                      const QuantizeParams& params) {
  const QuantRecipe* recipe = find_quant_recipe(params.type_name);
  if (!recipe) {
    return Status::error("quantize: unknown type '" + params.type_name +
                         "' (valid: " + valid_names() + ")");
  }
  if (recipe->needs_imatrix && params.imatrix_path.empty()) {
    return Status::error("quantize: " + std::string(recipe->name) +
                         " needs an importance matrix (--imatrix FILE, made by `tessera imatrix`): "
                         "without one the reference quantizer refuses it, as the result is garbage");
  }
  std::optional<quant::Imatrix> imatrix;
  if (!params.imatrix_path.empty()) {
    Result<quant::Imatrix> m = load_imatrix(params.imatrix_path);
    if (!m) return m.status();
    imatrix = std::move(*m);
  }
  Result<std::unique_ptr<gguf::File>> file = gguf::File::open_model(in);
  if (!file) return file.status();
  TESSERA_RETURN_IF_ERROR(check_paths(in, out));
  const quant::Imatrix* im = imatrix ? &*imatrix : nullptr;
  Job job{**file, *recipe, params, plan_for(**file, *recipe, params.pure, im != nullptr), im, {}, {}, {}, 0};
  TESSERA_RETURN_IF_ERROR(check_input(job.file, job.plans, params.allow_requantize));
  TESSERA_RETURN_IF_ERROR(assign_importance(job));
  job.report.n_imatrix_entries = im ? im->entries.size() : 0;
  return run_job(job, out);
}

}  // namespace tessera
