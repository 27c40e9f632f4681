// Training a LLaMA from scratch on a text file, on the CPU: a tokenizer learned from the
// text (SentencePiece-style BPE, written into the model like any vocabulary), then the
// model from random initialisation by AdamW over the backward graph of the same forward
// graph that inference runs. The output is an ordinary GGUF model.
//
// Data: the text's tokens, the last `val_fraction` of them held out. A training window
// is BOS followed by n_ctx - 1 tokens from a random offset, each position predicting the
// next token (so the model also learns to start from BOS, as generation does). A step is
// `accum` micro-batches of `batch` windows; validation is the mean loss over up to
// `eval_windows` consecutive windows of the held-out slice.
//
// Checkpoints are GGUF files: the model's keys and F32 weights, AdamW's moments
// (optimizer.m.<name>, optimizer.v.<name>), the step, the random generator's state and
// every option that shapes the run (training.*). Resuming from one repeats exactly what
// the uninterrupted run would have done (the same losses), with the same thread count.
// A checkpoint is written every `checkpoint_every` steps, every `checkpoint_minutes`
// minutes (10 by default), at the last step, and when `*stop` turns true (the CLI sets it
// on SIGINT/SIGTERM): the step in progress finishes, the checkpoint is written and
// train_model returns ok after a Phase::Interrupted progress. Every file is written to a
// temporary name and renamed, so an interruption never leaves a partial one. A checkpoint
// keeps a hash of its text: resuming on another text is refused unless `force`. On resume
// the log's rows after the checkpoint's step are dropped, so it never repeats a step.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "tessera/dtype.h"
#include "tessera/status.h"

namespace tessera {

struct TrainOptions {
  std::string text_path;        // the training text (any bytes; UTF-8 expected)
  std::string output_path;      // the model written at the end
  std::string resume_path;      // a checkpoint to continue from; empty: a new run
  std::string checkpoint_path;  // where checkpoints go; empty: output_path + ".ckpt"
  int64_t checkpoint_every = 0; // steps between checkpoints; 0: only at the end
  double checkpoint_minutes = 10;  // minutes between checkpoints; 0: none by time
  bool force = false;           // resume even when the text is not the checkpoint's
  const std::atomic<bool>* stop = nullptr;  // when it turns true: checkpoint and return
  std::string log_path;         // a CSV of step, loss, val_loss, lr, grad_norm, tokens/s; empty: none

  // The tokenizer and the model (a new run only; a resumed run keeps the checkpoint's).
  int64_t vocab_size = 4096;
  int64_t n_embd = 256;
  int64_t n_layer = 6;
  int64_t n_head = 8;
  int64_t n_head_kv = 0;  // 0: n_head
  int64_t n_ff = 768;
  int64_t n_ctx = 256;    // training window, and the model's context length
  bool tied_output = true;

  // The run (a resumed run keeps the checkpoint's, except `steps` when override_steps).
  int64_t steps = 1000;
  int64_t batch = 8;      // windows per micro-batch
  int64_t accum = 1;      // micro-batches per step (gradient accumulation)
  float lr = 1e-3f;
  float min_lr_ratio = 0.1f;
  int64_t warmup = 100;
  float weight_decay = 0.1f;
  float grad_clip = 1.0f;
  double val_fraction = 0.02;
  int64_t eval_every = 100;   // steps between validations (and the last step); 0: never
  int64_t eval_windows = 32;
  uint64_t seed = 1;
  bool override_steps = false;  // on resume: take `steps` from these options
  int64_t stop_at = 0;  // > 0: stop after this step (the schedule still spans `steps`),
                        // writing the checkpoint and the model: a run in sessions

  int n_threads = 2;
  DType output_type = DType::F32;  // of the written model's matrices: F32, F16 or BF16
};

/// What the progress callback sees.
struct TrainProgress {
  // Tokenizer: learning the vocabulary; Tokenizing: the text; Start: once before the
  // first step (the counts below are set); Training: after each step; Done: written;
  // Interrupted: *stop turned true and the work is saved (message: the checkpoint of
  // train, the adapter of finetune; empty when no step had run).
  enum class Phase { Tokenizer, Tokenizing, Start, Training, Done, Interrupted } phase = Phase::Training;
  int64_t step = 0;            // steps done
  int64_t steps = 0;
  double loss = 0;             // this step's training loss (mean over its micro-batches)
  double val_loss = -1;        // < 0: not measured at this step
  double grad_norm = 0;        // before clipping
  float lr = 0;
  double tokens_per_s = 0;     // training tokens (forward + backward) per second so far
  double eta_s = 0;            // seconds left at that rate
  int64_t n_params = 0;
  int64_t n_train_tokens = 0;  // tokens of the training slice
  int64_t n_val_tokens = 0;
  std::string message;         // what the phase is doing, for Tokenizer/Tokenizing
};

/// Every check that needs no training: the options and the model's shape, that the
/// output, checkpoint and log paths can be written, and on resume that the checkpoint is
/// one and was trained on this text (unless force). train_model runs it first.
Status check_train_options(const TrainOptions& options);

/// Trains (or resumes) and writes output_path (and checkpoints). Errors name the file or
/// option at fault.
Status train_model(const TrainOptions& options, const std::function<void(const TrainProgress&)>& progress);

/// A LoRA adapter trained on a frozen base model (any weight type, quantized included):
/// for each targeted projection W of every layer, a [n_in, r] and b [r, n_out], the update
/// (alpha / r) b (a x); a starts random, b at zero, so step 0 is the base. Windows, steps,
/// AdamW and validation as train_model's. The output is a GGUF LoRA adapter
/// (general.type = adapter, adapter.type = lora, adapter.lora.alpha, tensors
/// <weight>.lora_a / .lora_b) that every tool applies with --lora. No checkpoints: a
/// finetune is short (resuming one is not supported); when `*stop` turns true the step in
/// progress finishes and the adapter trained so far is written (atomically, as always).
struct FinetuneOptions {
  std::string base_path;    // empty: the built-in default model (Model::load_default)
  std::string text_path;
  std::string output_path;  // the adapter
  std::string log_path;     // CSV as train_model's; empty: none
  int64_t lora_r = 8;
  float lora_alpha = 16.0f;
  std::string targets = "all";  // "all" (every projection the model has) or a comma list of
                                // q, k, v, qkv, o, gate, up, down
  int64_t n_ctx = 0;  // window; 0: the base's training context, at most 256
  int64_t steps = 200;
  int64_t batch = 8;
  int64_t accum = 1;
  float lr = 1e-3f;
  float min_lr_ratio = 0.1f;
  int64_t warmup = 20;
  float weight_decay = 0.0f;
  float grad_clip = 1.0f;
  double val_fraction = 0.05;
  int64_t eval_every = 50;
  int64_t eval_windows = 16;
  uint64_t seed = 1;
  int n_threads = 2;
  const std::atomic<bool>* stop = nullptr;  // when it turns true: write the adapter, return
};

/// The checks of finetune_model that need no training: options, targets, writable paths.
Status check_finetune_options(const FinetuneOptions& options);

Status finetune_model(const FinetuneOptions& options, const std::function<void(const TrainProgress&)>& progress);

}  // namespace tessera
