// A model loaded from a GGUF file: hyper-parameters, weights (mapped, not copied)
// and, when the file has one, its tokenizer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera {

class Tokenizer;
namespace gguf {
class File;
}
namespace detail {
struct ModelImpl;
}

/// What a user may want to know about a loaded model.
struct ModelInfo {
  std::string path;
  std::string arch;         // general.architecture
  std::string name;         // general.name (may be empty)
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t n_ff = 0;
  uint64_t n_params = 0;    // elements of all weights
  uint64_t weight_bytes = 0;
  /// Weight bytes one generated token reads: every weight except the token embedding,
  /// of which one row (all of it when the output projection is tied to it), and the
  /// tensors of the adapters applied.
  uint64_t decode_bytes = 0;
  /// An encoder (the BERT family): no logits; its contexts compute embeddings only
  /// (ContextParams::embeddings), every token of a sequence seeing all of it.
  bool encoder = false;
  /// <arch>.pooling_type by name ("none", "mean", "cls", "last", "rank"); "" when absent.
  std::string pooling;
  /// A reranker's classification head (cls.weight): Model::classify can score.
  bool rank_head = false;
  std::vector<std::string> adapters;  // the adapter files applied, in order
  std::vector<float> adapter_scales;  // their user scales at load (AdapterSpec::scale), in order
};

/// A LoRA adapter to apply: a GGUF adapter file (general.type = adapter, adapter.type =
/// lora, adapter.lora.alpha; tensors <weight name>.lora_a [n_in, r] and .lora_b [r, n_out])
/// and the user's scale (the update is scale * alpha / r * b (a x); alpha 0: scale * b (a x)).
struct AdapterSpec {
  std::string path;
  float scale = 1.0f;
};

struct ModelParams {
  /// Applied as extra matmuls beside the weights they update (no merged copy), in order.
  std::vector<AdapterSpec> adapters;
  /// Moves matrices into the CPU's GEMM layouts (faster); training a LoRA on a quantized
  /// base turns it off, as the gradient reads the base's rows in the file's layout.
  bool repack = true;
  /// Splits the layers between CPU backend instances, "RANGE:NAME,..." (--layers
  /// 0-10:a,11-21:b): each name is one backend with its own buffers and a share of the
  /// context's threads, holding its layers' weights and KV cache; the token embedding goes
  /// with layer 0, the output with the last layer. Empty: one backend.
  std::string layers;
  /// Splits the layers between the ranks of an MPI job (tessera/mpi.h): each rank maps
  /// and computes only its own contiguous range. `mpi_layers`: layers per rank (summing to
  /// the model's); empty: in proportion to each rank's free memory.
  bool mpi = false;
  std::vector<int64_t> mpi_layers;
  /// llama.cpp's -ngl: the last n_gpu_layers layers (weights and KV cache) on the GPU,
  /// the output too when it exceeds the layer count (99: everything but the token
  /// embedding's row lookup). Needs a build with TESSERA_CUDA. 0: the CPU alone.
  int n_gpu_layers = 0;
  /// The CUDA device -ngl offloads to (--device N).
  int device = 0;
  /// false: the file (every part of a split model) is read into memory instead of mapped
  /// (the tools' --no-mmap). The ranks of an MPI job map theirs either way.
  bool mmap = true;
};

/// Parses "FILE[:SCALE]" (the --lora flag of the tools); the scale defaults to 1. A colon
/// that is not followed by a number is part of the file name.
AdapterSpec parse_adapter_spec(const std::string& text);

class Model {
 public:
  /// Opens, validates and maps a GGUF model. Errors name the file and what is wrong.
  static Result<std::unique_ptr<Model>> load(const std::string& path);
  /// The same, with adapters (whose errors name the adapter file) and load options.
  static Result<std::unique_ptr<Model>> load(const std::string& path, const ModelParams& params);
  /// The same from a GGUF image in memory (an embedded or downloaded file); `name` stands
  /// for the path in messages and ModelInfo::path.
  static Result<std::unique_ptr<Model>> load_from_memory(std::vector<uint8_t> bytes, const std::string& name,
                                                         const ModelParams& params = {});
  /// The default model built into this build of tessera (models/README.md: a small LLaMA
  /// tessera trained itself), as run, chat and serve use it without -m. An error when the
  /// build has none (CMake's TESSERA_DEFAULT_MODEL).
  static Result<std::unique_ptr<Model>> load_default(const ModelParams& params = {});
  /// The built-in default model's file name; empty when the build has none.
  static std::string default_model_name();
  ~Model();

  const ModelInfo& info() const;
  /// The model's tokenizer, or null when the file has no vocabulary (no tokenizer.ggml.model,
  /// or "none"); a file whose vocabulary does not load (mistyped, unsupported) is refused.
  const Tokenizer* tokenizer() const;
  const gguf::File& file() const;
  /// A reranker's classification head on the first token's final state x [n_embd]:
  /// tanh(cls·x + cls.bias), then cls.output·(that) + its bias when the file has them (as
  /// the reference's rank pooling). The first element is the relevance score. Needs
  /// ModelInfo::rank_head.
  std::vector<float> classify(std::span<const float> x) const;

  /// Internal state, for the runtime.
  const detail::ModelImpl& impl() const { return *impl_; }

 private:
  explicit Model(std::unique_ptr<detail::ModelImpl> impl);
  static Result<std::unique_ptr<Model>> load_on_ranks(const std::string& path, const ModelParams& params,
                                                      const std::function<Result<std::unique_ptr<Model>>()>& load);
  static Result<std::unique_ptr<Model>> from_file(std::unique_ptr<gguf::File> file, const std::string& path,
                                                  const ModelParams& params);
  std::unique_ptr<detail::ModelImpl> impl_;
};

/// The architectures Model::load builds (general.architecture values), in registry order.
std::vector<std::string> architecture_names();

}  // namespace tessera
