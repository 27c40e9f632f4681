// Helpers shared by the runtime suites (golden/runtime_*_test.cpp, archs/): loading the shared
// models, decoding a sequence alone for reference, comparing logits, running the CLI.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/cli_run.h"
#include "tessera/batch.h"
#include "tessera/context.h"
#include "tessera/model.h"

namespace tessera::test {

/// sum((a-b)^2) / sum(b^2).
double nmse(std::span<const float> a, std::span<const float> ref);

/// The model under shared/models, loaded once per process (null when absent).
const Model* shared_model(const std::string& name);

/// A context with n_ctx cells and n_seq sequences; fails the test on error.
std::unique_ptr<Context> make_context(const Model& m, int64_t n_ctx, int n_seq = 1,
                                      DType kv = DType::F16, bool embeddings = false, int threads = 2);

/// Logits of every token of `tokens` decoded alone (positions pos0, pos0+1, ...) in a
/// fresh context, one row per token.
std::vector<std::vector<float>> decode_alone(const Model& m, std::span<const TokenId> tokens,
                                             DType kv = DType::F16, Pos pos0 = 0);

/// A deterministic token list of length n in [1, n_vocab), different for each seed.
std::vector<TokenId> some_tokens(size_t n, int seed, int64_t n_vocab);

/// Runs the `tessera` command with arguments (shell-quoted by the caller).
inline CliOutput run_cli(const std::string& args) { return run_tessera(args); }

}  // namespace tessera::test
