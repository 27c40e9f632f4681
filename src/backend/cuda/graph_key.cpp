#include "backend/cuda/graph_key.h"

#include <cstring>
#include <type_traits>
#include <variant>

namespace tessera::cuda {
namespace {

void add_bytes(std::vector<uint64_t>& w, const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t x = 0;
    std::memcpy(&x, b + i, n - i < 8 ? n - i : 8);
    w.push_back(x);
  }
}

void add_tensor(std::vector<uint64_t>& w, const Tensor* t) {
  w.push_back(reinterpret_cast<uintptr_t>(t->data));
  w.push_back(uint64_t(t->type));
  for (int64_t n : t->ne) w.push_back(uint64_t(n));
  for (size_t n : t->nb) w.push_back(uint64_t(n));
}

}  // namespace

GraphKey graph_key(const Graph& graph, uint64_t scratch_generation) {
  GraphKey key;
  std::vector<uint64_t>& w = key.words;
  w.push_back(scratch_generation);
  for (const Tensor* n : graph.nodes()) {
    w.push_back(uint64_t(n->op));
    add_tensor(w, n);
    w.push_back(n->params.index());
    std::visit(
        [&](const auto& p) {
          using P = std::decay_t<decltype(p)>;
          if constexpr (!std::is_same_v<P, std::monostate>) add_bytes(w, &p, sizeof p);
        },
        n->params);
    for (const Tensor* s : n->src) {
      if (s == nullptr) {
        w.push_back(0);
      } else {
        add_tensor(w, s);
      }
    }
  }
  return key;
}

}  // namespace tessera::cuda
