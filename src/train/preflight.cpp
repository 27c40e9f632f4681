#include "train/preflight.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "tessera/train.h"
#include "tokenizer/train_vocab.h"
#include "train/checkpoint.h"
#include "train/lora_model.h"
#include "train/trainer.h"

namespace tessera {
namespace train {

Status check_writable(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  if (path.empty()) return Status::error(flag + " is empty");
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status::error(flag + " '" + path + "': the directory '" + dir.string() +
                         "' does not exist");
  }
  if (fs::is_directory(p, ec)) return Status::error(flag + " '" + path + "' is a directory");
  const std::string probe = path + ".tmp";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::error(flag + " '" + path + "' cannot be written: " + std::strerror(errno));
  ::close(fd);
  std::remove(probe.c_str());
  return Status::ok();
}

uint64_t text_hash(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : text) {
    h ^= uint8_t(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

Status write_atomically(const gguf::Writer& w, const std::string& path) {
  const std::string tmp = path + ".tmp";
  TESSERA_RETURN_IF_ERROR(w.write(tmp));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return Status::error(path + ": cannot replace it: " + std::strerror(err));
  }
  return Status::ok();
}

namespace {

Status check_run(int64_t steps, int64_t batch, int64_t accum, float lr, double val_fraction,
                 const char* tool) {
  const std::string t = tool;
  if (steps <= 0) return Status::error(t + ": --steps must be positive");
  if (batch <= 0) return Status::error(t + ": --batch must be positive");
  if (accum <= 0) return Status::error(t + ": --accum must be positive");
  if (!(lr > 0)) return Status::error(t + ": --lr must be positive");
  if (!(val_fraction >= 0 && val_fraction < 0.5))
    return Status::error(t + ": --val-fraction must be in [0, 0.5)");
  return Status::ok();
}

Status check_shape(const TrainOptions& o) {
  if (o.vocab_size < kMinTrainedVocab || o.vocab_size > kMaxTrainedVocab) {
    return Status::error("train: --vocab-size " + std::to_string(o.vocab_size) +
                         " is out of range: vocab_size must be " +
                         std::to_string(kMinTrainedVocab) + " to " +
                         std::to_string(kMaxTrainedVocab));
  }
  if (o.n_embd <= 0 || o.n_layer <= 0 || o.n_head <= 0 || o.n_head_kv < 0 || o.n_ff <= 0) {
    return Status::error(
        "train: --n-embd, --n-layer, --n-head, --n-head-kv and --n-ff must be positive");
  }
  const int64_t kv = o.n_head_kv > 0 ? o.n_head_kv : o.n_head;
  if (o.n_embd % o.n_head != 0 || (o.n_embd / o.n_head) % 2 != 0) {
    return Status::error(
        "train: n_embd must be a multiple of n_head with an even head size (--n-embd " +
        std::to_string(o.n_embd) + ", --n-head " + std::to_string(o.n_head) + ")");
  }
  if (o.n_head % kv != 0) {
    return Status::error("train: n_head must be a multiple of n_head_kv (--n-head " +
                         std::to_string(o.n_head) + ", --n-head-kv " + std::to_string(kv) + ")");
  }
  return Status::ok();
}

// A checkpoint to resume from: one of ours, trained on this text (unless force).
Status check_resume(const TrainOptions& o) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open(o.resume_path);
  if (!f) return f.status().with_context("train: --resume");
  RunExtras extras;
  Result<RunConfig> rc = read_run_config(**f, &extras);
  if (!rc) return rc.status();
  if (extras.text_hash == 0 || o.force) return Status::ok();
  Result<std::string> text = read_training_text(o.text_path);
  if (!text) return text.status();
  if (text_hash(*text) == extras.text_hash) return Status::ok();
  return Status::error("train: --resume " + o.resume_path + " was trained on '" + extras.text_path +
                       "', but -f '" + o.text_path +
                       "' is another text (pass --force to continue on it)");
}

}  // namespace
}  // namespace train

Status check_train_options(const TrainOptions& o) {
  TESSERA_RETURN_IF_ERROR(
      train::check_run(o.steps, o.batch, o.accum, o.lr, o.val_fraction, "train"));
  if (o.n_ctx < 2) return Status::error("train: --ctx-size must be at least 2");
  if (o.checkpoint_every < 0) return Status::error("train: --checkpoint-every must be 0 or more");
  if (!(o.checkpoint_minutes >= 0))
    return Status::error("train: --checkpoint-minutes must be 0 or more");
  if (o.stop_at < 0) return Status::error("train: --stop-at must be 0 or more");
  if (o.eval_every < 0 || o.eval_windows < 0)
    return Status::error("train: --eval-every and --eval-windows must be 0 or more");
  if (o.output_type != DType::F32 && o.output_type != DType::F16 && o.output_type != DType::BF16) {
    return Status::error(
        "train: the output type must be f32, f16 or bf16 (quantize the written model instead)");
  }
  if (o.resume_path.empty()) TESSERA_RETURN_IF_ERROR(train::check_shape(o));
  TESSERA_RETURN_IF_ERROR(train::check_writable(o.output_path, "-o"));
  TESSERA_RETURN_IF_ERROR(train::check_writable(
      o.checkpoint_path.empty() ? o.output_path + ".ckpt" : o.checkpoint_path, "--checkpoint"));
  if (!o.log_path.empty()) TESSERA_RETURN_IF_ERROR(train::check_writable(o.log_path, "--log"));
  if (!o.resume_path.empty()) TESSERA_RETURN_IF_ERROR(train::check_resume(o));
  return Status::ok();
}

Status check_finetune_options(const FinetuneOptions& o) {
  TESSERA_RETURN_IF_ERROR(
      train::check_run(o.steps, o.batch, o.accum, o.lr, o.val_fraction, "finetune"));
  if (o.n_ctx < 0 || o.n_ctx == 1) return Status::error("finetune: --ctx-size must be at least 2");
  if (o.lora_r <= 0) return Status::error("finetune: --lora-r must be positive");
  if (!(o.lora_alpha > 0)) return Status::error("finetune: --lora-alpha must be positive");
  if (o.eval_every < 0 || o.eval_windows < 0) {
    return Status::error("finetune: --eval-every and --eval-windows must be 0 or more");
  }
  Result<std::vector<std::string>> targets = train::parse_lora_targets(o.targets);
  if (!targets) return targets.status();
  TESSERA_RETURN_IF_ERROR(train::check_writable(o.output_path, "-o"));
  if (!o.log_path.empty()) TESSERA_RETURN_IF_ERROR(train::check_writable(o.log_path, "--log"));
  return Status::ok();
}

}  // namespace tessera
