// tessera::train_model: the text, the tokenizer, the model (new or from a checkpoint),
// the loop with its progress, validations, log and checkpoints, and the output file.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "backend/registry.h"
#include "tessera/train.h"
#include "tokenizer/train_vocab.h"
#include "train/checkpoint.h"
#include "train/preflight.h"
#include "train/run_loop.h"

namespace tessera {
namespace {

using train::RunConfig;
using train::RunExtras;
using train::TrainModel;
using train::Trainer;



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
  TESSERA_RETURN_IF_ERROR(check_train_options(o));
  Result<std::string> text = train::read_training_text(o.text_path);
  if (!text) return text.status();
  backends::Options cpu_options;
  cpu_options.n_threads = o.n_threads;
  Result<std::unique_ptr<Backend>> cpu = backends::create("CPU", cpu_options);
  if (!cpu) return cpu.status();
  Backend& backend = **cpu;
  std::unique_ptr<gguf::File> ckpt;
  std::unique_ptr<TrainModel> m;
  RunConfig c = train::run_config(o, o.n_ctx);
  RunExtras extras{o.eval_every, o.val_fraction, train::text_hash(*text), o.text_path};
  if (!o.resume_path.empty()) {
    Result<std::unique_ptr<gguf::File>> f = gguf::File::open(o.resume_path);
    if (!f) return f.status();
    ckpt = std::move(*f);
    RunExtras kept;
    Result<RunConfig> rc = train::read_run_config(*ckpt, &kept);
    if (!rc) return rc.status();
    extras.eval_every = kept.eval_every;
    extras.val_fraction = kept.val_fraction;
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
  lo.checkpoint_minutes = o.checkpoint_minutes;
  lo.stop_at = o.stop_at;
  lo.stop = o.stop;
  lo.extras = extras;
  const int64_t first = t.step();
  Result<bool> stopped = train::run_loop(t, lo, backend, p, progress);
  if (!stopped) return stopped.status();
  if (*stopped) {
    p.phase = TrainProgress::Phase::Interrupted;
    p.step = t.step();
    p.message = t.step() > first ? lo.checkpoint_path : o.resume_path;
    if (progress) progress(p);
    return Status::ok();
  }
  TESSERA_RETURN_IF_ERROR(train::write_atomically(train::model_writer(*m, backend, o.output_type), o.output_path));
  p.phase = TrainProgress::Phase::Done;
  if (progress) progress(p);
  return Status::ok();
}

}  // namespace tessera
