// A Hugging Face checkpoint folder's weights: model.safetensors, or the shards that
// model.safetensors.index.json maps each tensor to, all mapped (never read whole). The
// converter takes each tensor once; what nobody took is a tensor left over.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tessera/safetensors.h"
#include "tessera/status.h"

namespace tessera::convert {

class Checkpoint {
 public:
  /// Opens the weights of `dir`. Errors: no weights file, an index naming a shard that is
  /// missing, a shard that is not valid safetensors, a tensor in two shards, an index entry
  /// whose shard lacks it.
  static Result<std::unique_ptr<Checkpoint>> open(const std::filesystem::path& dir);

  /// The tensor `name`, marked as used; null when absent.
  const safetensors::TensorInfo* take(const std::string& name);
  /// Gives back the memory of the mapped pages of `name`, once read
  /// (safetensors::File::drop_pages).
  void release(const std::string& name) const;
  /// Whether the checkpoint has `name` (without taking it).
  bool has(const std::string& name) const { return where_.count(name) != 0; }
  /// Every tensor name, sorted.
  std::vector<std::string> names() const;
  /// The names nobody took, sorted.
  std::vector<std::string> left_over() const;
  /// Names starting with `prefix` are known without it from now on.
  void strip_prefix(const std::string& prefix);
  /// The file holding `name` (for messages).
  std::string file_of(const std::string& name) const;

 private:
  std::vector<std::unique_ptr<safetensors::File>> files_;
  std::map<std::string, const safetensors::TensorInfo*> where_;
  std::map<std::string, size_t> file_index_;
  std::set<std::string> taken_;
};

}  // namespace tessera::convert
