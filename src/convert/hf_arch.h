// How one Hugging Face architecture becomes a tessera one: the metadata keys its config.json
// gives (as the reference converter's set_gguf_parameters writes them) and the plan of its
// tensors (each GGUF tensor from which checkpoint tensors, by which transform). One file
// per family of architectures (arch_*.cpp), listed in arch_registry.cpp.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "convert/hf_checkpoint.h"
#include "tessera/gguf.h"
#include "tessera/status.h"

namespace tessera::convert {

/// config.json, with reads that name the key and the file when they fail.
class HfConfig {
 public:
  static Result<HfConfig> load(const std::filesystem::path& dir);
  const nlohmann::json& json() const { return j_; }
  bool has(const std::string& key) const { return j_.contains(key) && !j_[key].is_null(); }
  Result<int64_t> integer(const std::string& key) const;
  int64_t integer_or(const std::string& key, int64_t fallback) const;
  /// Each of `keys`, all required, by name.
  Result<std::map<std::string, int64_t>> integers(std::initializer_list<const char*> keys) const;
  Result<double> number(const std::string& key) const;
  double number_or(const std::string& key, double fallback) const;
  bool boolean_or(const std::string& key, bool fallback) const;
  /// architectures[0].
  std::string hf_arch() const;
  /// The checkpoint folder.
  std::filesystem::path dir() const { return std::filesystem::path(path_).parent_path(); }
  /// Forgets `key` (an architecture whose reference ignores it).
  void erase(const std::string& key) { j_.erase(key); }

 private:
  nlohmann::json j_;
  std::string path_;
};

/// How a checkpoint tensor's values are rearranged on the way.
enum class Transform {
  None,
  /// LLaMA's q/k rows: each head's two rotary halves interleaved (GGUF rotates adjacent
  /// pairs), `heads` heads; convert_hf_to_gguf.py's LlamaModel.permute.
  PermuteRope,
  /// Gemma's norms: HF multiplies by (1 + w), GGUF files hold 1 + w.
  AddOne,
  /// GPT-2's Conv1D weights, stored [in, out]: transposed to [out, in].
  Transpose,
  /// GPT-NeoX's and BLOOM's fused qkv rows, per head [q | k | v]: regrouped to
  /// [all q | all k | all v] (`heads` heads).
  QkvPerHead,
  /// Falcon's fused qkv rows, per key/value group [its q heads | k | v]: regrouped to
  /// [all q | all k | all v] (`heads` query heads, `heads_kv` groups).
  QkvGroups,
};

/// One GGUF tensor: from one checkpoint tensor, or several stacked (experts: sources in
/// expert order, each one slice of the outermost dimension).
struct TensorPlan {
  std::string name;                  // GGUF name
  std::vector<std::string> sources;  // checkpoint names
  std::vector<int64_t> shape;        // the expected GGUF ne, innermost first
  Transform transform = Transform::None;
  int64_t heads = 0;                 // PermuteRope, QkvPerHead, QkvGroups
  int64_t heads_kv = 0;              // QkvGroups
  /// The source holds `parts` equal blocks of rows (fused projections: Baichuan's W_pack,
  /// Refact's kv and gate_up); this tensor is block `part`, rearranged by `transform`.
  int64_t part = 0, parts = 1;
  bool keep_f32 = false;             // norms, biases, routers: F32 whatever the type
  /// Values that are not in the checkpoint (LLaMA 3's rope_freqs): the plan holds them.
  std::vector<float> generated;
};

/// One name of the checkpoint and its GGUF name: "{}" stands for the layer index, and in
/// an expert map "{e}" for the expert's (the experts are stacked into one GGUF tensor).
struct NameMap {
  const char* hf;
  const char* gguf;  // null: read and dropped, as the reference drops it (Gemma's lm_head)
  /// PermuteRope: by the query heads for "attn_q", the key/value heads otherwise.
  Transform transform = Transform::None;
  /// The checkpoint tensor fuses `parts` equal row blocks; this name is block `part`.
  int part = 0, parts = 1;
};

struct HfArch {
  const char* hf_name;  // config.json architectures[0]
  const char* arch;     // general.architecture written
  /// The <arch>.* keys (general.* and tokenizer.* are not its business).
  Status (*keys)(const HfConfig& c, const std::string& arch, gguf::Writer& w);
  std::span<const NameMap> globals;  // outside the layers
  std::span<const NameMap> layers;   // in every layer where the checkpoint has them
  std::span<const NameMap> experts;  // stacked over config.json's expert count
  /// Tensors computed from config.json (LLaMA 3's rope_freqs, LongRoPE's factors); null:
  /// none.
  Result<std::vector<TensorPlan>> (*generated)(const HfConfig& c) = nullptr;
  /// A prefix some checkpoints put before every name ("bert." of BertForMaskedLM), dropped.
  const char* strip_prefix = nullptr;
  /// Checkpoint tensors the reference leaves out; a trailing '*' matches a prefix.
  std::span<const char* const> dropped = {};
  /// The checkpoint's embedding, written again as output.weight when the checkpoint has no
  /// tensor of its own for it (GPT-2 and BLOOM, whose reference copies it: their engine has
  /// no tied output); null: none.
  const char* output_copy = nullptr;
};

/// The keys of the reference converter's Model.set_gguf_parameters, which most
/// architectures start from: each written only where config.json has its source.
Status base_keys(const HfConfig& c, const std::string& arch, gguf::Writer& w);

/// Every GGUF tensor of `arch` for checkpoint `ck`, in the order written: the maps' entries
/// the checkpoint has, with the shapes tessera's loader expects from the keys in `keys`
/// (so that a checkpoint disagreeing with config.json is caught tensor by tensor).
Result<std::vector<TensorPlan>> plan_tensors(const HfArch& arch, const HfConfig& c, Checkpoint& ck,
                                             const gguf::Writer& keys);

/// The architecture of config.json's architectures[0] (or `override_arch`, a tessera name);
/// an error listing the convertible ones.
Result<const HfArch*> find_hf_arch(const std::string& hf_name, const std::string& override_arch);
const std::vector<const HfArch*>& hf_archs();

}  // namespace tessera::convert
