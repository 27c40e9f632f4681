// A reference model of ../shared/archs/models loaded as finetune loads a base (weights in
// the file's layout, not repacked), with a rank-2 LoRA on every projection it has: what
// the per-architecture training tests start from.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tessera/model.h"
#include "train/lora_model.h"

namespace tessera::train {

struct ArchLora {
  std::unique_ptr<Model> base;
  std::unique_ptr<TrainModel> lora;
};

/// Fills `out` from the model file at `path`; fails the test when either step fails
/// (call it in ASSERT_NO_FATAL_FAILURE).
inline void load_arch_lora(const std::string& path, Backend& backend, ArchLora& out) {
  ModelParams mp;
  mp.repack = false;
  Result<std::unique_ptr<Model>> base = Model::load(path, mp);
  ASSERT_TRUE(base.is_ok()) << base.status().message();
  Result<std::unique_ptr<TrainModel>> lora = create_lora(**base, {2, 4.0f, {"all"}}, 5, backend);
  ASSERT_TRUE(lora.is_ok()) << lora.status().message();
  out.base = std::move(*base);
  out.lora = std::move(*lora);
}

}  // namespace tessera::train
