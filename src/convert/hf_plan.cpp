// plan_tensors (hf_arch.h): the maps of an architecture applied to a checkpoint, each GGUF
// tensor's expected shape taken from tessera's own loader (the architecture's weight list
// evaluated on the keys the converter wrote), so that the converter and the loader cannot
// disagree about a shape.
#include <algorithm>
#include <map>
#include <span>

#include "convert/hf_arch.h"
#include "model/arch.h"
#include "model/hparams.h"

namespace tessera::convert {
namespace {

/// `pattern` with every `key` replaced by `value`.
std::string fill(const std::string& pattern, const std::string& key, int64_t value) {
  std::string out;
  size_t from = 0;
  for (size_t at = pattern.find(key); at != std::string::npos; at = pattern.find(key, from)) {
    out.append(pattern, from, at - from);
    out += std::to_string(value);
    from = at + key.size();
  }
  out.append(pattern, from, std::string::npos);
  return out;
}

/// The loader's hyper-parameters for the keys written so far.
Result<HParams> loader_hparams(const HfArch& arch, const HfConfig& c, const gguf::Writer& keys, const Arch& a) {
  gguf::Writer trial = keys;
  trial.set("general.architecture", std::string(arch.arch));
  // The vocabulary size comes from the tokenizer in files without <arch>.vocab_size.
  if (c.has("vocab_size")) trial.set(std::string(arch.arch) + ".vocab_size", uint32_t(c.integer_or("vocab_size", 0)));
  Result<std::unique_ptr<gguf::File>> f = gguf::File::from_bytes(trial.to_bytes(), "config.json");
  if (!f) return f.status();
  Result<HParams> h = read_hparams(**f);
  if (!h) return h.status().with_context("convert: the keys config.json gives");
  if (a.configure != nullptr) TESSERA_RETURN_IF_ERROR(a.configure(**f, *h).with_context("convert"));
  return h;
}

/// Takes (so that they are not left over) the checkpoint tensors `pattern` names: a name, a
/// prefix ending in '*' or a suffix starting with '*'.
void drop(Checkpoint& ck, const std::string& pattern) {
  const bool prefix = pattern.ends_with('*'), suffix = pattern.starts_with('*');
  const std::string stem = prefix ? pattern.substr(0, pattern.size() - 1) : suffix ? pattern.substr(1) : pattern;
  for (const std::string& name : ck.names()) {
    if (prefix ? name.starts_with(stem) : suffix ? name.ends_with(stem) : name == stem) ck.take(name);
  }
}

}  // namespace

Result<std::vector<TensorPlan>> plan_tensors(const HfArch& arch, const HfConfig& c, Checkpoint& ck,
                                             const gguf::Writer& keys) {
  const Arch* a = find_arch(arch.arch);
  if (a == nullptr) return Status::error(std::string("convert: tessera has no architecture '") + arch.arch + "'");
  Result<HParams> h = loader_hparams(arch, c, keys, *a);
  if (!h) return h.status();
  std::map<std::string, std::vector<int64_t>> shapes;
  for_each_weight(a->weights, *h, [&](const WeightSpec& spec, const std::string& name, int64_t) {
    const Shape ne = spec.shape(*h);
    int n = 4;
    while (n > 1 && ne[size_t(n - 1)] == 1) --n;
    shapes[name] = std::vector<int64_t>(ne.begin(), ne.begin() + n);
  });
  if (arch.strip_prefix != nullptr) ck.strip_prefix(arch.strip_prefix);
  // What the reference skips in every architecture (attention masks and rotary tables that
  // some checkpoints save), then the architecture's own.
  static constexpr const char* kAlwaysDropped[] = {"*.attention.masked_bias", "*.attention.bias",
                                                   "*.rotary_emb.inv_freq"};
  for (std::span<const char* const> list : {std::span<const char* const>(kAlwaysDropped), arch.dropped}) {
    for (const char* d : list) drop(ck, d);
  }
  std::vector<TensorPlan> out;
  Status status;
  const auto add = [&](const std::string& gguf_name, std::vector<std::string> sources, const NameMap& m) {
    if (!status) return;
    const auto it = shapes.find(gguf_name);
    if (it == shapes.end()) {
      status = Status::error("convert: tensor '" + sources.front() + "' would be " + gguf_name + ", which a " +
                             arch.arch + " file with these keys does not have");
      return;
    }
    TensorPlan p;
    p.name = gguf_name;
    p.sources = std::move(sources);
    p.shape = it->second;
    // A stacked tensor's expert count is its outermost dimension even when it is 1.
    if (gguf_name.ends_with("_exps.weight")) {
      p.shape.resize(3, 1);
      p.shape[2] = int64_t(p.sources.size());
    }
    p.transform = m.transform;
    p.part = m.part;
    p.parts = m.parts;
    p.heads = m.transform == Transform::PermuteRope && gguf_name.find("attn_q") == std::string::npos ? h->n_head_kv
                                                                                                    : h->n_head;
    p.heads_kv = h->n_head_kv;
    p.keep_f32 = gguf_name.find("ffn_gate_inp.") != std::string::npos || gguf_name.starts_with("position_embd") ||
                 gguf_name.starts_with("token_types");
    out.push_back(std::move(p));
  };
  for (const NameMap& m : arch.globals) {
    if (ck.has(m.hf) && m.gguf == nullptr) ck.take(m.hf);
    if (ck.has(m.hf) && m.gguf != nullptr) add(m.gguf, {m.hf}, m);
  }
  const bool has_output = std::any_of(out.begin(), out.end(), [](const TensorPlan& p) { return p.name == "output.weight"; });
  if (arch.output_copy != nullptr && !has_output && ck.has(arch.output_copy)) {
    add("output.weight", {arch.output_copy}, NameMap{arch.output_copy, "output.weight"});
  }
  if (arch.generated != nullptr) {
    Result<std::vector<TensorPlan>> g = arch.generated(c);
    if (!g) return g.status();
    for (TensorPlan& p : *g) out.push_back(std::move(p));
  }
  for (int64_t il = 0; il < h->n_layer; ++il) {
    for (const NameMap& m : arch.layers) {
      const std::string hf = fill(m.hf, "{}", il);
      if (ck.has(hf)) add(fill(m.gguf, "{}", il), {hf}, m);
    }
    for (const NameMap& m : arch.experts) {
      const std::string first = fill(fill(m.hf, "{}", il), "{e}", 0);
      if (!ck.has(first)) continue;
      std::vector<std::string> sources;
      for (int64_t e = 0; e < h->n_expert; ++e) sources.push_back(fill(fill(m.hf, "{}", il), "{e}", e));
      add(fill(m.gguf, "{}", il), std::move(sources), m);
    }
  }
  if (!status) return status;
  return out;
}

}  // namespace tessera::convert
