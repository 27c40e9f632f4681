// `tessera synth`: writes a random-weight LLaMA GGUF of a chosen shape with a generated
// SentencePiece-style vocabulary. Deterministic for a seed; no network needed.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <unistd.h>

#include "commands.h"
#include "synth_vocab.h"
#include "tessera/gguf.h"
#include "tessera/quantize.h"

namespace tessera::cli {
namespace {

struct Shape {
  int64_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx;
};

const std::map<std::string, Shape> kPresets = {
    {"mini", {256, 4, 8, 4, 768, 1024, 2048}},
    {"tinyllama-1.1b", {2048, 22, 32, 4, 5632, 32000, 2048}},
    {"llama-7b", {4096, 32, 32, 32, 11008, 32000, 4096}},
};

struct SynthOptions {
  std::string preset = "mini";
  std::string out;
  std::string type = "f16";
  uint64_t seed = 42;
  Shape shape{};
  std::string vocab_from;
  std::string quantize_to;  // set when --type names a quantization recipe
};

/// splitmix64: a tiny, fast, well-mixed generator; Box-Muller on top for normals.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() { return float((next() >> 40) + 1) * (1.0f / 16777217.0f); }  // (0, 1)
  float normal() {
    const float u = uniform(), v = uniform();
    return std::sqrt(-2.0f * std::log(u)) * std::cos(6.2831853f * v);
  }

 private:
  uint64_t s_;
};

struct Synthesizer {
  const SynthOptions& o;
  DType type;
  gguf::Writer writer;
  std::vector<std::vector<uint8_t>> storage;  // tensor bytes, alive until write()
  Rng rng;
  bool progress = isatty(fileno(stderr)) != 0;  // a progress line only on a terminal

  void add(const std::string& name, std::array<int64_t, 4> ne, int n_dims, float stddev, float mean) {
    const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    const DType t = n_dims == 1 ? DType::F32 : type;  // norms stay F32
    std::vector<float> values(static_cast<size_t>(n));
    for (float& v : values) v = mean + stddev * rng.normal();
    std::vector<uint8_t>& bytes = storage.emplace_back(dtype_row_size(t, ne[0]) * size_t(n / ne[0]));
    dtype_traits(t).from_float(values.data(), bytes.data(), n);
    writer.add_tensor_ref(name, t, ne, n_dims, bytes.data(), bytes.size());
  }

  void add_weights() {
    const Shape& s = o.shape;
    const int64_t hd = s.n_embd / s.n_head;
    const float w = 0.02f;
    add("token_embd.weight", {s.n_embd, s.n_vocab, 1, 1}, 2, w, 0.0f);
    add("output_norm.weight", {s.n_embd, 1, 1, 1}, 1, 0.0f, 1.0f);
    add("output.weight", {s.n_embd, s.n_vocab, 1, 1}, 2, w, 0.0f);
    for (int64_t il = 0; il < s.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      add(p + "attn_norm.weight", {s.n_embd, 1, 1, 1}, 1, 0.0f, 1.0f);
      add(p + "attn_q.weight", {s.n_embd, s.n_embd, 1, 1}, 2, w, 0.0f);
      add(p + "attn_k.weight", {s.n_embd, hd * s.n_head_kv, 1, 1}, 2, w, 0.0f);
      add(p + "attn_v.weight", {s.n_embd, hd * s.n_head_kv, 1, 1}, 2, w, 0.0f);
      add(p + "attn_output.weight", {s.n_embd, s.n_embd, 1, 1}, 2, w, 0.0f);
      add(p + "ffn_norm.weight", {s.n_embd, 1, 1, 1}, 1, 0.0f, 1.0f);
      add(p + "ffn_gate.weight", {s.n_embd, s.n_ff, 1, 1}, 2, w, 0.0f);
      add(p + "ffn_up.weight", {s.n_embd, s.n_ff, 1, 1}, 2, w, 0.0f);
      add(p + "ffn_down.weight", {s.n_ff, s.n_embd, 1, 1}, 2, w, 0.0f);
      if (progress) {
        std::fprintf(stderr, "\rtessera synth: layer %lld/%lld", static_cast<long long>(il + 1),
                     static_cast<long long>(s.n_layer));
      }
    }
    if (progress) std::fprintf(stderr, "\n");
  }

  void add_hparams() {
    const Shape& s = o.shape;
    writer.set("general.architecture", "llama");
    writer.set("general.name", "tessera-synth-" + o.preset);
    writer.set("general.file_type", uint32_t(type == DType::F32 ? 0 : type == DType::F16 ? 1 : 32));
    writer.set("llama.context_length", uint32_t(s.n_ctx));
    writer.set("llama.embedding_length", uint32_t(s.n_embd));
    writer.set("llama.block_count", uint32_t(s.n_layer));
    writer.set("llama.feed_forward_length", uint32_t(s.n_ff));
    writer.set("llama.attention.head_count", uint32_t(s.n_head));
    writer.set("llama.attention.head_count_kv", uint32_t(s.n_head_kv));
    writer.set("llama.rope.dimension_count", uint32_t(s.n_embd / s.n_head));
    writer.set("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    writer.set("llama.rope.freq_base", 10000.0f);
  }
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
  }
  if (Status s = check_shape(o.shape); !s) return fail(s.message());

  Synthesizer syn{o, *type, {}, {}, Rng(o.seed)};
  syn.add_hparams();
  Status vs = o.vocab_from.empty() ? add_generated_vocab(syn.writer, o.shape.n_vocab)
                                   : copy_vocab(syn.writer, o.vocab_from, &o.shape.n_vocab);
  if (!vs) return fail(vs.message());
  syn.add_weights();
  // Quantized types: write F16 next to the output, then run the quantizer's recipe on it.
  const std::string f16_path = o.out + ".f16.tmp";
  const std::string& first_path = o.quantize_to.empty() ? o.out : f16_path;
  if (Status s = syn.writer.write(first_path); !s) return fail(s.message());
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
  CLI::App* cmd = app.add_subcommand("synth", "Write a random-weight LLaMA GGUF of a given shape");
  cmd->add_option("-o,--output", o->out, "output GGUF file")->required();
  cmd->add_option("--preset", o->preset, "shape: mini, tinyllama-1.1b or llama-7b");
  cmd->add_option("--type", o->type,
                  "weight type: f32, f16, bf16, or a quantization type such as q4_0, q8_0, q4_k_m "
                  "(see 'tessera quantize --help'); norms stay f32");
  cmd->add_option("--seed", o->seed, "random seed");
  cmd->add_option("--vocab-from", o->vocab_from, "copy the tokenizer of this GGUF file")->check(CLI::ExistingFile);
  for (const char* key : {"n-embd", "n-layer", "n-head", "n-head-kv", "n-ff", "n-vocab", "n-ctx"}) {
    cmd->add_option_function<int64_t>(std::string("--") + key,
                                      [overrides, key](int64_t v) { (*overrides)[key] = v; },
                                      std::string("override the preset's ") + key)
        ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  }
  return {cmd, [o, overrides] { return run_synth(*o, *overrides); }};
}

}  // namespace tessera::cli
