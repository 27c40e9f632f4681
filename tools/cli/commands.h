// The subcommands of `tessera`: each file registers its options on the CLI11 app and
// returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/model.h"

namespace tessera::cli {

/// A registered subcommand and what runs it once its options are parsed.
struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_run(CLI::App& app);
Command add_logits(CLI::App& app);
Command add_inspect(CLI::App& app);
Command add_synth(CLI::App& app);
Command add_quantize(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_tokenize(CLI::App& app);
Command add_embed(CLI::App& app);
Command add_parallel(CLI::App& app);
Command add_chat(CLI::App& app);
Command add_perplexity(CLI::App& app);
Command add_serve(CLI::App& app);
Command add_train(CLI::App& app);
Command add_lora_merge(CLI::App& app);
Command add_finetune(CLI::App& app);

/// Prints "tessera: <message>" to stderr and returns the exit status for errors (1).
int fail(const std::string& message);
/// A sane default thread count: the machine's cores.
int default_threads();

/// Adds `--lora FILE[:SCALE]` (repeatable) to `cmd`; each value lands in `values`.
void add_lora_option(CLI::App* cmd, std::vector<std::string>& values);
/// The adapters of --lora values (parse_adapter_spec); a scale that is not finite is an error.
Result<std::vector<AdapterSpec>> adapter_specs(const std::vector<std::string>& values);
/// The -m model, or the built-in default model when path is empty.
Result<std::unique_ptr<Model>> load_model_or_default(const std::string& path, const ModelParams& params);
/// The help text of an -m that may be left out.
std::string model_option_help();
/// The file name of the -m model, or the built-in model's when path is empty.
std::string model_file_name(const std::string& path);
/// Model::load's parameters for --lora values.
Result<ModelParams> model_params(const std::vector<std::string>& lora);

/// --layers, --mpi and --mpi-layers (placement_option.cpp).
struct PlacementOptions {
  std::string layers;
  bool mpi = false;
  std::vector<int64_t> mpi_layers;
  int n_gpu_layers = 0;
  int device = 0;
};
void add_placement_options(CLI::App* cmd, PlacementOptions& o);
/// Sets ModelParams::layers, mpi, mpi_layers, n_gpu_layers and device.
void apply_placement(const PlacementOptions& o, ModelParams& params);

}  // namespace tessera::cli
