// tessera::finetune_model: a LoRA on a frozen base, with the training loop of `train`.

#include "backend/registry.h"
#include "tessera/model.h"
#include "tessera/tokenizer.h"
#include "tessera/train.h"
#include "train/arch_check.h"
#include "train/lora_model.h"
#include "train/preflight.h"
#include "train/run_loop.h"

namespace tessera {

Status finetune_model(const FinetuneOptions& o, const std::function<void(const TrainProgress&)>& progress) {
  TESSERA_RETURN_IF_ERROR(check_finetune_options(o));
  Result<std::vector<std::string>> targets = train::parse_lora_targets(o.targets);
  if (!targets) return targets.status();
  Result<std::string> text = train::read_training_text(o.text_path);
  if (!text) return text.status();
  ModelParams mp;
  mp.repack = false;  // the backward pass dequantizes the base's rows in the file's layout
  Result<std::unique_ptr<Model>> base = o.base_path.empty() ? Model::load_default(mp) : Model::load(o.base_path, mp);
  if (!base) return base.status();
  if ((*base)->info().encoder) {
    return Status::error("finetune: " + o.base_path + " is an encoder (" + (*base)->info().arch +
                         "): it computes embeddings, not the next-token logits finetune trains");
  }
  const Tokenizer* tok = (*base)->tokenizer();
  if (tok == nullptr) return Status::error((o.base_path.empty() ? Model::default_model_name() : o.base_path) + ": the base has no tokenizer to read the text with");
  backends::Options cpu_options;
  cpu_options.n_threads = o.n_threads;
  Result<std::unique_ptr<Backend>> cpu = backends::create("CPU", cpu_options);
  if (!cpu) return cpu.status();
  Backend& backend = **cpu;
  Result<std::unique_ptr<train::TrainModel>> m =
      train::create_lora(**base, {o.lora_r, o.lora_alpha, *targets}, o.seed, backend);
  if (!m) return m.status();
  TESSERA_RETURN_IF_ERROR(train::check_differentiable(**m, "finetune"));
  const int64_t n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min<int64_t>(256, (*base)->info().n_ctx_train);
  const train::RunConfig c = train::run_config(o, n_ctx);
  TrainProgress p;
  p.phase = TrainProgress::Phase::Tokenizing;
  p.message = "tokenizing " + std::to_string(text->size()) + " bytes";
  if (progress) progress(p);
  const std::vector<TokenId> ids = tok->encode(*text, false);
  train::TokenSplit data = train::split_tokens(std::vector<int32_t>(ids.begin(), ids.end()), o.val_fraction, n_ctx);
  p.phase = TrainProgress::Phase::Start;
  p.steps = c.steps;
  p.n_params = (*m)->n_params();
  p.n_train_tokens = int64_t(data.train.size());
  p.n_val_tokens = int64_t(data.val.size());
  train::Trainer t(**m, c, backend, std::move(data), tok->bos());
  TESSERA_RETURN_IF_ERROR(t.init());
  if (progress) progress(p);
  p.phase = TrainProgress::Phase::Training;
  train::LoopOptions lo;
  lo.log_path = o.log_path;
  lo.stop = o.stop;
  lo.extras.eval_every = o.eval_every;
  lo.extras.val_fraction = o.val_fraction;
  Result<bool> stopped = train::run_loop(t, lo, backend, p, progress);
  if (!stopped) return stopped.status();
  TESSERA_RETURN_IF_ERROR(train::write_atomically(train::model_writer(**m, backend, DType::F32), o.output_path));
  p.phase = *stopped ? TrainProgress::Phase::Interrupted : TrainProgress::Phase::Done;
  p.step = t.step();
  p.message = o.output_path;
  if (progress) progress(p);
  return Status::ok();
}

}  // namespace tessera
