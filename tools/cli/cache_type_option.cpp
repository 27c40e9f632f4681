// -ctk/--cache-type-k and -ctv/--cache-type-v, as llama.cpp names them: the KV cache's
// types (ContextParams::type_k / type_v) on every command that makes a context.
#include <algorithm>

#include "commands.h"
#include "tessera/context.h"

namespace tessera::cli {
namespace {

std::string type_names() {
  std::string names;
  for (DType t : kv_cache_types()) names += (names.empty() ? "" : ", ") + std::string(dtype_name(t));
  return names;
}

/// What is wrong with `name` as a cache type; empty when it is one.
std::string problem(const std::string& name) {
  for (DType t : kv_cache_types()) {
    if (dtype_name(t) == name) return {};
  }
  return "'" + name + "' is not a KV cache type (" + type_names() + ")";
}

}  // namespace

Result<DType> cache_type(const std::string& name, const std::string& flag) {
  for (DType t : kv_cache_types()) {
    if (dtype_name(t) == name) return t;
  }
  return Status::error(flag + ": " + problem(name));
}

CLI::Validator cache_type_validator() {
  // CLI11 puts the option's name before the message.
  return CLI::Validator([](std::string& value) { return problem(value); }, "TYPE");
}

void add_cache_type_options(CLI::App* cmd, CacheTypeOptions& o) {
  const std::string types = " (" + type_names() + "; a quantized type needs the model's head size a multiple of 32)";
  cmd->add_option("--cache-type-k", o.k, "-ctk T: KV cache type of the keys" + types)  // -ctk: main.cpp
      ->check(cache_type_validator())
      ->capture_default_str();
  cmd->add_option("--cache-type-v", o.v, "-ctv T: KV cache type of the values" + types)
      ->check(cache_type_validator())
      ->capture_default_str();
}

Status apply_cache_types(const CacheTypeOptions& o, DType& type_k, DType& type_v) {
  Result<DType> k = cache_type(o.k, "-ctk/--cache-type-k");
  if (!k) return k.status();
  Result<DType> v = cache_type(o.v, "-ctv/--cache-type-v");
  if (!v) return v.status();
  type_k = *k;
  type_v = *v;
  return Status::ok();
}

}  // namespace tessera::cli
