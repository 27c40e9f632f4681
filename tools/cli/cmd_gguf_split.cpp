// `tessera gguf-split [--split] [--split-max-tensors N | --split-max-size N(M|G)] IN OUT_PREFIX`
// and `tessera gguf-split --merge FIRST OUT`: a model cut into OUT_PREFIX-00001-of-0000N.gguf,
// ... and back, as the reference engine's gguf-split tool does (tessera/gguf_split.h; the
// same flags). The plan goes to stdout, progress to stderr.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "tessera/gguf.h"
#include "tessera/gguf_split.h"

namespace tessera::cli {
namespace {

struct GgufSplitOptions {
  bool split = false, merge = false, no_tensor_first_split = false, dry_run = false;
  std::string max_size;
  int64_t max_tensors = 0;  // 0: not given
  std::string in, out;
};

// "N" followed by M (10^6 bytes) or G (10^9 bytes), N >= 1, as the reference reads it.
Result<uint64_t> parse_size(const std::string& s) {
  const char unit = s.empty() ? '\0' : s.back();
  const uint64_t scale = unit == 'M' ? 1000ull * 1000 : unit == 'G' ? 1000ull * 1000 * 1000 : 0;
  const std::string digits = s.empty() ? s : s.substr(0, s.size() - 1);
  if (scale == 0 || digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos ||
      std::stoull(digits) == 0) {
    return Status::error("gguf-split: --split-max-size '" + s + "' is not a positive whole number followed by M "
                         "(megabytes) or G (gigabytes), e.g. 2G");
  }
  return std::stoull(digits) * scale;
}

// Progress on stderr: redrawn in place on a terminal, a line per tenth otherwise.
gguf::SplitProgress progress_printer(const char* what, bool* drawn) {
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  return [what, drawn, terminal, tenth = uint64_t(0)](const std::string& file, uint64_t done,
                                                      uint64_t total) mutable {
    if (total == 0) return;
    if (terminal) {
      std::fprintf(stderr, "\rtessera gguf-split: %s %s: %3d%%", what, file.c_str(), int(done * 100 / total));
      std::fflush(stderr);
      *drawn = true;
    } else if (done * 10 >= (tenth + 1) * total) {
      tenth = done * 10 / total;
      std::fprintf(stderr, "tessera gguf-split: %s: %d%% (%s)\n", what, int(tenth * 10), file.c_str());
    }
  };
}

int run_split(const GgufSplitOptions& o) {
  gguf::SplitOptions opts;
  if (!o.max_size.empty()) {
    Result<uint64_t> bytes = parse_size(o.max_size);
    if (!bytes) return usage_error(bytes.status().message());
    opts.max_bytes = *bytes;
  }
  if (o.max_tensors > 0) opts.max_tensors = o.max_tensors;
  opts.no_tensor_first_split = o.no_tensor_first_split;
  Result<std::unique_ptr<gguf::File>> in = gguf::File::open_model(o.in);
  if (!in) return fail(in.status().message());
  Result<std::vector<gguf::SplitPart>> plan = gguf::plan_split(**in, o.out, opts);
  if (!plan) return fail(plan.status().message());
  for (const gguf::SplitPart& p : *plan) {
    std::printf("%s: %zu tensors, %.1f MB of tensor data\n", p.path.c_str(), p.tensors.size(),
                double(p.tensor_bytes) / 1e6);
  }
  std::fflush(stdout);
  if (o.dry_run) return 0;
  bool drawn = false;
  const Status s = gguf::write_split(**in, *plan, progress_printer("writing", &drawn));
  if (drawn) std::fprintf(stderr, "\n");
  if (!s) return fail(s.message());
  std::fprintf(stderr, "tessera gguf-split: %zu parts written, %zu tensors\n", plan->size(), (*in)->tensors().size());
  return 0;
}

int run_merge(const GgufSplitOptions& o) {
  if (o.no_tensor_first_split || o.dry_run || o.max_tensors > 0 || !o.max_size.empty()) {
    return usage_error("gguf-split: --merge takes none of the --split options");
  }
  bool drawn = false;
  const Status s = gguf::merge_gguf(o.in, o.out, progress_printer("merging into", &drawn));
  if (drawn) std::fprintf(stderr, "\n");
  if (!s) return fail(s.message());
  std::fprintf(stderr, "tessera gguf-split: merged %s into %s\n", o.in.c_str(), o.out.c_str());
  return 0;
}

}  // namespace

Command add_gguf_split(CLI::App& app) {
  auto o = std::make_shared<GgufSplitOptions>();
  CLI::App* cmd = app.add_subcommand(
      "gguf-split",
      "Split a GGUF model into parts OUT_PREFIX-00001-of-0000N.gguf, ... (--split, the default), or\n"
      "merge such parts back into one file (--merge FIRST_PART OUT). The first part keeps all the\n"
      "metadata; every part gets split.no, split.count and split.tensors.count, as the reference's\n"
      "llama-gguf-split writes them. '-m FIRST_PART' loads a split model in every command.");
  cmd->add_flag("--split", o->split, "split IN into parts named OUT_PREFIX-0000i-of-0000N.gguf (the default)");
  cmd->add_flag("--merge", o->merge, "merge the parts whose first is IN into the single file OUT (must not exist)");
  cmd->add_option("--split-max-tensors", o->max_tensors, "at most N tensors per part (default 128)")
      ->check(NumberRange(int64_t(1), int64_t(1) << 31));
  cmd->add_option("--split-max-size", o->max_size,
                  "at most N(M|G) bytes of tensor data per part (M = 10^6, G = 10^9; a larger tensor "
                  "gets a part of its own)");
  cmd->add_flag("--no-tensor-first-split", o->no_tensor_first_split, "put no tensors in the first part");
  cmd->add_flag("--dry-run", o->dry_run, "print the parts and write nothing");
  cmd->add_option("IN", o->in, "the model to split, or with --merge the first part")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("OUT", o->out, "with --split the prefix of the parts, with --merge the merged file")->required();
  return {cmd, [o] {
            if (o->split && o->merge) return usage_error("gguf-split: give --split or --merge, not both");
            if (o->max_tensors > 0 && !o->max_size.empty()) {
              return usage_error("gguf-split: give --split-max-tensors or --split-max-size, not both");
            }
            return o->merge ? run_merge(*o) : run_split(*o);
          }};
}

}  // namespace tessera::cli
