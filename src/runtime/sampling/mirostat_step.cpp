// MirostatStep: the stateful wrapper around mirostat_v1_k / mirostat_v2_truncate.
#include "runtime/sampling/mirostat_step.h"

#include "core/check.h"

namespace tessera::sampling {

MirostatStep::MirostatStep(int version, float tau, float eta, int32_t m)
    : version_(version), tau_(tau), eta_(eta), m_(m), mu_(2.0f * tau) {
  TESSERA_CHECK(version == 1 || version == 2);
}

std::string MirostatStep::name() const { return version_ == 1 ? "mirostat-v1" : "mirostat-v2"; }

void MirostatStep::apply(Candidates& c) {
  if (version_ == 1) {
    softmax(c);
    const int32_t n_vocab = c.n_vocab > 0 ? c.n_vocab : static_cast<int32_t>(c.items.size());
    top_k(c, mirostat_v1_k(c, mu_, m_, n_vocab), 1);
    softmax(c);
  } else {
    mirostat_v2_truncate(c, mu_);
  }
  last_ = c.items;
}

Status MirostatStep::accept(TokenId token, bool from_prompt) {
  if (from_prompt) return Status::ok();
  for (const Candidate& t : last_) {
    if (t.id == token && t.p > 0.0f) {
      mu_ = mirostat_update(mu_, tau_, eta_, t.p);
      break;
    }
  }
  // A token the truncation did not offer (forced by the caller) leaves mu as it is.
  last_.clear();
  return Status::ok();
}

void MirostatStep::reset() {
  mu_ = 2.0f * tau_;
  last_.clear();
}

}  // namespace tessera::sampling
