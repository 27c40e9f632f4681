// `tessera inspect`: the metadata and the tensor table of a GGUF file.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "tessera/gguf.h"

namespace tessera::cli {
namespace {

std::string shape_of(const gguf::TensorInfo& t) {
  std::string s = "[";
  for (int i = 0; i < t.n_dims; ++i) s += (i ? ", " : "") + std::to_string(t.ne[i]);
  return s + "]";
}

int run_inspect(const std::string& path, bool all_items) {
  Result<std::unique_ptr<gguf::File>> file = gguf::File::open(path);
  if (!file) return fail(file.status().message());
  const gguf::File& f = **file;
  std::printf("%s: GGUF v%u, %zu metadata keys, %zu tensors, alignment %zu, data at %llu\n",
              path.c_str(), f.version(), f.metadata().size(), f.tensors().size(), f.alignment(),
              static_cast<unsigned long long>(f.data_offset()));
  std::printf("\nmetadata:\n");
  for (const auto& [key, value] : f.metadata()) {
    std::printf("  %-44s %-8s %s\n", key.c_str(), std::string(gguf::value_type_name(value.type())).c_str(),
                value.to_string(all_items ? SIZE_MAX : 8).c_str());
  }
  std::printf("\ntensors:\n  %-36s %-8s %-22s %14s %14s\n", "name", "type", "shape", "offset", "bytes");
  uint64_t total_bytes = 0;
  uint64_t total_elements = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    std::printf("  %-36s %-8s %-22s %14llu %14llu\n", t.name.c_str(),
                std::string(dtype_name(t.type)).c_str(), shape_of(t).c_str(),
                static_cast<unsigned long long>(t.offset), static_cast<unsigned long long>(t.nbytes));
    total_bytes += t.nbytes;
    total_elements += uint64_t(t.n_elements());
  }
  std::printf("\n%llu parameters, %.2f MiB of tensor data, %.2f bits per weight\n",
              static_cast<unsigned long long>(total_elements), double(total_bytes) / (1024.0 * 1024.0),
              total_elements ? 8.0 * double(total_bytes) / double(total_elements) : 0.0);
  return 0;
}

}  // namespace

Command add_inspect(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("inspect", "Print the metadata and tensor table of a GGUF file");
  cmd->add_option("file", *path, "GGUF file")->required()->check(CLI::ExistingFile);
  cmd->add_flag("--all", *all, "print every element of array values");
  return {cmd, [path, all] { return run_inspect(*path, *all); }};
}

}  // namespace tessera::cli
