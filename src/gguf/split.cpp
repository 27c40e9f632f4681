// Opening a split model (gguf_split.h): the first part names the others; each part is
// mapped and validated on its own, and the File of the first part takes the tensors of
// all of them, so everything that loads a model sees one file.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "tessera/gguf.h"
#include "tessera/gguf_split.h"

namespace tessera::gguf {
namespace {

// The suffix that ends part `index` of `count`: -00002-of-00003.gguf.
std::string part_suffix(int index, int count) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "-%05d-of-%05d.gguf", index + 1, count);
  return buf;
}

// A split key's value as an integer in [lo, hi]; nullopt when the key is absent.
Result<std::optional<int64_t>> split_int(const File& f, std::string_view key, int64_t lo, int64_t hi) {
  if (f.find(key) == nullptr) return std::optional<int64_t>();
  Result<int64_t> v = f.get_int(key);
  if (!v) return v.status();
  if (*v < lo || *v > hi) {
    return Status::error("gguf: " + f.path() + ": key '" + std::string(key) + "' is " + std::to_string(*v) +
                         ", expected " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return std::optional<int64_t>(*v);
}

}  // namespace

bool is_split_key(std::string_view key) {
  return key == kSplitNoKey || key == kSplitCountKey || key == kSplitTensorsKey;
}

std::string split_part_path(std::string_view prefix, int index, int count) {
  return std::string(prefix) + part_suffix(index, count);
}

std::optional<std::string> split_prefix(std::string_view path, int index, int count) {
  const std::string suffix = part_suffix(index, count);
  if (path.size() <= suffix.size() || !path.ends_with(suffix)) return std::nullopt;
  return std::string(path.substr(0, path.size() - suffix.size()));
}

Result<std::unique_ptr<File>> File::open_model(const std::string& path, bool mapped) {
  auto open_part = [mapped](const std::string& p) { return mapped ? open(p) : read(p); };
  Result<std::unique_ptr<File>> opened = open_part(path);
  if (!opened) return opened.status();
  std::unique_ptr<File> first = std::move(*opened);
  Result<std::optional<int64_t>> count = split_int(*first, kSplitCountKey, 0, 65535);
  if (!count) return count.status();
  Result<std::optional<int64_t>> no = split_int(*first, kSplitNoKey, 0, 65534);
  if (!no) return no.status();
  const int n = int(count->value_or(1));
  Result<std::optional<int64_t>> expected = split_int(*first, kSplitTensorsKey, 0, INT32_MAX);
  if (!expected) return expected.status();
  // Whatever the file, the split keys leave the model's metadata (they describe storage:
  // a model quantized or merged from this one is a single file).
  std::erase_if(first->metadata_, [](const auto& kv) { return is_split_key(kv.first); });
  first->key_index_.clear();
  for (size_t i = 0; i < first->metadata_.size(); ++i) first->key_index_.emplace(first->metadata_[i].first, i);
  if (n <= 1) return first;

  const int index = int(no->value_or(0));
  if (index != 0) {
    const std::optional<std::string> prefix = split_prefix(path, index, n);
    return Status::error("gguf: " + path + " is part " + std::to_string(index + 1) + " of " + std::to_string(n) +
                         " of a split model: load its first part" +
                         (prefix ? ", " + split_part_path(*prefix, 0, n) : std::string()));
  }
  const std::optional<std::string> prefix = split_prefix(path, 0, n);
  if (!prefix) {
    return Status::error("gguf: " + path + " is the first of " + std::to_string(n) +
                         " parts of a split model, but its name does not end in " + part_suffix(0, n) +
                         ", so the other parts cannot be found");
  }
  if (!expected->has_value()) {
    return Status::error("gguf: " + path + ": key '" + std::string(kSplitTensorsKey) + "' is missing");
  }

  for (int i = 1; i < n; ++i) {
    const std::string part_path = split_part_path(*prefix, i, n);
    Result<std::unique_ptr<File>> part = open_part(part_path);
    if (!part) {
      return Status::error("gguf: part " + std::to_string(i + 1) + " of " + std::to_string(n) + " of " + path +
                           ": " + part.status().message());
    }
    const File& p = **part;
    Result<std::optional<int64_t>> p_count = split_int(p, kSplitCountKey, 0, 65535);
    if (!p_count) return p_count.status();
    Result<std::optional<int64_t>> p_no = split_int(p, kSplitNoKey, 0, 65534);
    if (!p_no) return p_no.status();
    if (p_count->value_or(-1) != n || p_no->value_or(-1) != i) {
      auto shown = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("missing"); };
      return Status::error("gguf: " + part_path + " does not belong to " + path + ": split.no " + shown(*p_no) +
                           ", split.count " + shown(*p_count) + ", expected " + std::to_string(i) + " and " +
                           std::to_string(n));
    }
    for (const TensorInfo& t : p.tensors()) {
      if (const TensorInfo* other = first->find_tensor(t.name)) {
        return Status::error("gguf: tensor '" + t.name + "' is in both " + first->part(size_t(other->part)).path() +
                             " and " + part_path);
      }
      TensorInfo moved = t;
      moved.part = i;
      first->tensor_index_.emplace(moved.name, first->tensors_.size());
      first->tensors_.push_back(std::move(moved));
    }
    first->parts_.push_back(std::move(*part));
  }
  if (int64_t(first->tensors_.size()) != **expected) {
    return Status::error("gguf: " + path + ": split.tensors.count is " + std::to_string(**expected) + " but its " +
                         std::to_string(n) + " parts hold " + std::to_string(first->tensors_.size()) +
                         " tensors");
  }
  return first;
}

}  // namespace tessera::gguf
