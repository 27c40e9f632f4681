// `tessera lora-merge -m BASE --lora A[:SCALE] ... -o OUT`: a copy of the base with the
// adapters folded into its weights (tessera/lora.h), so that it runs with no adapter at
// the base's speed. A line per merged weight with -v, and a summary line.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "tessera/log.h"
#include "tessera/lora.h"

namespace tessera::cli {
namespace {

struct LoraMergeOptions {
  std::string base, out, type;
  std::vector<std::string> lora;
  int threads = default_threads();
};

Result<std::optional<DType>> merged_type(const std::string& name) {
  if (name.empty()) return std::optional<DType>();
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    if (name == dtype_name(t)) return std::optional<DType>(t);
  }
  return Status::error("lora-merge: --type '" + name + "' is not f32, f16 or bf16 (to quantize the merged "
                       "model, run tessera quantize on it)");
}

int run_lora_merge(const LoraMergeOptions& o) {
  Result<std::vector<AdapterSpec>> specs = adapter_specs(o.lora);
  if (!specs) return fail(specs.status().message());
  Result<std::optional<DType>> type = merged_type(o.type);
  if (!type) return fail(type.status().message());
  LoraMergeParams p;
  p.type = *type;
  p.n_threads = o.threads;
  p.progress = [](const LoraMergeProgress& g) {
    log(LogLevel::Info, "lora-merge: [%zu/%zu] %.*s %s -> %s", g.index + 1, g.n_merged, int(g.name.size()),
        g.name.data(), std::string(dtype_name(g.from)).c_str(), std::string(dtype_name(g.to)).c_str());
  };
  Result<LoraMergeReport> r = merge_adapters(o.base, *specs, o.out, p);
  if (!r) return fail(r.status().message());
  std::fprintf(stderr, "tessera lora-merge: wrote %s: %zu of %zu tensors merged (%zu updates), %.1f MiB in %.2f s\n",
               o.out.c_str(), r->n_merged, r->n_tensors, r->n_updates, double(r->out_file_bytes) / (1024.0 * 1024.0),
               r->seconds);
  return 0;
}

}  // namespace

Command add_lora_merge(CLI::App& app) {
  auto o = std::make_shared<LoraMergeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "lora-merge",
      "Write a copy of a model with LoRA adapters merged into its weights (W + scale * b a); the\n"
      "other tensors and keys are copied. Merged weights keep their type when it is f32, f16 or\n"
      "bf16, else become f16 (or --type): quantize the result again with 'tessera quantize'.");
  cmd->add_option("-m,--model", o->base, "the base " + model_option_help())->check(CLI::ExistingFile);
  add_lora_option(cmd, o->lora);
  cmd->get_option("--lora")->required();
  cmd->add_option("-o,--output", o->out, "the merged model (GGUF)")->required();
  cmd->add_option("--type", o->type, "type of the merged weights: f32, f16 or bf16 (default: see above)");
  cmd->add_option("-t,--threads", o->threads, "CPU threads (do not change the result)")->check(NumberRange(1, 512));
  return {cmd, [o] { return run_lora_merge(*o); }};
}

}  // namespace tessera::cli
