// Repacks a loaded model's matrix weights into the CPU's interleaved layouts
// (backend/cpu/repack.h) when the CPU has kernels for them, so that prompt processing
// runs register-tiled int8 GEMMs and generation streams the weights once.
#pragma once

#include <cstdlib>
#include <memory>
#include <vector>

#include "model/weights.h"
#include "tessera/gguf.h"

namespace tessera {

/// Memory holding repacked weights (64-byte aligned).
struct RepackedWeights {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data;
  size_t bytes = 0;
  int tensors = 0;
};

/// Repacks every weight that can be (Q4_0, Q8_0, Q4_K, Q6_K, F16 matrices with rows in
/// groups of 16), except the token embedding, which get_rows reads row by row. The
/// tensors then point into the returned memory, and their pages in the file mapping are
/// released (the RSS stays about one copy of the weights). A layer's wq, wk, wv, and its
/// ffn_gate, ffn_up, when each set has one type and one row length, are placed back to
/// back with no padding, so that each set is one matrix (fuse_weights.h). Does nothing
/// when the active CPU level has no fast kernels for these layouts or TESSERA_REPACK=0
/// is set.
/// `here`: only the layers it marks (and the output when `output_here`) are repacked, the
/// others being another process's (MPI) and never read here; empty: all.
Result<RepackedWeights> repack_weights(ModelWeights& w, const gguf::File& file,
                                       const std::vector<bool>& here = {}, bool output_here = true);

}  // namespace tessera
