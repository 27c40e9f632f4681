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

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Matrices placed back to back with no padding between them (the _X16 kernels load
// unaligned, so only a run's start needs the alignment).
using Run = std::vector<Tensor*>;

// Whether the matrices that read the same input (q/k/v, gate/up) can be laid out as one
// matrix: all repackable, one type, one row length.
bool one_matrix(const Run& parts) {
  for (const Tensor* t : parts) {
    if (t == nullptr || !cpu::can_repack(t)) return false;
    if (t->type != parts[0]->type || t->ne[0] != parts[0]->ne[0]) return false;
  }
  return true;
}

// Adds `parts` as one run when they can form one matrix (fuse_weights.h then joins them),
// else each repackable one as its own run.
void add_runs(std::vector<Run>& runs, const Run& parts) {
  if (parts.size() > 1 && one_matrix(parts)) {
    runs.push_back(parts);
    return;
  }
  for (Tensor* t : parts) {
    if (t != nullptr && cpu::can_repack(t)) runs.push_back({t});
  }
}

std::vector<Run> plan_runs(const ModelWeights& w, const std::vector<bool>& here, bool output_here) {
  std::vector<Run> runs;
  for (size_t il = 0; il < w.layers.size(); ++il) {
    if (!here.empty() && !here[il]) continue;
    const LayerWeights& l = w.layers[il];
    add_runs(runs, {l.wq, l.wk, l.wv});
    add_runs(runs, {l.wqkv});  // a file's own fused matrix (null otherwise, before fusing)
    add_runs(runs, {l.wq_a});  // MLA's projections (null otherwise)
    add_runs(runs, {l.wq_b});
    add_runs(runs, {l.wkv_a_mqa});
    add_runs(runs, {l.wkv_b});
    add_runs(runs, {l.wo});
    add_runs(runs, {l.ffn_gate, l.ffn_up});
    add_runs(runs, {l.ffn_gate_up});
    add_runs(runs, {l.ffn_down});
    add_runs(runs, {l.ffn_gate_exps});  // experts: each a run (mul_mat_id reads them apart)
    add_runs(runs, {l.ffn_up_exps});
    add_runs(runs, {l.ffn_down_exps});
    add_runs(runs, {l.ffn_gate_shexp});
    add_runs(runs, {l.ffn_up_shexp});
    add_runs(runs, {l.ffn_down_shexp});
  }
  if (output_here) add_runs(runs, {w.output});  // null when tied to token_embd, which stays in the file layout
  return runs;
}

size_t run_bytes(const Run& run) {
  size_t n = 0;
  for (const Tensor* t : run) n += t->nbytes();
  return round_up(n);
}

bool repack_enabled() {
  const char* env = std::getenv("TESSERA_REPACK");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  return cpu::fast_gemm_available();
}

}  // namespace

Result<RepackedWeights> repack_weights(ModelWeights& w, const gguf::File& file, const std::vector<bool>& here,
                                       bool output_here) {
  RepackedWeights out;
  if (!repack_enabled()) return out;
  const std::vector<Run> runs = plan_runs(w, here, output_here);
  if (runs.empty()) return out;
  for (const Run& run : runs) out.bytes += run_bytes(run);
  const size_t reserved = (out.bytes + kHugePage - 1) / kHugePage * kHugePage;
  out.data.reset(std::aligned_alloc(kHugePage, reserved));
  if (!out.data) {
    return Status::error("model: out of memory repacking weights (" +
                         std::to_string(out.bytes >> 20) + " MiB)");
  }
  ::madvise(out.data.get(), reserved, MADV_HUGEPAGE);  // a hint: failure only costs speed
  auto* base = static_cast<uint8_t*>(out.data.get());
  size_t at = 0;
  for (const Run& run : runs) {
    uint8_t* dst = base + at;
    for (Tensor* t : run) {
      const auto* src = static_cast<const uint8_t*>(t->data);
      cpu::repack_rows(t->type, src, dst, t->ne[1] * t->ne[2], t->ne[0]);  // experts: every plane's rows
      file.release_tensor_pages(src, t->nbytes());
      t->type = cpu::repacked_type(t->type);
      t->data = dst;
      dst += t->nbytes();
      ++out.tensors;
    }
    at += run_bytes(run);
  }
  log(LogLevel::Info, "repacked %d weight tensors (%zu MiB) for the CPU's GEMM kernels",
      out.tensors, out.bytes >> 20);
  return out;
}

}  // namespace tessera
