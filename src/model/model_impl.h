// The internal state of a loaded model, shared with the runtime.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "model/arch.h"
#include "model/device_weights.h"
#include "model/placement.h"
#include "model/repack_weights.h"
#include "tessera/gguf.h"
#include "tessera/model.h"
#include "tessera/tokenizer.h"

namespace tessera::detail {

struct ModelImpl {
  std::unique_ptr<gguf::File> file;
  std::vector<std::unique_ptr<gguf::File>> adapter_files;  // mapped LoRA adapters (model/lora.h)
  HParams hparams;
  const Arch* arch = nullptr;
  TensorArena arena;  // the weight tensors and the fused projections (fuse_weights.h);
                      // their data points into `file` or `repacked`
  ModelWeights weights;
  RepackedWeights repacked;  // weights moved into the CPU's GEMM layouts (may be empty)
  std::unique_ptr<Tokenizer> tokenizer;
  ModelInfo info;
  Placement placement;                                // which backend holds each layer
  std::unordered_map<const Tensor*, int> weight_backend;  // from place_weights
  std::unique_ptr<DeviceWeights> device_weights;      // the GPU layers' weights (-ngl)
  int mpi_id = -1;  // rank 0 of an MPI job: the id the other ranks know this model by
};

}  // namespace tessera::detail
