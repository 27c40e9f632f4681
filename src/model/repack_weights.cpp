#include "model/repack_weights.h"

#include <sys/mman.h>

#include <cstring>
#include <vector>

#include "backend/cpu/gemm_kernels.h"
#include "backend/cpu/repack.h"
#include "tessera/log.h"

namespace tessera {
namespace {

constexpr size_t kAlign = 64;
// The repacked weights are streamed once per token: 2 MiB pages keep the TLB out of the
// way and let the prefetchers run across what would be 4 KiB page boundaries
// (see docs/performance.md).
constexpr size_t kHugePage = size_t(2) << 20;

std::vector<Tensor*> candidates(const ModelWeights& w) {
  std::vector<Tensor*> out;
  auto add = [&](Tensor* t) {
    if (t != nullptr && cpu::can_repack(t)) out.push_back(t);
  };
  for (const LayerWeights& l : w.layers) {
    for (Tensor* t : {l.wq, l.wk, l.wv, l.wo, l.ffn_gate, l.ffn_up, l.ffn_down}) add(t);
  }
  add(w.output);  // null when tied to token_embd, which stays in the file layout
  return out;
}

bool repack_enabled() {
  const char* env = std::getenv("TESSERA_REPACK");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  return cpu::fast_gemm_available();
}

}  // namespace

Result<RepackedWeights> repack_weights(ModelWeights& w, const gguf::File& file) {
  RepackedWeights out;
  if (!repack_enabled()) return out;
  const std::vector<Tensor*> matrices = candidates(w);
  if (matrices.empty()) return out;
  for (const Tensor* t : matrices) out.bytes += (t->nbytes() + kAlign - 1) / kAlign * kAlign;
  const size_t reserved = (out.bytes + kHugePage - 1) / kHugePage * kHugePage;
  out.data.reset(std::aligned_alloc(kHugePage, reserved));
  if (!out.data) {
    return Status::error("model: out of memory repacking weights (" +
                         std::to_string(out.bytes >> 20) + " MiB)");
  }
  ::madvise(out.data.get(), reserved, MADV_HUGEPAGE);  // a hint: failure only costs speed
  auto* dst = static_cast<uint8_t*>(out.data.get());
  for (Tensor* t : matrices) {
    const auto* src = static_cast<const uint8_t*>(t->data);
    cpu::repack_rows(t->type, src, dst, t->ne[1], t->ne[0]);
    file.release_pages(size_t(src - file.file_data()), t->nbytes());
    t->type = cpu::repacked_type(t->type);
    t->data = dst;
    dst += (t->nbytes() + kAlign - 1) / kAlign * kAlign;
    ++out.tensors;
  }
  log(LogLevel::Info, "repacked %d weight tensors (%zu MiB) for the CPU's GEMM kernels",
      out.tensors, out.bytes >> 20);
  return out;
}

}  // namespace tessera
