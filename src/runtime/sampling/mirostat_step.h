// The mirostat sampler steps (v1 and v2); declared here so that tests can read mu.
#pragma once

#include <vector>

#include "tessera/sampler.h"

namespace tessera::sampling {

/// Truncates the candidates as mirostat `version` (1 or 2) does for the current mu, and
/// on accept() moves mu towards the target surprise tau using the chosen token's
/// probability in that truncated distribution.
class MirostatStep : public SamplerStep {
 public:
  MirostatStep(int version, float tau, float eta, int32_t m);
  std::string name() const override;
  void apply(Candidates& c) override;
  Status accept(TokenId token, bool from_prompt) override;
  void reset() override;
  /// The current maximum surprise (starts at 2 * tau).
  float mu() const { return mu_; }

 private:
  int version_;
  float tau_, eta_;
  int32_t m_;
  float mu_;
  std::vector<Candidate> last_;  // the truncated, softmaxed candidates of the last apply()
};

}  // namespace tessera::sampling
