// `tessera convert DIR -o OUT.gguf`: a Hugging Face checkpoint folder to GGUF
// (tessera/convert.h). A progress line on a terminal (a line at each tenth of the tensors in a
// log), a summary line at the end.
// `tessera convert --lora ADAPTER_DIR --base BASE.gguf -o OUT.gguf`: a PEFT LoRA adapter
// to a GGUF adapter for BASE.
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "commands.h"
#include "tessera/convert.h"
#include "tessera/quantize.h"

namespace tessera::cli {
namespace {

struct ConvertOptions {
  ConvertParams params;
  int threads = default_threads();
  LoraConvertParams lora;  // with --lora
  bool type_given = false;
};

int run_convert_lora(ConvertOptions& o) {
  o.lora.output_path = o.params.output_path;
  // An adapter is small: F32 unless --type asks for f16 or bf16.
  if (o.type_given) o.lora.type = o.params.type;
  Result<LoraConvertReport> r = convert_peft_lora(o.lora);
  if (!r) return fail(r.status().message());
  std::fprintf(stderr, "tessera convert: LoRA %s for %s (%s) -> %s: %zu weights, r %lld, alpha %g, %.1f KiB\n",
               o.lora.adapter_dir.c_str(), o.lora.base_path.c_str(), r->arch.c_str(), o.lora.output_path.c_str(),
               r->n_weights, static_cast<long long>(r->r), double(r->alpha), double(r->out_bytes) / 1024.0);
  return 0;
}

int run_convert(ConvertOptions& o) {
  if (!o.lora.adapter_dir.empty()) {
    if (o.lora.base_path.empty()) return usage_error("convert: --lora needs --base BASE.gguf, the model it adapts");
    if (!o.params.input_dir.empty()) return usage_error("convert: --lora converts ADAPTER_DIR: give no checkpoint DIR");
    return run_convert_lora(o);
  }
  if (!o.lora.base_path.empty()) return usage_error("convert: --base is for --lora");
  if (o.params.input_dir.empty()) return usage_error("convert: give the checkpoint folder DIR (or --lora ADAPTER_DIR)");
  o.params.n_threads = o.threads;
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  bool drawn = false;
  if (terminal) {
    o.params.progress = [&](const ConvertProgress& p) {
      std::fprintf(stderr, "\rtessera convert: [%zu/%zu] %-40.40s", p.tensor, p.n_tensors, p.name.c_str());
      std::fflush(stderr);
      drawn = true;
    };
  } else {
    // A log, not a terminal: a line at each tenth of the tensors.
    o.params.progress = [tenth = size_t(0)](const ConvertProgress& p) mutable {
      if (p.n_tensors == 0 || p.tensor * 10 < (tenth + 1) * p.n_tensors) return;
      tenth = p.tensor * 10 / p.n_tensors;
      std::fprintf(stderr, "tessera convert: %zu%% (%zu/%zu tensors)\n", tenth * 10, p.tensor, p.n_tensors);
    };
  }
  Result<ConvertReport> r = convert_checkpoint(o.params);
  if (drawn) std::fprintf(stderr, "\r%-79s\r", "");
  if (!r) return fail(r.status().message());
  if (!r->vocab) {
    std::fprintf(stderr, "tessera convert: warning: no tokenizer written (the folder has no tokenizer.json, "
                         "tokenizer.model or vocab.txt): the file runs on token ids only\n");
  }
  std::fprintf(stderr, "tessera convert: %s (%s) -> %s: %zu tensors, %.1f MiB, %s, %.1f s\n", r->hf_arch.c_str(),
               r->arch.c_str(), o.params.output_path.c_str(), r->n_tensors, double(r->out_bytes) / (1024.0 * 1024.0),
               o.params.type.c_str(), r->seconds);
  return 0;
}

}  // namespace

Command add_convert(CLI::App& app) {
  auto o = std::make_shared<ConvertOptions>();
  std::string archs;
  for (const auto& [hf, arch] : convertible_architectures()) archs += (archs.empty() ? "" : ", ") + hf + " -> " + arch;
  CLI::App* cmd = app.add_subcommand(
      "convert", "Convert a Hugging Face checkpoint folder (config.json, *.safetensors) to GGUF, or with --lora "
                 "--base a PEFT LoRA adapter to a GGUF adapter. Architectures: " + archs);
  cmd->add_option("dir", o->params.input_dir, "the checkpoint folder")->check(CLI::ExistingDirectory);
  cmd->add_option("-o,--output", o->params.output_path, "the GGUF file to write")->required();
  std::string types = "f32, f16, bf16";
  for (const std::string& t : quantize_type_names()) {
    if (t != "F32" && t != "F16" && t != "BF16") types += ", " + t;
  }
  cmd->add_option("--type", o->params.type,
                  "weight type (default f16): f32, f16, bf16, or a quantize type applied to the f16 conversion "
                  "(" + types + "); norms and biases stay f32. With --lora: f32 (default), f16 or bf16")
      ->each([o](const std::string&) { o->type_given = true; });
  CLI::Option* lora =
      cmd->add_option("--lora", o->lora.adapter_dir,
                      "convert a PEFT LoRA adapter folder (adapter_config.json, adapter_model.safetensors) instead, "
                      "to a GGUF adapter that --lora and lora-merge take")
          ->check(CLI::ExistingDirectory);
  cmd->add_option("--base", o->lora.base_path, "with --lora: the GGUF model the adapter was trained on");
  cmd->add_flag("--vocab-only", o->params.vocab_only, "write the tokenizer part alone")->excludes(lora);
  cmd->add_option("--arch-override", o->params.arch_override,
                  "the tessera architecture to write instead of the one config.json names")
      ->excludes(lora);
  cmd->add_option("-t,--threads", o->threads, "CPU threads (quantization)")->check(NumberRange(1, 512));
  return {cmd, [o] { return run_convert(*o); }};
}

}  // namespace tessera::cli
