// The model of every tool that runs one: the -m file, or without -m the default model
// built into tessera (Model::load_default, models/README.md).
#include <filesystem>

#include "commands.h"

namespace tessera::cli {

Result<std::unique_ptr<Model>> load_model_or_default(const std::string& path, const ModelParams& params,
                                                     bool mmap) {
  if (path.empty()) return Model::load_default(params);
  ModelParams p = params;
  p.mmap = mmap;
  return Model::load(path, p);
}

std::string model_option_help() {
  const std::string name = Model::default_model_name();
  return name.empty() ? "GGUF model file (required: this build has no default model)"
                      : "GGUF model file (default: the built-in " + name + ", see models/README.md)";
}

std::string model_file_name(const std::string& path) {
  return path.empty() ? Model::default_model_name() : std::filesystem::path(path).filename().string();
}

}  // namespace tessera::cli
