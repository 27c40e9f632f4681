// `tessera synth`: writes a random-weight GGUF of any architecture tessera builds (LLaMA
// by default), of a chosen shape, with a generated SentencePiece-style vocabulary or a
// copied one. Deterministic for a seed; no network needed. The tensors come from the
// architecture's own list (tessera/synth.h): nothing here is per architecture.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <memory>
#include <unistd.h>

#include "commands.h"
#include "synth_vocab.h"
#include "tessera/gguf.h"
#include "tessera/model.h"
#include "tessera/quantize.h"
#include "tessera/synth.h"

namespace tessera::cli {
namespace {

struct Shape {
  int64_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx;
  int64_t n_expert = 0, n_expert_used = 0;  // 0: the architecture's default (synth.h)
};

// mixtral-2b: Mixtral's layout at TinyLlama's width (8 experts, 2 used, 8 layers), the
// mixture-of-experts benchmark shape.
const std::map<std::string, Shape> kPresets = {
    {"mini", {256, 4, 8, 4, 768, 1024, 2048}},
    {"tinyllama-1.1b", {2048, 22, 32, 4, 5632, 32000, 2048}},
    {"llama-7b", {4096, 32, 32, 32, 11008, 32000, 4096}},
    {"mixtral-2b", {2048, 8, 32, 8, 5632, 32000, 4096, 8, 2}},
};

struct SynthOptions {
  std::string arch = "llama";
  std::string preset = "mini";
  std::string out;
  std::string type = "f16";
  uint64_t seed = 42;
  Shape shape{};
  std::string vocab_from;
  bool rerank = false;
  std::string quantize_to;  // set when --type names a quantization recipe
};

Result<DType> parse_type(const std::string& name) {
  if (name == "f32") return DType::F32;
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  return Status::error("synth: --type '" + name + "' is not one of f32, f16, bf16");
}

Status check_shape(const Shape& s) {
  if (s.n_embd % s.n_head != 0) return Status::error("synth: --n-embd must be a multiple of --n-head");
  if (s.n_head % s.n_head_kv != 0) return Status::error("synth: --n-head must be a multiple of --n-head-kv");
  if ((s.n_embd / s.n_head) % 2 != 0) return Status::error("synth: the head size must be even");
  return Status::ok();
}

int run_synth(SynthOptions& o, const std::map<std::string, int64_t>& overrides) {
  Result<DType> type = parse_type(o.type);
  if (!type) {
    // Not a plain float type: a quantization recipe (Q4_0, Q8_0, Q4_K_M, ...) applied to F16.
    const std::vector<std::string> names = quantize_type_names();
    std::string upper = o.type;
    for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
    if (std::find(names.begin(), names.end(), upper) == names.end()) {
      std::string all;
      for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
      return fail("synth: --type '" + o.type + "' is neither f32, f16, bf16 nor a quantization type (" + all + ")");
    }
    o.quantize_to = upper;
    type = DType::F16;
  }
  auto preset = kPresets.find(o.preset);
  if (preset == kPresets.end()) return fail("synth: unknown --preset '" + o.preset + "'");
  o.shape = preset->second;
  for (const auto& [key, value] : overrides) {
    if (key == "n-embd") o.shape.n_embd = value;
    if (key == "n-layer") o.shape.n_layer = value;
    if (key == "n-head") o.shape.n_head = value;
    if (key == "n-head-kv") o.shape.n_head_kv = value;
    if (key == "n-ff") o.shape.n_ff = value;
    if (key == "n-vocab") o.shape.n_vocab = value;
    if (key == "n-ctx") o.shape.n_ctx = value;
    if (key == "n-expert") o.shape.n_expert = value;
    if (key == "n-expert-used") o.shape.n_expert_used = value;
  }
  // "mixtral": Mixtral files are llama files with experts (8, 2 used unless overridden).
  if (o.arch == "mixtral") {
    o.arch = "llama";
    if (o.shape.n_expert == 0) o.shape.n_expert = 8;
    if (o.shape.n_expert_used == 0) o.shape.n_expert_used = 2;
  }
  if (o.shape.n_expert > 0 && o.shape.n_expert_used == 0) o.shape.n_expert_used = std::min<int64_t>(2, o.shape.n_expert);
  if (Status s = check_shape(o.shape); !s) return fail(s.message());

  SynthParams sp;
  sp.arch = o.arch;
  sp.name = "tessera-synth-" + o.arch + "-" + o.preset;
  sp.n_expert = o.shape.n_expert;
  sp.n_expert_used = o.shape.n_expert_used;
  sp.n_embd = o.shape.n_embd;
  sp.n_layer = o.shape.n_layer;
  sp.n_head = o.shape.n_head;
  sp.n_head_kv = o.shape.n_head_kv;
  sp.n_ff = o.shape.n_ff;
  sp.n_ctx = o.shape.n_ctx;
  sp.type = *type;
  sp.seed = o.seed;
  sp.rank_head = o.rerank;
  sp.vocab = [&o](gguf::Writer& w) {
    return o.vocab_from.empty() ? add_generated_vocab(w, o.shape.n_vocab)
                                : copy_vocab(w, o.vocab_from, &o.shape.n_vocab);
  };
  if (isatty(fileno(stderr)) != 0) {  // a progress line only on a terminal
    sp.progress = [](int64_t done, int64_t n) {
      std::fprintf(stderr, "\rtessera synth: layer %lld/%lld%s", static_cast<long long>(done),
                   static_cast<long long>(n), done == n ? "\n" : "");
    };
  }
  // Quantized types: write F16 next to the output, then run the quantizer's recipe on it.
  const std::string f16_path = o.out + ".f16.tmp";
  const std::string& first_path = o.quantize_to.empty() ? o.out : f16_path;
  if (Status s = write_random_model(sp, first_path); !s) return fail(s.message());
  if (!o.quantize_to.empty()) {
    QuantizeParams qp;
    qp.type_name = o.quantize_to;
    Result<QuantizeReport> r = quantize_model(f16_path, o.out, qp);
    std::remove(f16_path.c_str());
    if (!r) return fail(r.status().message());
  }
  std::fprintf(stderr, "tessera synth: wrote %s (random weights, %s)\n", o.out.c_str(), o.type.c_str());
  return 0;
}

}  // namespace

Command add_synth(CLI::App& app) {
  auto o = std::make_shared<SynthOptions>();
  auto overrides = std::make_shared<std::map<std::string, int64_t>>();
  CLI::App* cmd = app.add_subcommand("synth", "Write a random-weight GGUF of a given architecture and shape");
  cmd->add_option("-o,--output", o->out, "output GGUF file")->required();
  std::string archs;
  for (const std::string& n : architecture_names()) archs += (archs.empty() ? "" : ", ") + n;
  cmd->add_option("--arch", o->arch, "architecture (default llama): " + archs +
                                        "; mixtral: llama with 8 experts, 2 used");
  cmd->add_option("--preset", o->preset, "shape: mini, tinyllama-1.1b, llama-7b or mixtral-2b (8 experts, 2 used)");
  cmd->add_option("--type", o->type,
                  "weight type: f32, f16, bf16, or a quantization type such as q4_0, q8_0, q4_k_m "
                  "(see 'tessera quantize --help'); norms stay f32");
  cmd->add_option("--seed", o->seed, "random seed");
  cmd->add_option("--vocab-from", o->vocab_from, "copy the tokenizer of this GGUF file")->check(CLI::ExistingFile);
  cmd->add_flag("--rerank", o->rerank,
                "a reranker (--arch bert): pooling_type rank and a classification head (cls, cls.output)");
  for (const char* key : {"n-embd", "n-layer", "n-head", "n-head-kv", "n-ff", "n-vocab", "n-ctx", "n-expert",
                          "n-expert-used"}) {
    cmd->add_option_function<int64_t>(std::string("--") + key,
                                      [overrides, key](int64_t v) { (*overrides)[key] = v; },
                                      std::string("override the preset's ") + key)
        ->check(NumberRange(int64_t(1), int64_t(1) << 20));
  }
  return {cmd, [o, overrides] { return run_synth(*o, *overrides); }};
}

}  // namespace tessera::cli
