#include <utility>

#include "backend/registry.h"
#include "backend/mpi/comm.h"
#include "model/default_model.h"
#include "model/fuse_weights.h"
#include "model/placement.h"
#include "model/load_command.h"
#include "model/lora.h"
#include "model/model_impl.h"
#include "tessera/gguf_split.h"
#include "tessera/log.h"

namespace tessera {
namespace {

/// Whether the file declares a vocabulary (tokenizer.ggml.model, other than llama.cpp's
/// "none" / "no_vocab" for models without one); files without one run on token ids.
bool has_vocabulary(const gguf::File& file) {
  const gguf::Value* model = file.find("tokenizer.ggml.model");
  if (model == nullptr) return false;
  const std::string* name = model->as_string();
  return name == nullptr || (*name != "none" && *name != "no_vocab");
}

/// The placement params ask for (one backend when they ask for none).
Result<Placement> make_placement(const ModelParams& params, int64_t n_layer) {
  if (params.mpi && !params.layers.empty()) {
    return Status::error("--layers and --mpi cannot be combined (--mpi-layers places layers on ranks)");
  }
  if (params.mpi) {
    if (!mpi::active()) return Status::error("--mpi: MPI is not running (start tessera with mpirun)");
    return mpi_placement(params.mpi_layers, mpi::free_bytes(), n_layer, mpi::rank());
  }
  if (!params.mpi_layers.empty()) return Status::error("--mpi-layers needs --mpi");
  if (params.n_gpu_layers != 0) {
    if (params.mpi || !params.layers.empty()) {
      return Status::error("-ngl cannot be combined with --layers or --mpi (one placement at a time)");
    }
    // As llama.cpp: a build without the GPU backend, or a machine without a GPU, warns and
    // runs on the CPU (scripts carry -ngl 99 from machine to machine).
    if (params.n_gpu_layers > 0) {
      if (Result<std::vector<backends::Device>> gpus = backends::devices("CUDA"); !gpus) {
        log(LogLevel::Warn, "-ngl %lld ignored: %s; running on the CPU", static_cast<long long>(params.n_gpu_layers),
            gpus.status().message().c_str());
        return single_placement(n_layer);
      }
    }
    return gpu_placement(n_layer, params.n_gpu_layers, params.device);
  }
  if (!params.layers.empty()) return parse_layer_placement(params.layers, n_layer);
  return single_placement(n_layer);
}

}  // namespace

Model::Model(std::unique_ptr<detail::ModelImpl> impl) : impl_(std::move(impl)) {}
Model::~Model() {
  if (impl_ && impl_->mpi_id >= 0) (void)mpi::send_command(encode_free_model_command(impl_->mpi_id));
}

const ModelInfo& Model::info() const { return impl_->info; }
const Tokenizer* Model::tokenizer() const { return impl_->tokenizer.get(); }
const gguf::File& Model::file() const { return *impl_->file; }

Result<std::unique_ptr<Model>> Model::load(const std::string& path) { return load(path, ModelParams{}); }

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const ModelParams& params) {
  return load_on_ranks(path, params, [&]() -> Result<std::unique_ptr<Model>> {
    Result<std::unique_ptr<gguf::File>> file = gguf::File::open_model(path, params.mmap);
    if (!file) return file.status();
    return from_file(std::move(*file), path, params);
  });
}

// Rank 0 of an MPI job asks every rank to load its share too, and hears how it went.
Result<std::unique_ptr<Model>> Model::load_on_ranks(const std::string& path, const ModelParams& params,
                                                    const std::function<Result<std::unique_ptr<Model>>()>& load) {
  const bool lead = params.mpi && mpi::active() && mpi::rank() == 0 && mpi::size() > 1;
  if (!lead) return load();
  static int next_id = 0;
  const int id = next_id++;
  TESSERA_RETURN_IF_ERROR(mpi::send_command(encode_load_command(id, path, params)));
  Result<std::unique_ptr<Model>> model = load();
  const Status all = mpi::gather_status(model ? Status::ok() : model.status());
  if (model) (*model)->impl_->mpi_id = id;  // freed on every rank with the model
  if (!all.is_ok()) return all;
  return model;
}

Result<std::unique_ptr<Model>> Model::load_from_memory(std::vector<uint8_t> bytes, const std::string& name,
                                                       const ModelParams& params) {
  Result<std::unique_ptr<gguf::File>> file = gguf::File::from_bytes(std::move(bytes), name);
  if (!file) return file.status();
  // The other parts of a split model are found by the first one's path (Model::load).
  if (const gguf::Value* n = (*file)->find(gguf::kSplitCountKey); n && n->as_int().value_or(0) > 1) {
    return Status::error(name + " is part of a split model (" + std::string(gguf::kSplitCountKey) + " " +
                         std::to_string(*n->as_int()) + "): load it from its first part's path");
  }
  return from_file(std::move(*file), name, params);
}

Result<std::unique_ptr<Model>> Model::load_default(const ModelParams& params) {
  const std::span<const uint8_t> bytes = default_model_bytes();
  if (bytes.empty()) {
    return Status::error("this build of tessera has no default model: give a model file with -m "
                         "(or build with models/" + std::string(kDefaultModelFile) + " present)");
  }
  // An empty path tells the other ranks of an MPI job to load their built-in one.
  return load_on_ranks("", params, [&] {
    return load_from_memory(std::vector<uint8_t>(bytes.begin(), bytes.end()), default_model_name() + " (built in)",
                            params);
  });
}

std::string Model::default_model_name() { return default_model_bytes().empty() ? "" : kDefaultModelFile; }

Result<std::unique_ptr<Model>> Model::from_file(std::unique_ptr<gguf::File> file, const std::string& path,
                                                const ModelParams& params) {
  auto impl = std::make_unique<detail::ModelImpl>();
  impl->file = std::move(file);

  // What the file is, first: an adapter or a vocabulary alone would otherwise show as a
  // missing key of its architecture.
  if (Result<std::string> type = impl->file->get_string("general.type"); type && *type == "adapter") {
    return Status::error(path + ": this file is an adapter (general.type = adapter), not a model: give the base "
                                "model with -m and this file with --lora");
  }
  // The architecture next: its keys are named after it, so an unknown one would only
  // show as a missing key.
  Result<std::string> arch = impl->file->get_string("general.architecture");
  if (!arch) return arch.status().with_context(path);
  impl->arch = find_arch(*arch);
  if (!impl->arch) {
    return Status::error(path + ": model: architecture '" + *arch +
                         "' is not supported (supported: " + registered_arch_names() + ")");
  }
  Result<HParams> hp = read_hparams(*impl->file);
  if (!hp) return hp.status().with_context(path);
  impl->hparams = *hp;
  if (impl->arch->configure != nullptr) {
    TESSERA_RETURN_IF_ERROR(impl->arch->configure(*impl->file, impl->hparams).with_context(path));
  }
  Result<ModelWeights> w = load_weights(*impl->file, *impl->arch, impl->hparams, impl->arena);
  if (!w) return w.status().with_context(path);
  impl->weights = std::move(*w);
  TESSERA_RETURN_IF_ERROR(attach_adapters(params.adapters, *impl->arch, impl->hparams, impl->weights,
                                          impl->arena, impl->adapter_files));
  Result<Placement> placement = make_placement(params, impl->hparams.n_layer);
  if (!placement) return placement.status().with_context(path);
  impl->placement = std::move(*placement);
  const Placement& pl = impl->placement;
  if (params.repack) {
    // An MPI rank never reads (or pages in) another rank's layers; a GPU's layers are
    // read in the file's layout, on the GPU.
    std::vector<bool> here;
    const bool partial = pl.mpi || !pl.gpu.empty();
    for (int64_t il = 0; partial && il < impl->hparams.n_layer; ++il) here.push_back(pl.layer_on_cpu_here(il));
    const bool output_here = pl.here(pl.output) && pl.gpu_of(pl.output) < 0;
    Result<RepackedWeights> repacked = repack_weights(impl->weights, *impl->file, here, output_here);
    if (!repacked) return repacked.status().with_context(path);
    impl->repacked = std::move(*repacked);
  }
  // A fused projection would bypass its parts' adapters: none are fused with adapters.
  if (params.adapters.empty()) fuse_projections(impl->weights, impl->arena);
  impl->weight_backend = place_weights(impl->weights, pl);
  if (pl.backends.size() > 1) log(LogLevel::Info, "placement: %s", describe_placement(pl).c_str());
  Result<std::unique_ptr<DeviceWeights>> on_gpu = upload_weights(pl, impl->weight_backend);
  if (!on_gpu) return on_gpu.status().with_context(path);
  impl->device_weights = std::move(*on_gpu);

  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::from_gguf(*impl->file);
  if (tok) {
    impl->tokenizer = std::move(*tok);
  } else if (has_vocabulary(*impl->file)) {
    return tok.status().with_context(path);  // a broken or unsupported one, as llama.cpp refuses it
  } else {
    log(LogLevel::Warn, "%s: no usable tokenizer (%s); only token ids can be used",
        path.c_str(), tok.status().message().c_str());
  }

  ModelInfo& info = impl->info;
  info.path = path;
  info.arch = hp->arch;
  if (const gguf::Value* v = impl->file->find("general.name"); v && v->as_string()) {
    info.name = *v->as_string();
  }
  info.n_vocab = hp->n_vocab;
  info.n_ctx_train = hp->n_ctx_train;
  info.n_embd = hp->n_embd;
  info.n_layer = hp->n_layer;
  info.n_head = hp->n_head;
  info.n_head_kv = hp->n_head_kv;
  info.n_ff = hp->n_ff;
  for (const gguf::TensorInfo& t : impl->file->tensors()) {
    info.n_params += uint64_t(t.n_elements());
    info.weight_bytes += t.nbytes;
  }
  const Tensor* embd = impl->weights.token_embd;
  const bool tied = impl->weights.variant.output == Presence::No && impl->weights.variant.logits;
  info.encoder = !impl->weights.variant.logits;
  info.rank_head = impl->weights.variant.has(&BlockVariant::rank_head);
  static constexpr const char* kPoolings[] = {"none", "mean", "cls", "last", "rank"};
  if (hp->pooling_type >= 0) info.pooling = kPoolings[hp->pooling_type];
  for (const AdapterSpec& a : params.adapters) {
    info.adapters.push_back(a.path);
    info.adapter_scales.push_back(a.scale);
  }
  info.decode_bytes = info.weight_bytes - embd->nbytes() + (tied ? embd->nbytes() : embd->nb[1]);
  for (const auto& f : impl->adapter_files) {  // every token also reads each adapter's a and b
    for (const gguf::TensorInfo& t : f->tensors()) info.decode_bytes += t.nbytes;
  }
  return std::unique_ptr<Model>(new Model(std::move(impl)));
}

std::vector<std::string> architecture_names() {
  std::vector<std::string> names;
  for (const Arch* a : registered_archs()) names.emplace_back(a->name);
  return names;
}

}  // namespace tessera
