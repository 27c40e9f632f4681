// quantize_model: reads a GGUF model, converts each weight matrix to the type its recipe
// gives it (rows shared across threads), and writes a new GGUF file.
#include "tessera/quantize.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <new>
#include <thread>

#include "model/quant_recipe.h"
#include "quant/quant.h"
#include "tessera/gguf.h"
#include "tessera/log.h"
#include "quant/convert.h"

namespace tessera {
namespace {

constexpr uint32_t kQuantizationVersion = 2;          // the block layouts of the k-quants era
constexpr int64_t kChunkElements = int64_t(1) << 16;  // floats converted at a time per thread

/// Converts rows [r0, r1) of `t` into `dst` (the output's first row), a chunk at a time.
void convert_range(const gguf::TensorInfo& t, DType to, int64_t r0, int64_t r1, uint8_t* dst) {
  const ToFloatFn to_float = quant::to_float_fn(t.type);
  const FromFloatFn from_float = quant::from_float_fn(to);
  const int64_t n = t.ne[0];
  const size_t in_row = dtype_row_size(t.type, n), out_row = dtype_row_size(to, n);
  const int64_t chunk = std::max<int64_t>(1, kChunkElements / n);
  std::vector<float> buf(static_cast<size_t>(std::min(chunk, r1 - r0) * n));
  for (int64_t r = r0; r < r1; r += chunk) {
    const int64_t m = std::min(chunk, r1 - r);  // rows are whole blocks: convert m at once
    to_float(t.data + size_t(r) * in_row, buf.data(), m * n);
    from_float(buf.data(), dst + size_t(r) * out_row, m * n);
  }
}

/// Converts all rows of `t` to `to`, the rows split into n_threads contiguous ranges.
void convert_tensor(const gguf::TensorInfo& t, DType to, uint8_t* dst, int n_threads) {
  const int64_t rows = t.n_elements() / t.ne[0];
  const int64_t min_rows = std::max<int64_t>(1, kChunkElements / (4 * t.ne[0]));  // not tiny slices
  const int64_t n_parts = std::clamp<int64_t>(rows / min_rows, 1, n_threads);
  std::vector<std::thread> workers;
  for (int64_t p = 1; p < n_parts; ++p) {
    workers.emplace_back(convert_range, std::cref(t), to, rows * p / n_parts,
                         rows * (p + 1) / n_parts, dst);
  }
  convert_range(t, to, 0, rows / n_parts, dst);
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
  gguf::Writer writer;
  QuantizeReport report;
  uint64_t in_bytes_total = 0;

  void copy_metadata() {
    for (const auto& [key, value] : file.metadata()) writer.set(key, value);
    writer.set("general.file_type", static_cast<uint32_t>(recipe.file_type));
    writer.set("general.quantization_version", kQuantizationVersion);
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
        convert_tensor(t, to, bytes.data(), n_threads);
        ok = out(bytes.data(), bytes.size());
        ++report.n_converted;
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

std::vector<TensorPlan> plan_for(const gguf::File& file, const QuantRecipe& recipe, bool pure) {
  std::vector<TensorDesc> descs;
  descs.reserve(file.tensors().size());
  for (const gguf::TensorInfo& t : file.tensors()) {
    // Dims as the reference counts them (ggml_n_dims: trailing 1s dropped), so that a
    // one-row matrix (Qwen2-MoE's ffn_gate_inp_shexp [n_embd, 1]) stays unquantized.
    int n_dims = t.n_dims;
    while (n_dims > 1 && t.ne[size_t(n_dims - 1)] == 1) --n_dims;
    descs.push_back({t.name, t.type, n_dims, t.ne[0]});
  }
  return plan_quantization(recipe, quant_model_facts(file), descs, pure);
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

Result<QuantizeReport> quantize_model(const std::string& in, const std::string& out,
                                      const QuantizeParams& params) {
  const QuantRecipe* recipe = find_quant_recipe(params.type_name);
  if (!recipe) {
    return Status::error("quantize: unknown type '" + params.type_name +
                         "' (valid: " + valid_names() + ")");
  }
  Result<std::unique_ptr<gguf::File>> file = gguf::File::open_model(in);
  if (!file) return file.status();
  TESSERA_RETURN_IF_ERROR(check_paths(in, out));
  Job job{**file, *recipe, params, plan_for(**file, *recipe, params.pure), {}, {}, 0};
  TESSERA_RETURN_IF_ERROR(check_input(job.file, job.plans, params.allow_requantize));
  return run_job(job, out);
}

}  // namespace tessera
