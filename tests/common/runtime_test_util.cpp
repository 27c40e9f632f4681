#include "common/runtime_test_util.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <map>

#include "common/test_util.h"

namespace tessera::test {

double nmse(std::span<const float> a, std::span<const float> ref) {
  EXPECT_EQ(a.size(), ref.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size() && i < a.size(); ++i) {
    num += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return den > 0 ? num / den : num;
}

const Model* shared_model(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Model>> loaded;
  auto it = loaded.find(name);
  if (it != loaded.end()) return it->second.get();
  const std::string path = shared_file("models/" + name);
  std::unique_ptr<Model> m;
  if (!path.empty()) {
    Result<std::unique_ptr<Model>> r = Model::load(path);
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    if (r) m = std::move(*r);
  }
  return (loaded[name] = std::move(m)).get();
}

std::unique_ptr<Context> make_context(const Model& m, int64_t n_ctx, int n_seq, DType kv, bool embeddings,
                                      int threads) {
  ContextParams cp;
  cp.n_ctx = n_ctx;
  cp.n_seq_max = n_seq;
  cp.type_k = kv;
  cp.type_v = kv;
  cp.embeddings = embeddings;
  cp.n_threads = threads;
  Result<std::unique_ptr<Context>> c = Context::create(m, cp);
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  return c ? std::move(*c) : nullptr;
}

std::vector<std::vector<float>> decode_alone(const Model& m, std::span<const TokenId> tokens, DType kv,
                                             Pos pos0) {
  std::unique_ptr<Context> c = make_context(m, int64_t(tokens.size()) + 64, 1, kv);
  std::vector<std::vector<float>> out;
  if (!c) return out;
  Batch b;
  b.add_sequence(tokens, pos0, 0, /*all_outputs=*/true);
  const Status s = c->decode(b);
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s) return out;
  for (int64_t i = 0; i < b.size(); ++i) {
    const std::span<const float> l = c->logits_at(i);
    out.emplace_back(l.begin(), l.end());
  }
  return out;
}

std::vector<TokenId> some_tokens(size_t n, int seed, int64_t n_vocab) {
  std::vector<TokenId> t(n);
  uint32_t x = 2463534242u + uint32_t(seed) * 977u;
  for (TokenId& v : t) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v = TokenId(1 + x % uint32_t(n_vocab - 1));
  }
  return t;
}

}  // namespace tessera::test
