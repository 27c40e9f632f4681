// merge_adapters: the base is loaded with its adapters exactly as for running it (so the
// adapters are validated by the same code, attach_adapters), unrepacked so that the
// weights keep the file's rows; each adapted weight is then rebuilt row by row as
// W + sum scale * (b a) and written with every other tensor and key of the base.
#include "tessera/lora.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <thread>

#include "model/model_impl.h"
#include "tessera/gguf.h"
#include "quant/convert.h"

namespace tessera {
namespace {

// One adapter's factors of one weight, as floats: a [n_in, r] (k fastest), b [r, n_out].
struct Factor {
  std::vector<float> a, b;
  int64_t r = 0;
  double scale = 0;
};

// A weight and the updates of it, in adapter order.
struct Update {
  const Tensor* weight = nullptr;
  std::vector<const LoraDelta*> deltas;
};

std::vector<float> floats_of(const Tensor& t) {
  std::vector<float> out(size_t(t.nelements()));
  quant::to_float_fn(t.type)(t.data, out.data(), t.nelements());  // dense: one call
  return out;
}

bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::exists(a, ec) && std::filesystem::equivalent(a, b, ec);
}

Status check_request(const std::string& base, const std::vector<AdapterSpec>& adapters, const std::string& out,
                     const LoraMergeParams& params) {
  if (adapters.empty()) return Status::error("lora-merge: no adapter to merge");
  if (params.type && !is_float_type(*params.type)) {
    return Status::error("lora-merge: the merged weights' type must be f32, f16 or bf16, not " +
                         std::string(dtype_name(*params.type)) + " (quantize the merged model afterwards)");
  }
  if (same_file(out, base)) return Status::error("lora-merge: the output " + out + " is the base model");
  for (const AdapterSpec& a : adapters) {
    if (same_file(out, a.path)) return Status::error("lora-merge: the output " + out + " is the adapter " + a.path);
  }
  return Status::ok();
}

// Every adapted weight by name, with its deltas in the order the adapters were given
// (attach_adapters appends each adapter's deltas after the previous one's).
std::map<std::string, Update> updates_of(const ModelWeights& w) {
  std::map<std::string, Update> out;
  for (const LayerWeights& l : w.layers) {
    for (const LoraDelta& d : l.lora) {
      Update& u = out[d.target->name];
      u.weight = d.target;
      u.deltas.push_back(&d);
    }
  }
  return out;
}

// Rows [r0, r1) of the merged weight into `dst` (the output's first row). Each element is
// accumulated in double, adapter by adapter and rank by rank: the same order whatever the
// thread split.
void merge_rows(const Tensor& w, const std::vector<Factor>& factors, DType to, int64_t r0, int64_t r1,
                uint8_t* dst) {
  const int64_t n_in = w.ne[0];
  const size_t in_row = w.row_size(), out_row = dtype_row_size(to, n_in);
  std::vector<float> row(static_cast<size_t>(n_in));
  std::vector<double> acc(static_cast<size_t>(n_in));
  for (int64_t m = r0; m < r1; ++m) {
    quant::to_float_fn(w.type)(static_cast<const uint8_t*>(w.data) + size_t(m) * in_row, row.data(), n_in);
    std::copy(row.begin(), row.end(), acc.begin());
    for (const Factor& f : factors) {
      for (int64_t j = 0; j < f.r; ++j) {
        const double c = f.scale * double(f.b[size_t(m * f.r + j)]);  // b[j, m]
        if (c == 0) continue;  // a zero update leaves W exactly as it was
        const float* a = f.a.data() + size_t(j * n_in);  // a[:, j]
        for (int64_t k = 0; k < n_in; ++k) acc[size_t(k)] += c * double(a[k]);
      }
    }
    for (int64_t k = 0; k < n_in; ++k) row[size_t(k)] = float(acc[size_t(k)]);
    quant::from_float_fn(to)(row.data(), dst + size_t(m) * out_row, n_in);
  }
}

std::vector<uint8_t> merge_weight(const Update& u, DType to, int n_threads) {
  std::vector<Factor> factors;
  for (const LoraDelta* d : u.deltas) factors.push_back({floats_of(*d->a), floats_of(*d->b), d->a->ne[1], d->scale});
  const Tensor& w = *u.weight;
  const int64_t rows = w.nrows();
  std::vector<uint8_t> out(dtype_row_size(to, w.ne[0]) * size_t(rows));
  const int64_t n_parts = std::clamp<int64_t>(rows / 16, 1, n_threads);  // not tiny slices
  std::vector<std::thread> workers;
  for (int64_t p = 1; p < n_parts; ++p) {
    workers.emplace_back(merge_rows, std::cref(w), std::cref(factors), to, rows * p / n_parts,
                         rows * (p + 1) / n_parts, out.data());
  }
  merge_rows(w, factors, to, 0, rows / n_parts, out.data());
  for (std::thread& t : workers) t.join();
  return out;
}

// Every key of the base in its order (general.alignment included, which also sets the
// writer's layout), general.name marked as merged.
void copy_metadata(const gguf::File& file, gguf::Writer& writer) {
  for (const auto& [key, value] : file.metadata()) {
    if (key == "general.name" && value.as_string() != nullptr) {
      writer.set(key, *value.as_string() + " + lora");
    } else {
      writer.set(key, value);
    }
  }
}

}  // namespace

Result<LoraMergeReport> merge_adapters(const std::string& base, const std::vector<AdapterSpec>& adapters,
                                       const std::string& out, const LoraMergeParams& params) {
  const auto t0 = std::chrono::steady_clock::now();
  TESSERA_RETURN_IF_ERROR(check_request(base, adapters, out, params));
  ModelParams mp;
  mp.adapters = adapters;
  mp.repack = false;  // the rows as the file has them
  Result<std::unique_ptr<Model>> model = base.empty() ? Model::load_default(mp) : Model::load(base, mp);
  if (!model) return model.status();
  const gguf::File& file = (*model)->file();
  const std::map<std::string, Update> updates = updates_of((*model)->impl().weights);
  const unsigned cores = std::thread::hardware_concurrency();
  const int n_threads = params.n_threads > 0 ? params.n_threads : std::max(1, int(cores));

  gguf::Writer writer;
  copy_metadata(file, writer);
  std::deque<std::vector<uint8_t>> merged;  // referenced by the writer until the file is written
  LoraMergeReport report;
  for (const gguf::TensorInfo& t : file.tensors()) {
    auto u = updates.find(t.name);
    if (u == updates.end()) {
      writer.add_tensor_ref(t.name, t.type, t.ne, t.n_dims, t.data, t.nbytes);
      continue;
    }
    const DType to = params.type ? *params.type : is_float_type(t.type) ? t.type : DType::F16;
    merged.push_back(merge_weight(u->second, to, n_threads));
    writer.add_tensor_ref(t.name, to, t.ne, t.n_dims, merged.back().data(), merged.back().size());
    report.n_updates += u->second.deltas.size();
    if (params.progress) params.progress({report.n_merged, updates.size(), t.name, t.type, to});
    ++report.n_merged;
  }
  TESSERA_RETURN_IF_ERROR(writer.write(out));
  report.n_tensors = file.tensors().size();
  std::error_code ec;
  report.out_file_bytes = std::filesystem::file_size(out, ec);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace tessera
