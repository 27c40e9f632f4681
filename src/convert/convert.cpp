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
#include "convert/tensor_stream.h"
#include "tessera/convert.h"
#include "tessera/quantize.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using convert::Checkpoint;
using convert::TensorPlan;

Result<DType> float_type(const std::string& type) {
  if (type == "f32") return DType::F32;
  if (type == "f16") return DType::F16;
  if (type == "bf16") return DType::BF16;
  return Status::error("not a float type");
}

/// FP8 checkpoints' scale blocks: config.json's quantization_config.weight_block_size, else
/// DeepSeek-V3's 128 x 128.
Result<std::array<int64_t, 2>> fp8_block_size(const convert::HfConfig& c) {
  std::array<int64_t, 2> block = {128, 128};
  if (!c.has("quantization_config")) return block;
  const nlohmann::json& q = c.json()["quantization_config"];
  if (!q.is_object() || !q.contains("weight_block_size")) return block;
  const nlohmann::json& b = q["weight_block_size"];
  if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer()) return block;
  if (b[0].get<int64_t>() < 1 || b[1].get<int64_t>() < 1) {
    return Status::error("convert: config.json's quantization_config.weight_block_size must be two positive sizes");
  }
  return std::array<int64_t, 2>{b[0].get<int64_t>(), b[1].get<int64_t>()};
}

/// The GGUF of the checkpoint's weights at `type` (f32/f16/bf16), written to `path`. Every
/// tensor is found and checked first (nothing is written for a checkpoint that cannot
/// convert); the bytes are produced as the file is written, one block at a time.
Status write_weights(const ConvertParams& p, const convert::HfConfig& c, const convert::HfArch& arch, DType type,
                     gguf::Writer& w, const std::string& path, ConvertReport& report) {
  Result<std::unique_ptr<Checkpoint>> ck = Checkpoint::open(p.input_dir);
  if (!ck) return ck.status();
  Result<std::vector<TensorPlan>> plan = convert::plan_tensors(arch, c, **ck, w);
  if (!plan) return plan.status();
  Result<std::array<int64_t, 2>> fp8_block = fp8_block_size(c);
  if (!fp8_block) return fp8_block.status();
  const size_t n = plan->size();
  for (size_t i = 0; i < n; ++i) {
    Result<convert::TensorJob> job = convert::prepare_tensor((*plan)[i], **ck, type, *fp8_block);
    if (!job) return job.status();
    w.add_tensor_stream((*plan)[i].name, job->type, job->ne, job->n_dims, job->nbytes,
                        [&p, &ck, i, n, job = *job](const gguf::Writer::ByteSink& out) {
                          if (p.progress) p.progress({i, n, job.plan->name});
                          return convert::produce_tensor(job, **ck, out);
                        });
  }
  if (const std::vector<std::string> left = (*ck)->left_over(); !left.empty()) {
    return Status::error("convert: tensor '" + left.front() + "' (" + (*ck)->file_of(left.front()) + ") has no place in a " +
                         arch.arch + " GGUF" + (left.size() > 1 ? " (nor " + std::to_string(left.size() - 1) + " more)" : ""));
  }
  report.n_tensors = n;
  TESSERA_RETURN_IF_ERROR(w.write(path));
  if (p.progress) p.progress({n, n, ""});
  return Status::ok();
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
