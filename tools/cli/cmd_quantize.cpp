// `tessera quantize IN OUT TYPE`: writes a copy of a GGUF model with its weight matrices
// quantized by a recipe (Q4_K_M, Q8_0, ...). A progress line on a terminal; one line per
// tensor with -v otherwise; always a line for each tensor that needed a fallback type.
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "commands.h"
#include "tessera/log.h"
#include "tessera/quantize.h"

namespace tessera::cli {
namespace {

struct QuantizeOptions {
  std::string in, out, type;
  std::string imatrix;
  int threads = default_threads();
  bool allow_requantize = false;
  bool pure = false;
  bool verbose = false;
};

constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kLineWidth = 79;  // the progress line fits an 80-column terminal

std::string shape_of(const QuantizeProgress& p) {
  std::string s = "[";
  for (int i = 0; i < p.n_dims; ++i) s += (i ? ", " : "") + std::to_string(p.ne[i]);
  return s + "]";
}

/// Prints progress: a redrawn line on a terminal, or (verbose) one line per tensor.
class ProgressPrinter {
 public:
  ProgressPrinter(bool terminal, bool verbose) : terminal_(terminal), verbose_(verbose) {}

  void operator()(const QuantizeProgress& p) {
    const std::string from(dtype_name(p.from)), to(dtype_name(p.to));
    if (!p.note.empty()) {
      clear();
      std::fprintf(stderr, "tessera quantize: %s: %.*s\n", std::string(p.name).c_str(),
                   int(p.note.size()), p.note.data());
    }
    if (terminal_) {
      std::fprintf(stderr, "\r%-*s", kLineWidth, line(p, to).substr(0, kLineWidth).c_str());
      drawn_ = true;
    } else if (verbose_) {
      std::fprintf(stderr, "tessera quantize: [%3zu/%zu] %-32s %-5s -> %-5s %s\n", p.index + 1,
                   p.n_tensors, std::string(p.name).c_str(), from.c_str(), to.c_str(),
                   shape_of(p).c_str());
    }
    std::fflush(stderr);
  }

  /// Removes the progress line (before other output, and at the end).
  void clear() {
    if (!drawn_) return;
    std::fprintf(stderr, "\r%-*s\r", kLineWidth, "");
    drawn_ = false;
  }

 private:
  static std::string line(const QuantizeProgress& p, const std::string& to) {
    const double frac = p.in_bytes_total ? double(p.in_bytes_done) / double(p.in_bytes_total) : 1.0;
    constexpr int kBar = 20;
    const int filled = int(frac * kBar + 0.5);
    char buf[256];
    std::snprintf(buf, sizeof buf, "quantize [%s%s] %zu/%zu %.1f/%.1f MiB  %s -> %s",
                  std::string(size_t(filled), '#').c_str(),
                  std::string(size_t(kBar - filled), '.').c_str(), p.index + 1, p.n_tensors,
                  double(p.in_bytes_done) / kMiB, double(p.in_bytes_total) / kMiB,
                  std::string(p.name).c_str(), to.c_str());
    return buf;
  }

  bool terminal_;
  bool verbose_;
  bool drawn_ = false;
};

void print_summary(const QuantizeOptions& o, const QuantizeReport& r) {
  auto bpw = [&](uint64_t bytes) {
    return r.n_elements ? 8.0 * double(bytes) / double(r.n_elements) : 0.0;
  };
  std::fprintf(stderr, "tessera quantize: wrote %s as %s (file type %u)\n", o.out.c_str(),
               r.recipe.c_str(), r.file_type);
  std::fprintf(
      stderr,
      "tessera quantize: %.2f MiB -> %.2f MiB (%.2f -> %.2f bits per weight); %zu of %zu tensors "
      "converted, %zu with a fallback type; %.2f s on %d threads\n",
      double(r.in_file_bytes) / kMiB, double(r.out_file_bytes) / kMiB, bpw(r.in_tensor_bytes),
      bpw(r.out_tensor_bytes), r.n_converted, r.n_tensors, r.n_fallbacks, r.seconds, o.threads);
  std::string types;
  for (const auto& [type, count] : r.type_counts) {
    types +=
        (types.empty() ? "" : ", ") + std::string(dtype_name(type)) + " " + std::to_string(count);
  }
  std::fprintf(stderr, "tessera quantize: tensor types: %s\n", types.c_str());
  if (!o.imatrix.empty()) {
    std::fprintf(stderr, "tessera quantize: %zu tensors quantized with importance weights from %s (%zu entries)\n",
                 r.n_imatrix, o.imatrix.c_str(), r.n_imatrix_entries);
  }
}

int run_quantize(const QuantizeOptions& o) {
  const bool terminal = isatty(fileno(stderr)) != 0;
  auto printer =
      std::make_shared<ProgressPrinter>(terminal, o.verbose || log_level() <= LogLevel::Info);
  QuantizeParams params;
  params.type_name = o.type;
  params.n_threads = o.threads;
  params.allow_requantize = o.allow_requantize;
  params.pure = o.pure;
  params.imatrix_path = o.imatrix;
  params.progress = [printer](const QuantizeProgress& p) { (*printer)(p); };
  Result<QuantizeReport> report = quantize_model(o.in, o.out, params);
  printer->clear();
  if (!report) return fail(report.status().message());
  print_summary(o, *report);
  return 0;
}

std::string type_list() {
  std::string s =
      "\nTYPE is one of (bits per weight: ~ the reference quantizer's figure for the whole mix;\n"
      "otherwise the base type's blocks', which the mix's larger tensors raise a little):\n";
  for (const std::string& name : quantize_type_names()) {
    char bpw[32];
    std::snprintf(bpw, sizeof bpw, "%s%6.2f bpw  ", quantize_type_bpw_is_mix(name) ? "~" : " ",
                  quantize_type_bpw(name));
    s += "  " + name + std::string(name.size() < 8 ? 8 - name.size() : 1, ' ') + bpw +
         quantize_type_summary(name) + "\n";
  }
  return s;
}

}  // namespace

Command add_quantize(CLI::App& app) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* cmd =
      app.add_subcommand("quantize", "Write a copy of a GGUF model with quantized weights");
  cmd->add_option("input", o->in, "GGUF model with F32/F16/BF16 weights")->required();
  cmd->add_option("output", o->out, "GGUF file to write")->required();
  cmd->add_option("type", o->type, "target type / recipe, e.g. Q4_K_M or Q8_0 (listed below)")
      ->required();
  CLI::Option* threads = cmd->add_option("-t,--threads", o->threads, "threads")->check(NumberRange(1, 1024));
  // llama-quantize's form: IN OUT TYPE [NTHREADS].
  cmd->add_option("nthreads", o->threads, "threads, as llama-quantize's fourth argument (the same as -t)")
      ->check(NumberRange(1, 1024))
      ->excludes(threads);
  cmd->add_flag("--allow-requantize", o->allow_requantize,
                "accept an input whose tensors are already quantized (loses accuracy)");
  cmd->add_flag("--pure", o->pure, "no mixes: every weight matrix gets the type's base type");
  cmd->add_option("--imatrix", o->imatrix,
                  "importance matrix (tessera imatrix, or llama-imatrix's file): the matrices it has an "
                  "entry for are quantized by their type's weighted search; needed by IQ1_S, IQ1_M, "
                  "IQ2_XXS, IQ2_XS, IQ2_S and Q2_K_S")
      ->check(CLI::ExistingFile);
  cmd->add_flag("-v,--verbose", o->verbose, "one line per tensor when stderr is not a terminal");
  cmd->footer(type_list());
  return {cmd, [o] { return run_quantize(*o); }};
}

}  // namespace tessera::cli
