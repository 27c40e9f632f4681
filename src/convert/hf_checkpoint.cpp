#include "convert/hf_checkpoint.h"

#include "convert/json_file.h"

namespace tessera::convert {

namespace fs = std::filesystem;

namespace {

/// The shard files model.safetensors.index.json lists, each with its tensors.
Result<std::map<std::string, std::vector<std::string>>> read_index(const fs::path& index) {
  Result<nlohmann::json> read = read_json_object(index);
  if (!read) return read.status();
  const nlohmann::json& j = *read;
  if (!j.contains("weight_map") || !j["weight_map"].is_object()) {
    return Status::error("convert: " + index.string() + " has no 'weight_map' object");
  }
  std::map<std::string, std::vector<std::string>> shards;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string() || file.get<std::string>().find('/') != std::string::npos) {
      return Status::error("convert: " + index.string() + ": 'weight_map' entry '" + name +
                           "' is not a file name in the folder");
    }
    shards[file.get<std::string>()].push_back(name);
  }
  return shards;
}

}  // namespace

Result<std::unique_ptr<Checkpoint>> Checkpoint::open(const fs::path& dir) {
  auto c = std::unique_ptr<Checkpoint>(new Checkpoint());
  std::map<std::string, std::vector<std::string>> shards;
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index)) {
    Result<std::map<std::string, std::vector<std::string>>> s = read_index(index);
    if (!s) return s.status();
    shards = std::move(*s);
  } else if (fs::exists(dir / "model.safetensors")) {
    shards["model.safetensors"] = {};
  } else {
    return Status::error("convert: " + dir.string() +
                         " has no weights (model.safetensors, or shards listed by model.safetensors.index.json)");
  }
  for (const auto& [file, listed] : shards) {
    const fs::path path = dir / file;
    if (!fs::exists(path)) {
      return Status::error("convert: shard '" + file + "' (listed by model.safetensors.index.json) is missing from " +
                           dir.string());
    }
    Result<std::unique_ptr<safetensors::File>> f = safetensors::File::open(path.string());
    if (!f) return f.status().with_context("convert");
    for (const std::string& name : listed) {
      if ((*f)->find(name) == nullptr) {
        return Status::error("convert: model.safetensors.index.json puts tensor '" + name + "' in '" + file +
                             "', which does not hold it");
      }
    }
    for (const safetensors::TensorInfo& t : (*f)->tensors()) {
      if (c->where_.count(t.name)) {
        return Status::error("convert: tensor '" + t.name + "' is in both '" + c->file_of(t.name) + "' and '" +
                             file + "'");
      }
      c->where_[t.name] = &t;
      c->file_index_[t.name] = c->files_.size();
    }
    c->files_.push_back(std::move(*f));
  }
  return c;
}

void Checkpoint::release(const std::string& name) const {
  const auto at = where_.find(name);
  if (at != where_.end()) files_[file_index_.at(name)]->drop_pages(*at->second);
}

const safetensors::TensorInfo* Checkpoint::take(const std::string& name) {
  const auto it = where_.find(name);
  if (it == where_.end()) return nullptr;
  taken_.insert(name);
  return it->second;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : where_) out.push_back(name);
  return out;
}

std::vector<std::string> Checkpoint::left_over() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : where_) {
    if (!taken_.count(name)) out.push_back(name);
  }
  return out;
}

void Checkpoint::strip_prefix(const std::string& prefix) {
  std::map<std::string, const safetensors::TensorInfo*> where;
  std::map<std::string, size_t> files;
  for (const auto& [name, t] : where_) {
    const std::string n = name.starts_with(prefix) ? name.substr(prefix.size()) : name;
    where[n] = t;
    files[n] = file_index_.at(name);
  }
  where_.swap(where);
  file_index_.swap(files);
}

std::string Checkpoint::file_of(const std::string& name) const {
  const auto it = file_index_.find(name);
  return it == file_index_.end() ? std::string() : fs::path(files_[it->second]->path()).filename().string();
}

}  // namespace tessera::convert
