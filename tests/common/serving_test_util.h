// What the serving Engine's tests share: an engine on one thread, a greedy request.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tessera/serving.h"
#include "tessera/tokenizer.h"

namespace tessera::test {

inline std::unique_ptr<serving::Engine> make_engine(const Model& m, serving::EngineParams p) {
  p.n_threads = 1;
  Result<std::unique_ptr<serving::Engine>> e = serving::Engine::create(m, p);
  EXPECT_TRUE(e.is_ok()) << e.status().message();
  return e ? std::move(*e) : nullptr;
}

inline serving::GenerationRequest greedy(const Tokenizer& tok, const std::string& prompt, int32_t max_tokens) {
  serving::GenerationRequest r;
  r.prompt = tok.encode(prompt, true);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  return r;
}

}  // namespace tessera::test
