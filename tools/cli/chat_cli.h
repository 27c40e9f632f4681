// The options of a terminal chat, shared by `tessera chat` and `tessera run` without -p
// on a terminal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "commands.h"
#include "tessera/sampler.h"

namespace tessera::cli {

struct ChatOptions {
  std::string model;
  std::vector<std::string> lora;  // --lora FILE[:SCALE]
  PlacementOptions placement;     // --layers, --mpi, --mpi-layers
  CacheTypeOptions cache_types;  // -ctk, -ctv
  RopeScalingParams rope;         // --rope-scaling, --rope-scale, --rope-freq-*, --yarn-*
  std::string system;
  std::string chat_template;
  std::string chat_template_file;  // --chat-template-file: Jinja text instead of the model's
  int n_predict = -1;
  bool n_predict_given = false;  // else a model that never ends its replies gets a default
  int threads = default_threads();
  int64_t ctx = 0;
  SamplerParams sampling;  // chat sets temperature and seed; run passes its whole chain
  bool conversation = false;  // -i / -cnv given: nothing to change, a chat is one
};

/// Runs the chat until /bye, /exit, the end of input or Ctrl-C twice; the exit status.
int run_chat(const ChatOptions& o);

}  // namespace tessera::cli
