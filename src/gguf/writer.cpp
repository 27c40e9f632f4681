// GGUF writer (version 3): metadata in insertion order, tensors aligned in insertion order.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/check.h"
#include "tessera/gguf.h"

namespace tessera::gguf {
namespace {

constexpr uint32_t kVersion = 3;
constexpr std::string_view kAlignmentKey = "general.alignment";

// What the reader accepts (reader.cpp, parse_alignment): a power of two of at least 8.
bool valid_alignment(uint64_t a) { return a >= 8 && (a & (a - 1)) == 0; }
uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  const size_t at = out.size();
  out.resize(at + n);
  if (n != 0) std::memcpy(out.data() + at, p, n);
}

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  put_bytes(out, &v, sizeof(T));
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  put_bytes(out, s.data(), s.size());
}

}  // namespace

// Scalars: their bytes (bool as one byte). Arrays: element type, count, elements; each
// element of an array of arrays is itself encoded this way.
void Writer::encode_payload(std::vector<uint8_t>& out, const Value& v) {
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, bool>) {
          put<uint8_t>(out, x ? 1 : 0);
        } else if constexpr (std::is_arithmetic_v<X>) {
          put<X>(out, x);
        } else if constexpr (std::is_same_v<X, std::string>) {
          put_string(out, x);
        } else {
          put<uint32_t>(out, static_cast<uint32_t>(v.array_type()));
          put<uint64_t>(out, x.size());
          for (const auto& e : x) {
            using E = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<X, std::vector<bool>>) {
              put<uint8_t>(out, e ? 1 : 0);
            } else if constexpr (std::is_same_v<E, std::string>) {
              put_string(out, e);
            } else if constexpr (std::is_same_v<E, Value>) {
              encode_payload(out, e);
            } else {
              put<E>(out, e);
            }
          }
        }
      },
      v.data_);
}

void Writer::set(std::string key, Value value) {
  if (key == kAlignmentKey && value.type() == ValueType::U32 && valid_alignment(uint64_t(*value.as_int()))) {
    alignment_ = size_t(*value.as_int());
  }
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

void Writer::set_alignment(size_t alignment) {
  TESSERA_CHECK_MSG(valid_alignment(alignment) && alignment <= UINT32_MAX,
                    "alignment must be a power of two of at least 8 that fits in u32");
  alignment_ = alignment;
  if (alignment != kDefaultAlignment) {
    set(std::string(kAlignmentKey), Value(uint32_t(alignment)));
    return;
  }
  std::erase_if(metadata_, [](const auto& kv) { return kv.first == kAlignmentKey; });
}

void Writer::add(Tensor t) {
  TESSERA_CHECK_MSG(!t.name.empty(), "tensor name is empty");
  TESSERA_CHECK_MSG(t.n_dims >= 1 && t.n_dims <= 4, "n_dims must be 1 to 4");
  TESSERA_CHECK_MSG(is_known_dtype(static_cast<uint32_t>(t.type)), "unknown tensor type");
  uint64_t rows = 1;
  for (int d = 0; d < 4; ++d) {
    TESSERA_CHECK_MSG(t.ne[d] >= 1, "dimensions must be at least 1");
    TESSERA_CHECK_MSG(d < t.n_dims || t.ne[d] == 1, "dimensions past n_dims must be 1");
    if (d > 0) rows *= uint64_t(t.ne[d]);
  }
  TESSERA_CHECK_MSG(t.ne[0] % dtype_traits(t.type).block_size == 0, "ne[0] is not a multiple of the block size");
  TESSERA_CHECK_MSG(dtype_row_size(t.type, t.ne[0]) * rows == t.nbytes, "nbytes does not match type and shape");
  for (const Tensor& other : tensors_) TESSERA_CHECK_MSG(other.name != t.name, "duplicate tensor name");
  tensors_.push_back(std::move(t));
}

void Writer::add_tensor(std::string name, DType type, std::array<int64_t, 4> ne, int n_dims, const void* data,
                        size_t nbytes) {
  const auto* b = static_cast<const uint8_t*>(data);
  add(Tensor{std::move(name), type, ne, n_dims, nbytes, nullptr, std::vector<uint8_t>(b, b + nbytes), {}});
}

void Writer::add_tensor_ref(std::string name, DType type, std::array<int64_t, 4> ne, int n_dims,
                            const void* data, size_t nbytes) {
  add(Tensor{std::move(name), type, ne, n_dims, nbytes, static_cast<const uint8_t*>(data), {}, {}});
}

void Writer::add_tensor_stream(std::string name, DType type, std::array<int64_t, 4> ne, int n_dims, size_t nbytes,
                               Producer produce) {
  TESSERA_CHECK_MSG(produce != nullptr, "a streamed tensor needs a producer");
  add(Tensor{std::move(name), type, ne, n_dims, nbytes, nullptr, {}, std::move(produce)});
}

bool Writer::emit(const ByteSink& sink, Status* produced) const {
  std::vector<uint8_t> head;
  put_bytes(head, "GGUF", 4);
  put<uint32_t>(head, kVersion);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, metadata_.size());
  for (const auto& [key, value] : metadata_) {
    put_string(head, key);
    put<uint32_t>(head, static_cast<uint32_t>(value.type()));
    encode_payload(head, value);
  }
  std::vector<uint64_t> offsets;
  uint64_t data_size = 0;
  for (const Tensor& t : tensors_) {
    put_string(head, t.name);
    put<uint32_t>(head, uint32_t(t.n_dims));
    for (int d = 0; d < t.n_dims; ++d) put<uint64_t>(head, uint64_t(t.ne[d]));
    put<uint32_t>(head, static_cast<uint32_t>(t.type));
    offsets.push_back(align_up(data_size, alignment_));
    put<uint64_t>(head, offsets.back());
    data_size = offsets.back() + t.nbytes;
  }
  head.resize(align_up(head.size(), alignment_), 0);
  if (!sink(head.data(), head.size())) return false;

  const std::vector<uint8_t> zeros(alignment_, 0);
  uint64_t pos = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (offsets[i] > pos && !sink(zeros.data(), size_t(offsets[i] - pos))) return false;
    const Tensor& t = tensors_[i];
    if (t.produce) {
      size_t given = 0;
      bool sink_ok = true;
      Status s = t.produce([&](const uint8_t* p, size_t n) {
        TESSERA_CHECK_MSG(given + n <= t.nbytes, "a producer gave more than its tensor's bytes");
        given += n;
        sink_ok = sink_ok && sink(p, n);
        return sink_ok;
      });
      if (!sink_ok) return false;
      if (!s) {
        *produced = std::move(s);
        return false;
      }
      TESSERA_CHECK_MSG(given == t.nbytes, "a producer gave fewer than its tensor's bytes");
    } else if (!sink(t.bytes(), t.nbytes)) {
      return false;
    }
    pos = offsets[i] + t.nbytes;
  }
  const uint64_t end = pad_end_ ? align_up(pos, alignment_) : pos;
  return end == pos || sink(zeros.data(), size_t(end - pos));
}

std::vector<uint8_t> Writer::to_bytes() const {
  std::vector<uint8_t> out;
  Status produced = Status::ok();
  const bool ok = emit(
      [&](const uint8_t* p, size_t n) {
        out.insert(out.end(), p, p + n);
        return true;
      },
      &produced);
  TESSERA_CHECK_MSG(ok, "a streamed tensor's producer failed in to_bytes");
  return out;
}

Status Writer::write(const std::string& path) const {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Status::error("gguf: " + path + ": cannot create file: " + std::strerror(errno));
  int err = 0;
  Status produced = Status::ok();
  const bool ok = emit(
      [&](const uint8_t* p, size_t n) {
        if (std::fwrite(p, 1, n, f) == n) return true;
        err = errno;
        return false;
      },
      &produced);
  if (std::fclose(f) != 0 && ok) err = errno;
  if (!ok || err != 0) {
    std::remove(path.c_str());
    if (!produced) return produced;
    return Status::error("gguf: " + path + ": write failed: " + std::strerror(err ? err : EIO));
  }
  return Status::ok();
}

}  // namespace tessera::gguf
