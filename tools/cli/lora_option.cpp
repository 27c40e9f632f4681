// The --lora flag shared by the commands that load a model (run, chat, serve,
// perplexity, bench, lora-merge): llama.cpp's spelling, FILE or FILE:SCALE, repeatable.
#include <cmath>

#include "commands.h"

namespace tessera::cli {

void add_lora_option(CLI::App* cmd, std::vector<std::string>& values) {
  cmd->add_option("--lora", values,
                  "apply the LoRA adapter in FILE (a GGUF adapter for this model's architecture), its update "
                  "times SCALE (default 1), as extra matmuls beside the weights; FILE[:SCALE], repeatable: the "
                  "updates add up (docs/lora.md)")
      ->type_name("FILE[:SCALE]")
      ->take_all()
      ->expected(1);
}

Result<std::vector<AdapterSpec>> adapter_specs(const std::vector<std::string>& values) {
  std::vector<AdapterSpec> specs;
  for (const std::string& v : values) {
    const AdapterSpec spec = parse_adapter_spec(v);
    // strtof reads "nan" and "inf": a scale must be a number that keeps the logits finite.
    if (!std::isfinite(spec.scale)) return Status::error("--lora '" + v + "': the scale must be a finite number");
    specs.push_back(spec);
  }
  return specs;
}

Result<ModelParams> model_params(const std::vector<std::string>& lora) {
  Result<std::vector<AdapterSpec>> specs = adapter_specs(lora);
  if (!specs) return specs.status();
  ModelParams p;
  p.adapters = std::move(*specs);
  return p;
}

}  // namespace tessera::cli
