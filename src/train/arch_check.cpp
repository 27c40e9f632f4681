#include "train/arch_check.h"

#include "core/ops.h"
#include "train/backward.h"

namespace tessera::train {

Status check_differentiable(const TrainModel& m, const std::string& command) {
  constexpr int64_t kTokens = 2;
  Graph g;
  BatchInputs in;
  in.n_tokens = kTokens;
  in.n_outputs = kTokens;
  in.groups.push_back({kTokens, 0, kTokens});
  in.kv.assign(size_t(m.h.n_layer), KvLayer{});  // attending over the batch, as training does
  in.swa_mask = m.h.mixed_swa();
  create_batch_inputs(g, in);
  Tensor* targets = g.arena().new_tensor(DType::I32, {kTokens, 1, 1, 1}, "train_targets");
  targets->flags |= kFlagInput;
  Tensor* loss = ops::cross_entropy(g, m.arch->build(g, m.h, m.w, in), targets);
  const Tensor* missing = first_without_gradient(g, loss, m.params);
  if (missing == nullptr) return Status::ok();
  return Status::error(command + ": architecture '" + std::string(m.arch->name) + "' uses op " +
                       std::string(op_name(missing->op)) + ", which has no gradient rule yet");
}

}  // namespace tessera::train
