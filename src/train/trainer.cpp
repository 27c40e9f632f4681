#include "train/trainer.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/check.h"

namespace tessera::train {

TokenSplit split_tokens(const std::vector<int32_t>& tokens, double val_fraction, int64_t n_ctx) {
  const int64_t n = int64_t(tokens.size());
  int64_t n_val = int64_t(double(n) * val_fraction);
  if (val_fraction > 0 && n_val < n_ctx && n >= 3 * n_ctx) n_val = n_ctx;
  n_val = std::clamp<int64_t>(n_val, 0, n / 2);
  TokenSplit s;
  s.train.assign(tokens.begin(), tokens.end() - n_val);
  s.val.assign(tokens.end() - n_val, tokens.end());
  return s;
}

Result<std::string> read_training_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open the training text");
  std::ostringstream s;
  s << in.rdbuf();
  if (s.str().empty()) return Status::error(path + ": the training text is empty");
  return s.str();
}

Trainer::Trainer(TrainModel& m, const RunConfig& c, Backend& backend, TokenSplit data, int32_t bos)
    : m_(m), c_(c), backend_(backend), data_(std::move(data)), bos_(bos), rng_(c.seed) {}

Status Trainer::init() {
  if (int64_t(data_.train.size()) < c_.n_ctx) {
    return Status::error("train: the text has " + std::to_string(data_.train.size()) +
                         " training tokens, fewer than one window of " + std::to_string(c_.n_ctx));
  }
  Result<std::unique_ptr<TrainGraph>> tg = build_train_graph(m_, c_.batch, c_.n_ctx, true, backend_);
  if (!tg) return tg.status();
  train_ = std::move(*tg);
  if (int64_t(data_.val.size()) >= c_.n_ctx && c_.eval_windows > 0) {
    const int64_t windows = std::min<int64_t>(c_.eval_windows, int64_t(data_.val.size()) / c_.n_ctx);
    Result<std::unique_ptr<TrainGraph>> eg =
        build_train_graph(m_, std::min(c_.batch, windows), c_.n_ctx, false, backend_);
    if (!eg) return eg.status();
    eval_ = std::move(*eg);
  }
  for (Tensor* p : m_.params) {
    params_.push_back(read_param(backend_, p));
    grads_.emplace_back(size_t(p->nelements()), 0.0f);
    decays_.push_back(TrainModel::decays(p));
  }
  if (opt_.empty()) opt_.resize(m_.params.size());
  return Status::ok();
}

namespace {

// The window of t tokens at src: BOS, then src[0 .. t-2]; position i predicts src[i].
void fill_window(const int32_t* src, int64_t t, int32_t bos, int32_t* tokens, int32_t* targets) {
  tokens[0] = bos;
  for (int64_t i = 1; i < t; ++i) tokens[i] = src[i - 1];
  for (int64_t i = 0; i < t; ++i) targets[i] = src[i];
}

// The loss of one compute of tg.
Result<double> compute_loss(TrainGraph& tg, Backend& backend) {
  TESSERA_RETURN_IF_ERROR(backend.compute(tg.graph));
  float l = 0;
  backend.get_tensor(tg.loss, &l, 0, sizeof(float));
  return double(l);
}

}  // namespace

void Trainer::sample_window(int32_t* tokens, int32_t* targets) {
  const uint64_t room = uint64_t(int64_t(data_.train.size()) - c_.n_ctx + 1);
  fill_window(data_.train.data() + rng_.below(room), c_.n_ctx, bos_, tokens, targets);
}

void Trainer::add_gradients(bool first) {
  for (size_t i = 0; i < m_.params.size(); ++i) {
    const Tensor* g = train_->grads.grads[i];
    std::vector<float>& acc = grads_[i];
    if (g == nullptr) {  // the loss does not depend on it (e.g. an unused token row is a
      if (first) std::fill(acc.begin(), acc.end(), 0.0f);  // zero row, not a null gradient)
      continue;
    }
    if (first) {
      backend_.get_tensor(g, acc.data(), 0, acc.size() * sizeof(float));
      continue;
    }
    std::vector<float> part(acc.size());
    backend_.get_tensor(g, part.data(), 0, part.size() * sizeof(float));
    for (size_t j = 0; j < acc.size(); ++j) acc[j] += part[j];
  }
}

Result<Trainer::StepResult> Trainer::run_step() {
  const int64_t n = train_->n_tokens();
  std::vector<int32_t> tokens(static_cast<size_t>(n)), targets(static_cast<size_t>(n));
  double loss = 0;
  for (int64_t micro = 0; micro < c_.accum; ++micro) {
    for (int64_t b = 0; b < c_.batch; ++b) sample_window(&tokens[size_t(b * c_.n_ctx)], &targets[size_t(b * c_.n_ctx)]);
    set_micro_batch(*train_, backend_, tokens.data(), targets.data(), 1.0f / float(c_.accum));
    Result<double> l = compute_loss(*train_, backend_);
    if (!l) return l.status();
    loss += *l / double(c_.accum);
    add_gradients(micro == 0);
  }
  StepResult r;
  r.loss = loss;
  r.lr = learning_rate(c_.adam, step_);
  r.grad_norm = adamw_step(c_.adam, step_, params_, grads_, decays_, opt_);
  for (size_t i = 0; i < m_.params.size(); ++i) write_param(backend_, m_.params[i], params_[i]);
  ++step_;
  return r;
}

Result<double> Trainer::evaluate() {
  if (!eval_) return -1.0;
  const int64_t t = c_.n_ctx;
  const int64_t windows = std::min<int64_t>(c_.eval_windows, int64_t(data_.val.size()) / t);
  const int64_t batches = windows / eval_->batch;
  std::vector<int32_t> tokens(static_cast<size_t>(eval_->n_tokens())), targets(tokens.size());
  double sum = 0;
  for (int64_t k = 0; k < batches; ++k) {
    for (int64_t b = 0; b < eval_->batch; ++b) {
      fill_window(data_.val.data() + (k * eval_->batch + b) * t, t, bos_, &tokens[size_t(b * t)],
                  &targets[size_t(b * t)]);
    }
    set_micro_batch(*eval_, backend_, tokens.data(), targets.data());
    Result<double> l = compute_loss(*eval_, backend_);
    if (!l) return l.status();
    sum += *l;
  }
  return batches > 0 ? sum / double(batches) : -1.0;
}

}  // namespace tessera::train
