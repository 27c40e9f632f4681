// tessera::train_model: the text, the tokenizer, the model (new or from a checkpoint),
// the loop with its progress, validations, log and checkpoints, and the output file.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "tessera/train.h"
#include "tokenizer/train_vocab.h"
#include "train/checkpoint.h"
#include "train/run_loop.h"

namespace tessera {
namespace {

using train::RunConfig;
using train::RunExtras;
using train::TrainModel;
using train::Trainer;



Status check_options(const TrainOptions& o) {
  if (o.steps <= 0 || o.batch <= 0 || o.accum <= 0) return Status::error("train: --steps, --batch and --accum must be positive");
  if (o.n_ctx < 2) return Status::error("train: --ctx must be at least 2");
  if (!(o.lr > 0)) return Status::error("train: --lr must be positive");
  if (o.val_fraction < 0 || o.val_fraction >= 0.5) return Status::error("train: --val-fraction must be in [0, 0.5)");
  if (o.output_type != DType::F32 && o.output_type != DType::F16 && o.output_type != DType::BF16) {
    return Status::error("train: the output type must be f32, f16 or bf16 (quantize the written model instead)");
  }
  return Status::ok();
}

// A new model: a vocabulary learned from the text, then a LLaMA of the options' shape.
Result<std::unique_ptr<TrainModel>> new_model(const TrainOptions& o, const std::string& text, Backend& backend,
                                              const std::function<void(const TrainProgress&)>& progress) {
  TrainProgress p;
  p.phase = TrainProgress::Phase::Tokenizer;
  p.message = "learning a vocabulary of " + std::to_string(o.vocab_size) + " tokens";
  if (progress) progress(p);
  VocabTrainParams vp;
  vp.vocab_size = o.vocab_size;
  Result<TrainedVocab> vocab = train_vocab(text, vp);
  if (!vocab) return vocab.status().with_context("train");
  gguf::Writer keys;
  TESSERA_RETURN_IF_ERROR(write_vocab(keys, *vocab));
  train::ModelShape s;
  s.n_embd = o.n_embd;
  s.n_layer = o.n_layer;
  s.n_head = o.n_head;
  s.n_head_kv = o.n_head_kv > 0 ? o.n_head_kv : o.n_head;
  s.n_ff = o.n_ff;
  s.n_ctx = o.n_ctx;
  s.tied_output = o.tied_output;
  return train::create_model(s, keys, "tessera-trained", o.seed, backend);
}

std::string checkpoint_path(const TrainOptions& o) {
  return o.checkpoint_path.empty() ? o.output_path + ".ckpt" : o.checkpoint_path;
}

}  // namespace

Status train_model(const TrainOptions& o, const std::function<void(const TrainProgress&)>& progress) {
  TESSERA_RETURN_IF_ERROR(check_options(o));
  Result<std::string> text = train::read_training_text(o.text_path);
  if (!text) return text.status();
  CpuBackend backend(o.n_threads);
  std::unique_ptr<gguf::File> ckpt;
  std::unique_ptr<TrainModel> m;
  RunConfig c = train::run_config(o, o.n_ctx);
  RunExtras extras{o.eval_every, o.val_fraction};
  if (!o.resume_path.empty()) {
    Result<std::unique_ptr<gguf::File>> f = gguf::File::open(o.resume_path);
    if (!f) return f.status();
    ckpt = std::move(*f);
    Result<RunConfig> rc = train::read_run_config(*ckpt, &extras);
    if (!rc) return rc.status();
    c = *rc;
    if (o.override_steps) c.steps = c.adam.total_steps = o.steps;
    Result<std::unique_ptr<TrainModel>> lm = train::load_model(*ckpt, "training.", backend);
    if (!lm) return lm.status();
    m = std::move(*lm);
  } else {
    Result<std::unique_ptr<TrainModel>> nm = new_model(o, *text, backend, progress);
    if (!nm) return nm.status();
    m = std::move(*nm);
  }
  TrainProgress p;
  p.phase = TrainProgress::Phase::Tokenizing;
  p.message = "tokenizing " + std::to_string(text->size()) + " bytes";
  if (progress) progress(p);
  const std::vector<TokenId> ids = m->tokenizer->encode(*text, false);
  train::TokenSplit data = train::split_tokens(std::vector<int32_t>(ids.begin(), ids.end()), extras.val_fraction, c.n_ctx);
  p.phase = TrainProgress::Phase::Start;
  p.steps = c.steps;
  p.n_params = m->n_params();
  p.n_train_tokens = int64_t(data.train.size());
  p.n_val_tokens = int64_t(data.val.size());
  p.message.clear();
  Trainer t(*m, c, backend, std::move(data), m->tokenizer->bos());
  TESSERA_RETURN_IF_ERROR(t.init());
  if (ckpt) TESSERA_RETURN_IF_ERROR(train::restore_checkpoint(*ckpt, t));
  p.step = t.step();
  if (progress) progress(p);
  p.phase = TrainProgress::Phase::Training;
  train::LoopOptions lo;
  lo.log_path = o.log_path;
  lo.fresh_log = o.resume_path.empty();
  lo.checkpoint_path = checkpoint_path(o);
  lo.checkpoint_every = o.checkpoint_every;
  lo.stop_at = o.stop_at;
  TESSERA_RETURN_IF_ERROR(train::run_loop(t, lo, extras, backend, p, progress));
  TESSERA_RETURN_IF_ERROR(train::model_writer(*m, backend, o.output_type).write(o.output_path));
  p.phase = TrainProgress::Phase::Done;
  if (progress) progress(p);
  return Status::ok();
}

}  // namespace tessera
