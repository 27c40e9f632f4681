// The internal state of a loaded model, shared with the runtime.
#pragma once

#include <memory>
#include <vector>

#include "model/arch.h"
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
};

}  // namespace tessera::detail
