// GGUF files (versions 2 and 3): a validating reader over a read-only mapping and a writer.
//
// Layout (little-endian): magic "GGUF", u32 version, u64 tensor_count, u64 metadata_kv_count,
// the key/value pairs, the tensor infos, padding to `general.alignment` (default 32), then
// the data section. Every tensor offset is relative to the data section.
//
// The reader trusts nothing: every length and count is checked against the bytes that
// remain before anything is allocated, and every failure is a Status whose message names
// the file, the field and the byte offset. Choices where the format leaves room:
//  - keys must be non-empty, at most 65535 bytes and valid UTF-8 (non-ASCII is allowed);
//    string values may hold any bytes (some vocabularies carry partial UTF-8 pieces);
//  - tensor names must be non-empty, at most 65535 bytes and valid UTF-8;
//  - a bool value must be the byte 0 or 1;
//  - arrays may nest (arrays of arrays) up to kMaxArrayDepth levels;
//  - every dimension must be at least 1, and tensors must not overlap in the data section;
//  - a file without tensors may end before its (empty) aligned data section.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tessera/dtype.h"
#include "tessera/limits.h"
#include "tessera/status.h"

namespace tessera::gguf {

/// Metadata value types; the numbers are the ids stored in the file.
enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
  String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};

/// "u8", "i8", ..., "bool", "string", "array", "u64", "i64", "f64"; "unknown" otherwise.
std::string_view value_type_name(ValueType t);
/// True if `id` is one of the ValueType ids.
bool is_known_value_type(uint32_t id);

/// Deepest nesting of arrays the reader accepts (an array of scalars has depth 1).
inline constexpr int kMaxArrayDepth = limits::kMaxArrayDepth;
/// Default alignment of the data section and of each tensor within it.
inline constexpr size_t kDefaultAlignment = 32;

/// A metadata value: a scalar, a string, or an array of one element type.
/// Arrays of arrays are stored as std::vector<Value> (each element itself an array).
/// Bool arrays are stored as std::vector<bool>: use as_array<bool>().
class Value {
 public:
  /// The u8 value 0 (so that containers can default-construct values).
  Value();
  Value(uint8_t v);   // NOLINT: implicit by design, like the other scalar constructors
  Value(int8_t v);    // NOLINT
  Value(uint16_t v);  // NOLINT
  Value(int16_t v);   // NOLINT
  Value(uint32_t v);  // NOLINT
  Value(int32_t v);   // NOLINT
  Value(uint64_t v);  // NOLINT
  Value(int64_t v);   // NOLINT
  Value(float v);     // NOLINT
  Value(double v);    // NOLINT
  Value(bool v);      // NOLINT
  Value(std::string v);       // NOLINT
  Value(std::string_view v);  // NOLINT
  Value(const char* v);       // NOLINT: without it a literal would become a bool

  /// Arrays of each element type (an empty vector still records its element type).
  static Value array(std::vector<uint8_t> v);
  static Value array(std::vector<int8_t> v);
  static Value array(std::vector<uint16_t> v);
  static Value array(std::vector<int16_t> v);
  static Value array(std::vector<uint32_t> v);
  static Value array(std::vector<int32_t> v);
  static Value array(std::vector<uint64_t> v);
  static Value array(std::vector<int64_t> v);
  static Value array(std::vector<float> v);
  static Value array(std::vector<double> v);
  static Value array(std::vector<bool> v);
  static Value array(std::vector<std::string> v);
  /// An array of arrays; every element must itself be an array (checked).
  static Value array(std::vector<Value> v);

  ValueType type() const { return type_; }
  /// Element type when type() == Array (U8 otherwise).
  ValueType array_type() const { return array_type_; }
  bool is_array() const { return type_ == ValueType::Array; }
  /// Number of elements when type() == Array, 0 otherwise.
  size_t array_size() const;

  /// Any integer type, as int64 (nullopt for non-integers and for u64 above INT64_MAX).
  std::optional<int64_t> as_int() const;
  /// F32/F64, and integers converted to double; nullopt otherwise.
  std::optional<double> as_float() const;
  /// Bool only.
  std::optional<bool> as_bool() const;
  /// The string when type() == String, nullptr otherwise.
  const std::string* as_string() const;
  /// The elements when this is an array of strings, nullptr otherwise.
  const std::vector<std::string>* as_string_array() const { return as_array<std::string>(); }
  /// The elements when this is an array whose element type matches T exactly, nullptr
  /// otherwise. T is one of uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t,
  /// uint64_t, int64_t, float, double, bool, std::string, or Value (arrays of arrays).
  template <typename T>
  const std::vector<T>* as_array() const {
    return std::get_if<std::vector<T>>(&data_);
  }

  /// Short human form: strings quoted with control bytes escaped; arrays show at most
  /// `max_items` elements, then "... (N items)", e.g. [1, 2, 3, ... (32000 items)].
  std::string to_string(size_t max_items = 8) const;

  /// Same type and same contents (floats compare by value, so NaN != NaN).
  bool operator==(const Value& other) const;

 private:
  using Data = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                            std::string, uint64_t, int64_t, double,
                            std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
                            std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
                            std::vector<float>, std::vector<bool>, std::vector<std::string>,
                            std::vector<uint64_t>, std::vector<int64_t>, std::vector<double>,
                            std::vector<Value>>;
  Value(ValueType type, ValueType array_type, Data data);
  friend class Writer;  // encodes data_ directly

  ValueType type_;
  ValueType array_type_;
  Data data_;
};

/// One tensor of a GGUF file.
struct TensorInfo {
  std::string name;
  DType type;
  int n_dims;
  std::array<int64_t, 4> ne;  // elements per dim, dim 0 innermost (as stored); unused dims = 1
  uint64_t offset;            // relative to the data section
  uint64_t nbytes;            // dtype_row_size(type, ne[0]) * ne[1] * ne[2] * ne[3]
  const uint8_t* data;        // points into the file's bytes (valid while the File lives)
  int part = 0;               // the part of a split model that holds it (0: the first, or
                              // the only file); offset is relative to that part's data

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

/// A parsed and fully validated GGUF file. Tensor data stays in the mapping (or in the
/// owned bytes for from_bytes) for as long as the File lives.
class File {
 public:
  /// Maps `path` read-only and validates it; errors name the path.
  static Result<std::unique_ptr<File>> open(const std::string& path);
  /// Reads `path` into memory (no mapping: the tools' --no-mmap) and validates it.
  static Result<std::unique_ptr<File>> read(const std::string& path);
  /// Opens a model: `path` is a single GGUF file, or the first part of a split model
  /// (NAME-00001-of-0000N.gguf, see gguf_split.h), whose other parts are then opened and
  /// mapped too: metadata() is the first part's, tensors() those of every part in part
  /// order. Refused, naming the file: a later part given as `path`, a missing part, a part
  /// whose split.no / split.count disagree, a tensor in two parts, a tensor count other
  /// than split.tensors.count. `mapped` false: every part is read into memory instead.
  static Result<std::unique_ptr<File>> open_model(const std::string& path, bool mapped = true);
  /// Validates an in-memory image; `name` stands for the path in messages.
  static Result<std::unique_ptr<File>> from_bytes(std::vector<uint8_t> bytes,
                                                  std::string name = "<memory>");

  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  /// Start of the data section (a multiple of alignment()).
  uint64_t data_offset() const { return data_offset_; }
  size_t file_size() const { return size_; }
  /// The whole file image.
  const uint8_t* file_data() const { return base_; }
  const std::string& path() const { return path_; }

  /// Key/value pairs in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  /// The value of `key`, or nullptr.
  const Value* find(std::string_view key) const;

  /// Typed getters; errors name the key and the problem, e.g.
  /// "gguf: key 'llama.block_count' is missing" or "... has type string, expected an integer".
  Result<int64_t> get_int(std::string_view key) const;
  /// Floats, or integers converted to double.
  Result<double> get_float(std::string_view key) const;
  Result<std::string> get_string(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;

  /// Files of a split model opened with open_model (1 for a single file): part(0) is this
  /// file, part(i) the File of part i + 1, whose tensors are also this file's tensors().
  size_t part_count() const { return 1 + parts_.size(); }
  const File& part(size_t i) const { return i == 0 ? *this : *parts_[i - 1]; }

  /// Tensors in file order (of a split model: part after part).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  /// The tensor called `name`, or nullptr.
  const TensorInfo* find_tensor(std::string_view name) const;

  /// Tells the OS that bytes [offset, offset + size) of a mapped file will not be read
  /// again soon, so their pages leave this process's resident set (they stay in the page
  /// cache, and reading them again still works). Used after weights were copied into
  /// another layout. Does nothing for from_bytes images.
  void release_pages(size_t offset, size_t size) const;
  /// The same for bytes [data, data + size) of a tensor of any part (tensors().data).
  void release_tensor_pages(const uint8_t* data, size_t size) const;

 private:
  File() = default;
  friend class FileParser;  // reader.cpp fills in a File while validating it

  std::string path_;
  std::shared_ptr<const void> storage_;  // keeps the mapping or the owned bytes alive
  bool mapped_ = false;                   // storage_ is a file mapping
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  uint32_t version_ = 0;
  size_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::map<std::string, size_t, std::less<>> key_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
  std::vector<std::unique_ptr<File>> parts_;  // the other parts of a split model (split.cpp)
};

/// Builds a GGUF file (version 3). Keys keep insertion order; tensors are laid out in
/// insertion order, each at the next multiple of the alignment.
class Writer {
 public:
  /// Replaces an existing key in place, else appends. Setting "general.alignment" to a
  /// u32 non-zero power of two also changes the layout alignment; any other value is
  /// written as given (which lets tests craft files the reader must refuse).
  void set(std::string key, Value value);
  /// Layout alignment (a non-zero power of two, checked). Also writes general.alignment
  /// (u32) when not 32, and removes that key when 32.
  void set_alignment(size_t alignment);
  size_t alignment() const { return alignment_; }
  /// Pads the data after the last tensor to the alignment with zeros, as ggml's writer
  /// does (by default the file ends with the last tensor's bytes).
  void set_pad_end(bool pad) { pad_end_ = pad; }

  /// Adds a tensor; the data is copied. nbytes must equal
  /// dtype_row_size(type, ne[0]) * ne[1] * ne[2] * ne[3]; n_dims is 1..4, unused dims 1,
  /// and names are unique (all checked: a violation is a caller bug).
  void add_tensor(std::string name, DType type, std::array<int64_t, 4> ne, int n_dims,
                  const void* data, size_t nbytes);
  /// Same, but only references `data`: the caller keeps it alive until write/to_bytes.
  void add_tensor_ref(std::string name, DType type, std::array<int64_t, 4> ne, int n_dims,
                      const void* data, size_t nbytes);

  /// Where a streamed tensor's bytes go, in order; false: the write failed (stop).
  using ByteSink = std::function<bool(const uint8_t* data, size_t n)>;
  /// Produces a streamed tensor's bytes, exactly its nbytes in order, into the sink.
  using Producer = std::function<Status(const ByteSink& out)>;
  /// Same as add_tensor, but the bytes are produced while the file is written, one tensor
  /// at a time: what a converter of a checkpoint larger than memory needs. A producer's
  /// error stops the write, which returns it (and leaves no file); a producer that gives
  /// other than nbytes is a caller bug (checked).
  void add_tensor_stream(std::string name, DType type, std::array<int64_t, 4> ne, int n_dims, size_t nbytes,
                         Producer produce);

  /// Writes the file; errors name the path and the OS error, or are a producer's. A partial
  /// file is removed.
  Status write(const std::string& path) const;
  /// The whole file image (streamed tensors included; a producer's error is a caller bug).
  std::vector<uint8_t> to_bytes() const;

 private:
  struct Tensor {
    std::string name;
    DType type;
    std::array<int64_t, 4> ne;
    int n_dims;
    size_t nbytes;
    const uint8_t* ref;           // referenced data, or nullptr when `owned` holds a copy
    std::vector<uint8_t> owned;
    Producer produce;             // streamed: the bytes come from here
    const uint8_t* bytes() const { return ref ? ref : owned.data(); }
  };
  void add(Tensor t);
  /// Feeds the whole file to `sink`; stops and returns false as soon as the sink or a
  /// producer fails (then *produced holds the producer's error).
  bool emit(const ByteSink& sink, Status* produced) const;
  /// Appends the encoding of `v` without its leading type id.
  static void encode_payload(std::vector<uint8_t>& out, const Value& v);

  size_t alignment_ = kDefaultAlignment;
  bool pad_end_ = false;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace tessera::gguf
