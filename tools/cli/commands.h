// The subcommands of `tessera`: each file registers its options on the CLI11 app and
// returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/dtype.h"
#include "tessera/model.h"
#include "tessera/speculative.h"
#include "tessera/rope_scaling.h"

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
Command add_imatrix(CLI::App& app);
Command add_serve(CLI::App& app);
Command add_train(CLI::App& app);
Command add_lora_merge(CLI::App& app);
Command add_finetune(CLI::App& app);
Command add_template(CLI::App& app);
Command add_convert(CLI::App& app);
Command add_gguf_split(CLI::App& app);

/// The exit statuses of `tessera` (README, "Exit status"): 0 success, 1 an error while
/// running (a file, the model, a request), 2 a usage error (flags, arguments), 130 stopped
/// by SIGINT (Ctrl-C).
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInterrupted = 130;

/// CLI11's Range with a message that says what is wrong: a value that is not a number at
/// all ("-n abc") is "'abc' is not a number", not "not in range".
class NumberRange : public CLI::Validator {
 public:
  template <typename T>
  NumberRange(T min, T max) {
    std::stringstream bounds;
    bounds << "[" << min << " - " << max << "]";
    description(bounds.str());
    func_ = [min, max](std::string& input) -> std::string {
      T value{};
      if (!CLI::detail::lexical_cast(input, value)) {
        return "'" + input + "' is not " + (std::is_integral_v<T> ? "a whole number" : "a number");
      }
      if (value < min || value > max) {
        std::stringstream out;
        out << input << " is out of range: " << min << " to " << max;
        return out.str();
      }
      return {};
    };
  }
};

/// Prints "tessera: <message>" to stderr and returns the exit status for errors (1).
int fail(const std::string& message);
/// The same for usage errors (a flag's value, a path that cannot be written): returns 2.
int usage_error(const std::string& message);
/// A sane default thread count: the machine's cores.
int default_threads();

/// -s/--seed (seed_option.cpp): -1, the default, asks for a random seed.
void add_seed_option(CLI::App* cmd, int64_t& seed);
/// The seed to draw with: `seed` when given (>= 0), else a random one.
uint64_t resolve_seed(int64_t seed);
/// Prints a random seed on stderr (the seed that repeats the run) when none was given and
/// the run samples; call it once the run starts, after its flags and model are checked.
void report_seed(int64_t given, uint64_t used, bool sampling);

/// Adds `--lora FILE[:SCALE]` (repeatable) to `cmd`; each value lands in `values`.
void add_lora_option(CLI::App* cmd, std::vector<std::string>& values);
/// The adapters of --lora values (parse_adapter_spec); a scale that is not finite is an error.
Result<std::vector<AdapterSpec>> adapter_specs(const std::vector<std::string>& values);
/// The -m model, or the built-in default model when path is empty. `mmap` false
/// (--no-mmap): the file is read into memory instead of mapped.
Result<std::unique_ptr<Model>> load_model_or_default(const std::string& path, const ModelParams& params,
                                                     bool mmap = true);
/// The help text of an -m that may be left out.
std::string model_option_help();
/// The file name of the -m model, or the built-in model's when path is empty.
std::string model_file_name(const std::string& path);
/// Model::load's parameters for --lora values.
Result<ModelParams> model_params(const std::vector<std::string>& lora);

/// -ctk/--cache-type-k and -ctv/--cache-type-v (cache_type_option.cpp): the KV cache's
/// types by name (kv_cache_types(): f32, f16, bf16, q8_0, ...), f16 by default.
struct CacheTypeOptions {
  std::string k = "f16";
  std::string v = "f16";
};
void add_cache_type_options(CLI::App* cmd, CacheTypeOptions& o);
/// The type named `name`; an error naming `flag` and the types for any other name.
Result<DType> cache_type(const std::string& name, const std::string& flag);
/// A CLI11 check that a value (each value of a list) names a cache type.
CLI::Validator cache_type_validator();
/// Sets type_k and type_v (ContextParams and the parameters of perplexity, imatrix and
/// the server) from the options.
Status apply_cache_types(const CacheTypeOptions& o, DType& type_k, DType& type_v);
/// --rope-scaling, --rope-scale, --rope-freq-base, --rope-freq-scale and --yarn-* (rope_option.cpp),
/// parsed into `p`; CLI11 refuses values out of range, naming the flag.
void add_rope_options(CLI::App* cmd, RopeScalingParams& p);

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

/// -md/--model-draft, --lookup, --draft-max, --draft-min, --draft-p-min
/// (speculative_option.cpp).
struct SpeculativeOptions {
  std::string model_draft;  // -md: a draft model
  bool lookup = false;      // --lookup: n-gram lookup drafts instead
  SpeculativeParams params;
  bool enabled() const { return lookup || !model_draft.empty(); }
};
void add_speculative_options(CLI::App* cmd, SpeculativeOptions& o);
/// The -md model, refused (the message names the file and the difference) when its
/// vocabulary does not match the target's (check_draft_vocab).
Result<std::unique_ptr<Model>> load_draft_model(const SpeculativeOptions& o, const Model& target, bool mmap);

}  // namespace tessera::cli
