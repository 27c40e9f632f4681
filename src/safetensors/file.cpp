// Parsing and validating a safetensors file (tessera/safetensors.h). Every check the
// format's own library makes is here, so that nothing downstream reads past the mapping:
// the header's length against the file, the JSON's shape, each tensor's bytes against its
// dtype and shape (with overflow checks), and the tensors tiling the data section.
#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "gguf/mmap.h"
#include "tessera/safetensors.h"

namespace tessera::safetensors {

using nlohmann::json;

struct File::Storage {
  gguf::MappedFile mapped;
  std::vector<uint8_t> bytes;
  std::span<const uint8_t> view() const {
    return bytes.empty() ? std::span<const uint8_t>(mapped.data(), mapped.size()) : std::span<const uint8_t>(bytes);
  }
};

namespace {

/// The format library's limit: a larger header is refused before it is read.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

constexpr Dtype kDtypes[] = {Dtype::F64, Dtype::F32, Dtype::F16, Dtype::BF16, Dtype::F8_E4M3,
                             Dtype::F8_E5M2, Dtype::I64, Dtype::I32, Dtype::I16, Dtype::I8,
                             Dtype::U8, Dtype::U16, Dtype::U32, Dtype::U64, Dtype::Bool};

Result<Dtype> parse_dtype(const json& v) {
  if (v.is_string()) {
    for (Dtype t : kDtypes) {
      if (v.get_ref<const std::string&>() == dtype_name(t)) return t;
    }
  }
  std::string known;
  for (Dtype t : kDtypes) known += std::string(known.empty() ? "" : ", ") + dtype_name(t);
  return Status::error("'dtype' " + v.dump() + " is not one of " + known);
}

/// A JSON non-negative integer that fits int64.
bool as_count(const json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
  } else if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    *out = uint64_t(v.get<int64_t>());
  } else {
    return false;
  }
  return *out <= uint64_t(std::numeric_limits<int64_t>::max());
}

/// One header entry, its offsets not yet placed in the data section.
Result<TensorInfo> parse_entry(const std::string& name, const json& e) {
  TensorInfo t;
  t.name = name;
  if (!e.is_object()) return Status::error("is " + std::string(e.type_name()) + ", not an object");
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!e.contains(key)) return Status::error("has no '" + std::string(key) + "'");
  }
  Result<Dtype> dt = parse_dtype(e.at("dtype"));
  if (!dt) return dt.status();
  t.dtype = *dt;
  const json& shape = e.at("shape");
  if (!shape.is_array()) return Status::error("'shape' is not an array");
  uint64_t n = 1;
  for (const json& d : shape) {
    uint64_t dim = 0;
    if (!as_count(d, &dim)) return Status::error("'shape' " + shape.dump() + " holds a negative or non-integer size");
    if (__builtin_mul_overflow(n, dim, &n) || n > uint64_t(std::numeric_limits<int64_t>::max())) {
      return Status::error("'shape' " + shape.dump() + " overflows");
    }
    t.shape.push_back(int64_t(dim));
  }
  const json& off = e.at("data_offsets");
  uint64_t begin = 0, end = 0;
  if (!off.is_array() || off.size() != 2 || !as_count(off[0], &begin) || !as_count(off[1], &end) || end < begin) {
    return Status::error("'data_offsets' " + off.dump() + " is not [begin, end] with 0 <= begin <= end");
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(n, uint64_t(dtype_size(t.dtype)), &nbytes) || nbytes != end - begin) {
    return Status::error("has " + std::to_string(end - begin) + " bytes (data_offsets " + off.dump() + "), but " +
                         dtype_name(t.dtype) + " " + shape.dump() + " needs " +
                         (nbytes / dtype_size(t.dtype) == n ? std::to_string(nbytes) : std::string("more")));
  }
  t.offset = begin;
  t.nbytes = nbytes;
  return t;
}

/// The header's JSON, refusing a key given twice at the top level (where the last one would
/// otherwise silently win).
Result<json> parse_header(std::string_view text) {
  std::set<std::string> seen;
  std::string duplicate;
  const json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && !seen.insert(parsed.get<std::string>()).second) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text.begin(), text.end(), cb);
  } catch (const json::exception& e) {
    return Status::error("the header is not JSON (" + std::string(e.what()) + ")");
  }
  if (!duplicate.empty()) return Status::error("the header names '" + duplicate + "' twice");
  if (!header.is_object()) return Status::error("the header is not a JSON object");
  return header;
}

Result<std::map<std::string, std::string>> parse_metadata(const json& m) {
  if (!m.is_object()) return Status::error("'__metadata__' is not an object");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : m.items()) {
    if (!v.is_string()) return Status::error("'__metadata__' value of '" + k + "' is not a string");
    out[k] = v.get<std::string>();
  }
  return out;
}

/// The tensors in data order, each exactly after the one before, from 0 to `data_size`.
Status check_tiling(std::vector<TensorInfo>& tensors, uint64_t data_size) {
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const TensorInfo& a, const TensorInfo& b) { return a.offset < b.offset; });
  uint64_t at = 0;
  for (const TensorInfo& t : tensors) {
    if (t.offset != at) {
      return Status::error("tensor '" + t.name + "' starts at data offset " + std::to_string(t.offset) +
                           ", but the tensors before it end at " + std::to_string(at) +
                           (t.offset < at ? " (overlap)" : " (a gap)"));
    }
    at += t.nbytes;
  }
  if (at != data_size) {
    return Status::error("the tensors cover " + std::to_string(at) + " bytes of data, but the file holds " +
                         std::to_string(data_size) + (at > data_size ? " (truncated)" : " (bytes left over)"));
  }
  return Status::ok();
}

}  // namespace

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

File::~File() = default;

Result<std::unique_ptr<File>> File::open(const std::string& path) {
  Result<gguf::MappedFile> m = gguf::MappedFile::open(path);
  if (!m) return m.status();
  auto s = std::make_unique<Storage>();
  s->mapped = std::move(*m);
  return parse(std::move(s), path);
}

Result<std::unique_ptr<File>> File::from_bytes(std::vector<uint8_t> bytes, const std::string& name) {
  auto s = std::make_unique<Storage>();
  s->bytes = std::move(bytes);
  if (s->bytes.empty()) return Status::error("safetensors: " + name + ": the file is empty");
  return parse(std::move(s), name);
}

Result<std::unique_ptr<File>> File::parse(std::unique_ptr<Storage> storage, const std::string& name) {
  const auto fail = [&](const std::string& what) { return Status::error("safetensors: " + name + ": " + what); };
  const std::span<const uint8_t> all = storage->view();
  if (all.size() < 8) return fail("the file has " + std::to_string(all.size()) + " bytes, fewer than the 8 of a header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | all[size_t(i)];
  if (n > kMaxHeaderBytes) return fail("the header length " + std::to_string(n) + " exceeds the limit of 100 MB");
  if (n > all.size() - 8) {
    return fail("the header length " + std::to_string(n) + " runs past the end of the file (" +
                std::to_string(all.size()) + " bytes)");
  }
  const std::string_view text(reinterpret_cast<const char*>(all.data() + 8), size_t(n));
  if (text.empty() || text[0] != '{') return fail("the header does not start with '{'");
  Result<json> header = parse_header(text);
  if (!header) return fail(header.status().message());

  auto file = std::unique_ptr<File>(new File());
  file->path_ = name;
  for (const auto& [key, value] : header->items()) {
    if (key == "__metadata__") {
      Result<std::map<std::string, std::string>> m = parse_metadata(value);
      if (!m) return fail(m.status().message());
      file->metadata_ = std::move(*m);
      continue;
    }
    Result<TensorInfo> t = parse_entry(key, value);
    if (!t) return fail("tensor '" + key + "' " + t.status().message());
    file->tensors_.push_back(std::move(*t));
  }
  const std::span<const uint8_t> data = all.subspan(size_t(8 + n));
  if (Status s = check_tiling(file->tensors_, data.size()); !s) return fail(s.message());
  for (size_t i = 0; i < file->tensors_.size(); ++i) {
    TensorInfo& t = file->tensors_[i];
    t.data = data.data() + t.offset;
    file->index_[t.name] = i;
  }
  file->storage_ = std::move(storage);
  return file;
}

void File::drop_pages(const TensorInfo& t) const {
  if (storage_->bytes.empty()) gguf::drop_mapped_pages(t.data, size_t(t.nbytes));
}

const TensorInfo* File::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace tessera::safetensors
