// The RoPE scaling flags of every command that makes a context (run, chat, serve,
// perplexity, embed, bench, logits, parallel, imatrix): llama.cpp's names, defaults and
// meaning, over the model file's rope keys (tessera/rope_scaling.h says how they combine).
#include <cmath>
#include <limits>

#include "commands.h"

namespace tessera::cli {
namespace {

/// A float flag that must be finite (CLI11 reads "inf" and "nan" as numbers), and > 0
/// where `positive`.
class FiniteNumber : public CLI::Validator {
 public:
  explicit FiniteNumber(bool positive) {
    func_ = [positive](std::string& input) -> std::string {
      double value = 0;
      if (!CLI::detail::lexical_cast(input, value)) return "'" + input + "' is not a number";
      if (!std::isfinite(value) || std::fabs(value) > double(std::numeric_limits<float>::max())) {
        return input + " is not a finite number";
      }
      if (positive && !(value > 0)) return input + " must be a number > 0";
      // As a float, and so that 1 / N (--rope-scale) is one too.
      if (positive && !std::isfinite(1.0f / float(value))) return input + " is too small";
      return {};
    };
  }
};

}  // namespace

void add_rope_options(CLI::App* cmd, RopeScalingParams& p) {
  const std::string group = "RoPE scaling (default: the model file's)";
  cmd->add_option_function<std::string>(
         "--rope-scaling", [&p](const std::string& name) { p.type = *rope_scaling_from_name(name); },
         "how RoPE frequencies are scaled for positions past the training context: none, linear (position "
         "interpolation) or yarn; default: the file's rope.scaling.type, else linear")
      ->type_name("{none,linear,yarn}")
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            return rope_scaling_from_name(name) ? "" : "'" + name + "' is not none, linear or yarn";
          },
          "", "RoPE scaling"))
      ->group(group);
  CLI::Option* scale =
      cmd->add_option_function<float>(
             "--rope-scale", [&p](float n) { p.freq_scale = 1.0f / n; },
             "extend the context N times: the RoPE frequencies times 1/N (--rope-freq-scale 1/N); default: the "
             "file's rope.scaling.factor")
          ->type_name("N")
          ->check(FiniteNumber(true))
          ->group(group);
  cmd->add_option("--rope-freq-base", p.freq_base,
                  "RoPE base frequency (theta); a larger one stretches every wavelength (NTK-aware scaling); "
                  "default: the file's rope.freq_base")
      ->type_name("N")
      ->check(FiniteNumber(true))
      ->group(group);
  cmd->add_option("--rope-freq-scale", p.freq_scale,
                  "RoPE frequency scale: the frequencies times N, which extends the context 1/N times; default: "
                  "1 / the file's rope.scaling.factor")
      ->type_name("N")
      ->check(FiniteNumber(true))
      ->excludes(scale)
      ->group(group);
  cmd->add_option("--yarn-orig-ctx", p.yarn_orig_ctx,
                  "YaRN: the context the model was trained with, over which its ramp counts rotations (0: the "
                  "file's rope.scaling.original_context_length, else its context_length)")
      ->type_name("N")
      ->capture_default_str()
      ->check(NumberRange(int64_t(0), int64_t(std::numeric_limits<int32_t>::max())))
      ->group(group);
  cmd->add_option("--yarn-ext-factor", p.yarn_ext_factor,
                  "YaRN: how much of each pair's unscaled angle the ramp mixes back in (0: interpolation only; "
                  "negative: 1 with YaRN scaling, else 0)")
      ->type_name("N")
      ->capture_default_str()
      ->check(FiniteNumber(false))
      ->group(group);
  cmd->add_option("--yarn-attn-factor", p.yarn_attn_factor,
                  "YaRN: multiplies the rotation's magnitude (with the file's rope.scaling.attn_factor); where "
                  "the ramp mixes (ext factor not 0) it is also times 1 + 0.1 ln(1 / freq scale)")
      ->type_name("N")
      ->capture_default_str()
      ->check(FiniteNumber(true))
      ->group(group);
  cmd->add_option("--yarn-beta-fast", p.yarn_beta_fast,
                  "YaRN: pairs that turn more than N times over the original context keep their angle")
      ->type_name("N")
      ->capture_default_str()
      ->check(FiniteNumber(true))
      ->group(group);
  cmd->add_option("--yarn-beta-slow", p.yarn_beta_slow,
                  "YaRN: pairs that turn fewer than N times over the original context are fully interpolated")
      ->type_name("N")
      ->capture_default_str()
      ->check(FiniteNumber(true))
      ->group(group);
}

}  // namespace tessera::cli
