// A context: the state of one conversation with a model (its KV cache and position)
// and the machinery that evaluates tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tessera/dtype.h"
#include "tessera/model.h"
#include "tessera/status.h"

namespace tessera {

using TokenId = int32_t;
class ContextImpl;

struct ContextParams {
  int64_t n_ctx = 0;        // cache cells; 0 = the training context, at most 4096
  int64_t n_batch = 512;    // tokens evaluated per forward pass
  int n_threads = 2;        // CPU threads
  DType kv_type = DType::F16;  // F16 (as the reference engine) or F32
  bool all_logits = false;  // keep the logits of every token, not only the last
};

class Context {
 public:
  /// A context for `model`, which must outlive it.
  static Result<std::unique_ptr<Context>> create(const Model& model, const ContextParams& params);
  ~Context();

  /// Evaluates `tokens` at the next positions (n_past(), n_past()+1, ...), in batches of
  /// n_batch. Errors: an id outside the vocabulary, or a full context.
  Status decode(std::span<const TokenId> tokens);

  /// Logits [n_vocab] of the last token decoded.
  std::span<const float> logits() const;
  /// With all_logits: logits of the i-th token of the last decode() call.
  std::span<const float> logits_at(int64_t i) const;

  int64_t n_past() const;
  int64_t n_ctx() const;
  int64_t n_vocab() const;
  /// Forgets everything decoded so far.
  void clear();

 private:
  explicit Context(std::unique_ptr<ContextImpl> impl);
  std::unique_ptr<ContextImpl> impl_;
};

}  // namespace tessera
