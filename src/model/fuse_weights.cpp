#include "model/fuse_weights.h"

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include "tessera/log.h"

namespace tessera {
namespace {

bool fuse_enabled() {
  const char* env = std::getenv("TESSERA_FUSE");
  return env == nullptr || std::strcmp(env, "0") != 0;
}

// Whether `t` can follow `prev` in one fused matrix: both 2-D dense matrices in an
// interleaved (_X16) layout of one type and row length, t's bytes right after prev's.
bool continues(const Tensor* prev, const Tensor* t) {
  if (t == nullptr || t->data == nullptr || t->type != prev->type || t->ne[0] != prev->ne[0]) {
    return false;
  }
  if (t->ne[2] != 1 || t->ne[3] != 1 || !t->is_contiguous()) return false;
  return static_cast<const char*>(prev->data) + prev->nbytes() == t->data;
}

// One tensor over the rows of `parts` when they lie back to back (see `continues`), or
// null.
Tensor* join(std::initializer_list<Tensor*> parts, TensorArena& arena, const std::string& name) {
  Tensor* first = *parts.begin();
  if (first == nullptr || first->data == nullptr || dtype_traits(first->type).row_group <= 1 ||
      first->ne[2] != 1 || first->ne[3] != 1 || !first->is_contiguous()) {
    return nullptr;
  }
  int64_t rows = 0;
  const Tensor* prev = nullptr;
  for (const Tensor* t : parts) {
    if (prev != nullptr && !continues(prev, t)) return nullptr;
    rows += t->ne[1];
    prev = t;
  }
  Tensor* fused = arena.new_tensor(first->type, {first->ne[0], rows, 1, 1}, name);
  fused->data = first->data;
  fused->flags |= kFlagWeight;
  return fused;
}

}  // namespace

int fuse_projections(ModelWeights& w, TensorArena& arena) {
  if (!fuse_enabled()) return 0;
  int fused = 0;
  for (size_t il = 0; il < w.layers.size(); ++il) {
    LayerWeights& l = w.layers[il];
    const std::string blk = "blk." + std::to_string(il) + ".";
    // (A file's own fused matrices are kept: then there are no parts to join.)
    if (l.wq != nullptr) l.wqkv = join({l.wq, l.wk, l.wv}, arena, blk + "attn_qkv.weight");
    // ffn_block splits the product in halves.
    if (l.ffn_gate != nullptr && l.ffn_up != nullptr && l.ffn_gate->ne[1] == l.ffn_up->ne[1]) {
      l.ffn_gate_up = join({l.ffn_gate, l.ffn_up}, arena, blk + "ffn_gate_up.weight");
    }
    fused += int(l.wq != nullptr && l.wqkv != nullptr) + int(l.ffn_gate != nullptr && l.ffn_gate_up != nullptr);
  }
  if (fused > 0) {
    log(LogLevel::Info, "fused %d projections (q/k/v, gate/up) into one matrix each", fused);
  }
  return fused;
}

}  // namespace tessera
