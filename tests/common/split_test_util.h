// Helpers of the scheduler's tests (golden/scheduler_split_test.cpp, archs/): a model
// loaded with a layer placement, a run that exercises batches and KV sequence operations
// and keeps every logit it saw, and the plan the scheduler makes of a forward graph.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/model.h"

namespace tessera::test {

/// `path` loaded with ModelParams::layers = `layers` (empty: one backend); fails the test
/// on error.
std::unique_ptr<Model> load_placed(const std::string& path, const std::string& layers);

/// "0-(k-1):a,k-(n-1):b": layers before k on backend a, the rest on b.
std::string split_at(int64_t k, int64_t n_layer);

/// Two sequences decoded in one batch (all logits kept), a shared prefix (seq_cp), a
/// removal (seq_rm), a shift (seq_add, when the model's positions can move), a copy into
/// a third sequence's own cells (seq_copy), and greedy steps of all three in one batch:
/// every logit row computed, in order. Each CPU backend of the context gets one thread.
std::vector<std::vector<float>> split_scenario(const Model& m, bool movable);

/// The scheduler's plan of a forward graph of `n_tokens` tokens (one sequence, every
/// token an output) for `m` as placed.
struct PlanStats {
  int64_t n_splits = 0;
  int64_t n_copies = 0;
  size_t bytes_copied = 0;
  std::vector<std::string> copied;  // each copied tensor: "op [ne0, ne1]"
  std::vector<int> split_backends;  // backend of each split
};
PlanStats plan_stats(const Model& m, int64_t n_tokens);

}  // namespace tessera::test
