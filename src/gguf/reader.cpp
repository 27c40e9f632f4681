// GGUF reader: parses and validates a whole file image (see include/tessera/gguf.h).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

#include "gguf/cursor.h"
#include "gguf/mmap.h"
#include "tessera/gguf.h"

namespace tessera::gguf {

// ---- helpers shared through cursor.h -------------------------------------------------

std::string quoted(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  constexpr size_t kMaxShown = 96;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    if (u >= 0x20 && u < 0x7f && u != '\\') {
      out += char(u);
    } else {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  if (s.size() > kMaxShown) out += "...";
  return out + "'";
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    int extra = 0;
    uint32_t cp = 0;
    if (b0 < 0x80) {
      ++i;
      continue;
    } else if ((b0 & 0xe0) == 0xc0) {
      extra = 1, cp = b0 & 0x1f;
    } else if ((b0 & 0xf0) == 0xe0) {
      extra = 2, cp = b0 & 0x0f;
    } else if ((b0 & 0xf8) == 0xf0) {
      extra = 3, cp = b0 & 0x07;
    } else {
      return false;
    }
    if (s.size() - i <= size_t(extra)) return false;
    for (int k = 1; k <= extra; ++k) {
      const auto b = static_cast<unsigned char>(s[i + size_t(k)]);
      if ((b & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3f);
    }
    static constexpr uint32_t kMinForLength[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += size_t(extra) + 1;
  }
  return true;
}

namespace {

constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr size_t kHeaderSize = 4 + 4 + 8 + 8;
// Smallest possible encodings, used to bound counts before anything is allocated.
constexpr uint64_t kMinKvSize = 8 + 1 + 4 + 1;              // key "x", type, a u8
constexpr uint64_t kMinTensorInfoSize = 8 + 1 + 4 + 8 + 4 + 8;  // name "x", n_dims, 1 dim, type, offset

// Bytes of one element of a fixed-size type; 0 for String and Array.
size_t scalar_size(ValueType t) {
  switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::Bool: return 1;
    case ValueType::U16: case ValueType::I16: return 2;
    case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
    case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
    default: return 0;
  }
}

// Smallest encoding of one array element of type t.
uint64_t min_element_size(ValueType t) {
  if (t == ValueType::String) return 8;       // the length
  if (t == ValueType::Array) return 4 + 8;    // element type and count
  return scalar_size(t);
}

std::string type_description(const Value& v) {
  if (!v.is_array()) return std::string(value_type_name(v.type()));
  return "array of " + std::string(value_type_name(v.array_type()));
}

// Checks a key or tensor name; returns "" when fine, else the problem.
std::string name_problem(const std::string& name) {
  if (name.empty()) return "is empty";
  if (!is_valid_utf8(name)) return "is not valid UTF-8";
  return "";
}

}  // namespace

// ---- the parser ------------------------------------------------------------------------

/// Fills in a File from its bytes, validating as it goes.
class FileParser {
 public:
  explicit FileParser(File& f) : f_(f), c_(f.base_, f.size_, f.path_) {}

  Status parse() {
    TESSERA_RETURN_IF_ERROR(parse_header());
    TESSERA_RETURN_IF_ERROR(parse_metadata());
    TESSERA_RETURN_IF_ERROR(parse_alignment());
    TESSERA_RETURN_IF_ERROR(parse_tensor_infos());
    TESSERA_RETURN_IF_ERROR(place_data_section());
    for (TensorInfo& t : f_.tensors_) TESSERA_RETURN_IF_ERROR(locate_tensor(t));
    return check_overlaps();
  }

 private:
  Status parse_header();
  Status parse_metadata();
  Status parse_alignment();
  Status parse_tensor_infos();
  Status parse_tensor_info(uint64_t index);
  Status parse_dims(TensorInfo& t, const std::string& what);
  Status place_data_section();
  Status locate_tensor(TensorInfo& t);
  Status check_overlaps() const;
  Result<Value> read_value(uint32_t type_id, int depth, const std::string& what);
  Result<Value> read_array(int depth, const std::string& what);
  Result<Value> read_array_elements(ValueType elem, uint64_t count, int depth, const std::string& what);
  template <typename T>
  Result<Value> read_scalar(const std::string& what);
  template <typename T>
  Result<Value> read_numeric_array(uint64_t count, const std::string& what);
  Result<Value> read_bool_array(uint64_t count, const std::string& what);

  File& f_;
  Cursor c_;
  uint64_t tensor_count_ = 0;
  uint64_t kv_count_ = 0;
};

Status FileParser::parse_header() {
  if (c_.size() < kHeaderSize) {
    return c_.fail("file shorter than the GGUF header (" + std::to_string(c_.size()) + " of " +
                   std::to_string(kHeaderSize) + " bytes)");
  }
  char magic[4];
  TESSERA_RETURN_IF_ERROR(c_.read_bytes(magic, 4, "magic"));
  if (std::memcmp(magic, kMagic, 4) != 0) {
    return c_.fail_at("magic", 0, "bad magic " + quoted(std::string_view(magic, 4)) + ", expected 'GGUF'");
  }
  TESSERA_RETURN_IF_ERROR(c_.read(f_.version_, "version"));
  if (f_.version_ != 2 && f_.version_ != 3) {
    return c_.fail_at("version", 4, "unsupported GGUF version " + std::to_string(f_.version_) +
                                        " (tessera reads versions 2 and 3)");
  }
  TESSERA_RETURN_IF_ERROR(c_.read(tensor_count_, "tensor_count"));
  TESSERA_RETURN_IF_ERROR(c_.read(kv_count_, "metadata_kv_count"));
  TESSERA_RETURN_IF_ERROR(
      c_.check_count(kv_count_, kMinKvSize, "metadata_kv_count", 16, limits::kMaxMetadataKeys, "kMaxMetadataKeys"));
  return c_.check_count(tensor_count_, kMinTensorInfoSize, "tensor_count", 8, limits::kMaxTensors, "kMaxTensors");
}

Status FileParser::parse_metadata() {
  for (uint64_t i = 0; i < kv_count_; ++i) {
    const size_t at = c_.pos();
    const std::string what = "key #" + std::to_string(i);
    std::string key;
    TESSERA_RETURN_IF_ERROR(c_.read_string(key, what, limits::kMaxNameBytes, "kMaxNameBytes"));
    if (std::string problem = name_problem(key); !problem.empty()) {
      return c_.fail_at(what, at, "key " + quoted(key) + " " + problem);
    }
    if (f_.key_index_.count(key)) return c_.fail_at(what, at, "duplicate key " + quoted(key));
    const std::string value_what = "key " + quoted(key);
    uint32_t type_id = 0;
    TESSERA_RETURN_IF_ERROR(c_.read(type_id, value_what + " value type"));
    Result<Value> value = read_value(type_id, 0, value_what);
    if (!value) return value.status();
    f_.key_index_.emplace(key, f_.metadata_.size());
    f_.metadata_.emplace_back(std::move(key), std::move(value).value());
  }
  return Status::ok();
}

Status FileParser::parse_alignment() {
  const Value* v = f_.find("general.alignment");
  if (v == nullptr) return Status::ok();
  if (v->type() != ValueType::U32) {
    return c_.fail("key 'general.alignment' has type " + type_description(*v) + ", expected u32");
  }
  // The GGUF spec asks for a multiple of 8, and llama.cpp for a power of two. Below 8 the
  // tensor data would not be aligned for its elements (a 2-byte F16 row at an odd address),
  // which the kernels read in place.
  const auto a = static_cast<uint32_t>(*v->as_int());
  if (a < 8 || (a & (a - 1)) != 0) {
    return c_.fail("key 'general.alignment' is " + std::to_string(a) +
                   ", expected a power of two of at least 8");
  }
  f_.alignment_ = a;
  return Status::ok();
}

template <typename T>
Result<Value> FileParser::read_scalar(const std::string& what) {
  T v{};
  TESSERA_RETURN_IF_ERROR(c_.read(v, what));
  return Value(v);
}

Result<Value> FileParser::read_value(uint32_t type_id, int depth, const std::string& what) {
  const size_t at = c_.pos();
  if (!is_known_value_type(type_id)) {
    return c_.fail_at(what, at - 4, "unknown value type " + std::to_string(type_id));
  }
  switch (static_cast<ValueType>(type_id)) {
    case ValueType::U8: return read_scalar<uint8_t>(what);
    case ValueType::I8: return read_scalar<int8_t>(what);
    case ValueType::U16: return read_scalar<uint16_t>(what);
    case ValueType::I16: return read_scalar<int16_t>(what);
    case ValueType::U32: return read_scalar<uint32_t>(what);
    case ValueType::I32: return read_scalar<int32_t>(what);
    case ValueType::U64: return read_scalar<uint64_t>(what);
    case ValueType::I64: return read_scalar<int64_t>(what);
    case ValueType::F32: return read_scalar<float>(what);
    case ValueType::F64: return read_scalar<double>(what);
    case ValueType::Bool: {
      uint8_t b = 0;
      TESSERA_RETURN_IF_ERROR(c_.read(b, what));
      if (b > 1) return c_.fail_at(what, at, "bool byte is " + std::to_string(b) + ", expected 0 or 1");
      return Value(b == 1);
    }
    case ValueType::String: {
      std::string s;
      TESSERA_RETURN_IF_ERROR(c_.read_string(s, what));
      return Value(std::move(s));
    }
    case ValueType::Array: return read_array(depth + 1, what);
  }
  return c_.fail_at(what, at, "unknown value type");  // not reached: the id was checked
}

Result<Value> FileParser::read_array(int depth, const std::string& what) {
  const size_t at = c_.pos();
  if (depth > kMaxArrayDepth) {
    return c_.fail_at(what, at, "arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels (tessera's limit kMaxArrayDepth)");
  }
  uint32_t elem_id = 0;
  TESSERA_RETURN_IF_ERROR(c_.read(elem_id, what + " array element type"));
  if (!is_known_value_type(elem_id)) {
    return c_.fail_at(what, at, "unknown array element type " + std::to_string(elem_id));
  }
  const auto elem = static_cast<ValueType>(elem_id);
  uint64_t count = 0;
  TESSERA_RETURN_IF_ERROR(c_.read(count, what + " array count"));
  TESSERA_RETURN_IF_ERROR(c_.check_count(count, min_element_size(elem), what + " array", at + 4,
                                         limits::kMaxArrayElements, "kMaxArrayElements"));
  return read_array_elements(elem, count, depth, what);
}

template <typename T>
Result<Value> FileParser::read_numeric_array(uint64_t count, const std::string& what) {
  std::vector<T> v(static_cast<size_t>(count));  // count * sizeof(T) bytes were checked to be present
  TESSERA_RETURN_IF_ERROR(c_.read_bytes(v.data(), v.size() * sizeof(T), what));
  return Value::array(std::move(v));
}

Result<Value> FileParser::read_bool_array(uint64_t count, const std::string& what) {
  std::vector<bool> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t at = c_.pos();
    uint8_t b = 0;
    TESSERA_RETURN_IF_ERROR(c_.read(b, what));
    if (b > 1) {
      return c_.fail_at(what, at, "bool element " + std::to_string(i) + " is " + std::to_string(b) +
                                      ", expected 0 or 1");
    }
    v[i] = b == 1;
  }
  return Value::array(std::move(v));
}

Result<Value> FileParser::read_array_elements(ValueType elem, uint64_t count, int depth,
                                              const std::string& what) {
  switch (elem) {
    case ValueType::U8: return read_numeric_array<uint8_t>(count, what);
    case ValueType::I8: return read_numeric_array<int8_t>(count, what);
    case ValueType::U16: return read_numeric_array<uint16_t>(count, what);
    case ValueType::I16: return read_numeric_array<int16_t>(count, what);
    case ValueType::U32: return read_numeric_array<uint32_t>(count, what);
    case ValueType::I32: return read_numeric_array<int32_t>(count, what);
    case ValueType::U64: return read_numeric_array<uint64_t>(count, what);
    case ValueType::I64: return read_numeric_array<int64_t>(count, what);
    case ValueType::F32: return read_numeric_array<float>(count, what);
    case ValueType::F64: return read_numeric_array<double>(count, what);
    case ValueType::Bool: return read_bool_array(count, what);
    case ValueType::String: {
      std::vector<std::string> v(static_cast<size_t>(count));  // at least 8 file bytes per element
      for (std::string& s : v) TESSERA_RETURN_IF_ERROR(c_.read_string(s, what));
      return Value::array(std::move(v));
    }
    case ValueType::Array: {
      std::vector<Value> v;
      v.reserve(size_t(count));  // at least 12 file bytes per element
      for (uint64_t i = 0; i < count; ++i) {
        Result<Value> inner = read_array(depth + 1, what);
        if (!inner) return inner.status();
        v.push_back(std::move(inner).value());
      }
      return Value::array(std::move(v));
    }
  }
  return c_.fail(what + ": unknown array element type");  // not reached
}

Status FileParser::parse_tensor_infos() {
  for (uint64_t i = 0; i < tensor_count_; ++i) TESSERA_RETURN_IF_ERROR(parse_tensor_info(i));
  return Status::ok();
}

Status FileParser::parse_tensor_info(uint64_t index) {
  TensorInfo t{};
  const size_t at = c_.pos();
  const std::string name_what = "tensor #" + std::to_string(index) + " name";
  TESSERA_RETURN_IF_ERROR(c_.read_string(t.name, name_what, limits::kMaxNameBytes, "kMaxNameBytes"));
  if (std::string problem = name_problem(t.name); !problem.empty()) {
    return c_.fail_at(name_what, at, "tensor name " + quoted(t.name) + " " + problem);
  }
  const std::string what = "tensor " + quoted(t.name);
  if (f_.tensor_index_.count(t.name)) return c_.fail_at(what, at, "duplicate tensor name");
  TESSERA_RETURN_IF_ERROR(parse_dims(t, what));
  const size_t type_at = c_.pos();
  uint32_t type_id = 0;
  TESSERA_RETURN_IF_ERROR(c_.read(type_id, what + " type"));
  if (!is_known_dtype(type_id)) return c_.fail_at(what, type_at, "unknown tensor type " + std::to_string(type_id));
  t.type = static_cast<DType>(type_id);
  TESSERA_RETURN_IF_ERROR(c_.read(t.offset, what + " offset"));
  f_.tensor_index_.emplace(t.name, f_.tensors_.size());
  f_.tensors_.push_back(std::move(t));
  return Status::ok();
}

Status FileParser::parse_dims(TensorInfo& t, const std::string& what) {
  const size_t at = c_.pos();
  uint32_t n_dims = 0;
  TESSERA_RETURN_IF_ERROR(c_.read(n_dims, what + " n_dims"));
  if (n_dims == 0 || n_dims > limits::kMaxTensorDims) {
    return c_.fail_at(what, at, "n_dims is " + std::to_string(n_dims) + ", expected 1 to " +
                                    std::to_string(limits::kMaxTensorDims));
  }
  t.n_dims = int(n_dims);
  t.ne = {1, 1, 1, 1};
  uint64_t n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const size_t dim_at = c_.pos();
    uint64_t ne = 0;
    TESSERA_RETURN_IF_ERROR(c_.read(ne, what + " dims"));
    if (ne == 0 || ne > uint64_t(INT64_MAX)) {
      return c_.fail_at(what, dim_at, "dimension " + std::to_string(d) + " is " +
                                          std::to_string(int64_t(ne)) + ", expected at least 1");
    }
    if (!mul_ok(n_elements, ne, &n_elements) || n_elements > uint64_t(INT64_MAX)) {
      return c_.fail_at(what, dim_at, "element count overflows at dimension " + std::to_string(d));
    }
    t.ne[d] = int64_t(ne);
  }
  return Status::ok();
}

Status FileParser::place_data_section() {
  const uint64_t a = f_.alignment_;
  uint64_t end = 0;
  if (!add_ok(c_.pos(), a - 1, &end)) return c_.fail("data section offset overflows");
  f_.data_offset_ = end / a * a;
  return Status::ok();
}

Status FileParser::locate_tensor(TensorInfo& t) {
  const DTypeTraits& traits = dtype_traits(t.type);
  const std::string what = "tensor " + quoted(t.name);
  if (t.ne[0] % traits.block_size != 0) {
    return c_.fail(what + ": dimension 0 is " + std::to_string(t.ne[0]) + ", not a multiple of the " +
                   std::string(traits.name) + " block size " + std::to_string(traits.block_size));
  }
  uint64_t nbytes = uint64_t(t.ne[0] / traits.block_size);
  for (int d = 1; d <= 3; ++d) {
    if (!mul_ok(nbytes, uint64_t(t.ne[d]), &nbytes)) return c_.fail(what + ": byte size overflows");
  }
  if (!mul_ok(nbytes, traits.type_size, &nbytes)) return c_.fail(what + ": byte size overflows");
  if (t.offset % f_.alignment_ != 0) {
    return c_.fail(what + ": offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                   std::to_string(f_.alignment_));
  }
  uint64_t begin = 0, end = 0;
  if (!add_ok(f_.data_offset_, t.offset, &begin) || !add_ok(begin, nbytes, &end)) {
    return c_.fail(what + ": offset " + std::to_string(t.offset) + " + " + std::to_string(nbytes) +
                   " bytes overflows");
  }
  if (end > c_.size()) {
    return c_.fail(what + ": data [" + std::to_string(begin) + ", " + std::to_string(end) +
                   ") beyond end of file (size " + std::to_string(c_.size()) + ")");
  }
  t.nbytes = nbytes;
  t.data = f_.base_ + begin;
  return Status::ok();
}

Status FileParser::check_overlaps() const {
  std::vector<const TensorInfo*> order;
  order.reserve(f_.tensors_.size());
  for (const TensorInfo& t : f_.tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const TensorInfo& prev = *order[i - 1];
    const TensorInfo& cur = *order[i];
    if (cur.offset < prev.offset + prev.nbytes) {  // no overflow: both ends were checked
      return c_.fail("tensor " + quoted(cur.name) + ": data at offset " + std::to_string(cur.offset) +
                     " overlaps tensor " + quoted(prev.name) + " [" + std::to_string(prev.offset) + ", " +
                     std::to_string(prev.offset + prev.nbytes) + ")");
    }
  }
  return Status::ok();
}

// ---- File ------------------------------------------------------------------------------

File::~File() = default;

Result<std::unique_ptr<File>> File::open(const std::string& path) {
  Result<MappedFile> mapped = MappedFile::open(path);
  if (!mapped) return mapped.status();
  auto mapping = std::make_shared<MappedFile>(std::move(mapped).value());
  std::unique_ptr<File> f(new File());
  f->path_ = path;
  f->base_ = mapping->data();
  f->size_ = mapping->size();
  f->storage_ = std::move(mapping);
  f->mapped_ = true;
  TESSERA_RETURN_IF_ERROR(FileParser(*f).parse());
  return f;
}

Result<std::unique_ptr<File>> File::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error("gguf: " + path + ": cannot open the file for reading");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.eof() && !in) return Status::error("gguf: " + path + ": cannot read the file");
  return from_bytes(std::move(bytes), path);
}

Result<std::unique_ptr<File>> File::from_bytes(std::vector<uint8_t> bytes, std::string name) {
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  std::unique_ptr<File> f(new File());
  f->path_ = std::move(name);
  f->base_ = owned->data();
  f->size_ = owned->size();
  f->storage_ = std::move(owned);
  TESSERA_RETURN_IF_ERROR(FileParser(*f).parse());
  return f;
}

void File::release_pages(size_t offset, size_t size) const {
  if (!mapped_ || offset >= size_) return;
  drop_mapped_pages(base_ + offset, std::min(size, size_ - offset));
}

void File::release_tensor_pages(const uint8_t* data, size_t size) const {
  for (size_t i = 0; i < part_count(); ++i) {
    const File& p = part(i);
    // Compared as addresses: the parts are separate mappings.
    const auto at = reinterpret_cast<uintptr_t>(data);
    const auto base = reinterpret_cast<uintptr_t>(p.base_);
    if (at >= base && at < base + p.size_) {
      p.release_pages(size_t(at - base), size);
      return;
    }
  }
}

const Value* File::find(std::string_view key) const {
  const auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Status key_error(const std::string& path, std::string_view key, const std::string& problem) {
  return Status::error("gguf: " + path + ": key " + quoted(key) + " " + problem);
}

Status type_error(const std::string& path, std::string_view key, const Value& v, const char* expected) {
  return key_error(path, key, "has type " + type_description(v) + ", expected " + expected);
}

}  // namespace

Result<int64_t> File::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return key_error(path_, key, "is missing");
  if (std::optional<int64_t> i = v->as_int()) return *i;
  if (v->type() == ValueType::U64) return key_error(path_, key, "value " + v->to_string() + " is out of range");
  return type_error(path_, key, *v, "an integer");
}

Result<double> File::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return key_error(path_, key, "is missing");
  if (std::optional<double> d = v->as_float()) return *d;
  return type_error(path_, key, *v, "a number");
}

Result<std::string> File::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return key_error(path_, key, "is missing");
  if (const std::string* s = v->as_string()) return *s;
  return type_error(path_, key, *v, "a string");
}

Result<bool> File::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return key_error(path_, key, "is missing");
  if (std::optional<bool> b = v->as_bool()) return *b;
  return type_error(path_, key, *v, "a bool");
}

}  // namespace tessera::gguf
