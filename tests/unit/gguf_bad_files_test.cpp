// GGUF reader robustness: a corpus of crafted bad files, every truncation of a valid
// file, and random byte flips. Every bad input must give an error that names the
// problem, and nothing may crash (the suite runs under ASan/UBSan).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>

#include "common/test_util.h"
#include "core/check.h"
#include "tessera/gguf.h"

namespace tessera::gguf {
namespace {

using Bytes = std::vector<uint8_t>;

// A small valid file whose fields the cases below find by content.
Writer base_writer() {
  Writer w;
  w.set("general.architecture", "llama");
  w.set("test.count", uint32_t(7));
  w.set("test.flag", true);
  w.set("test.name", "abc");
  w.set("test.list", Value::array(std::vector<int32_t>{1, 2, 3}));
  w.set("test.words", Value::array(std::vector<std::string>{"x", "yz"}));
  static const std::vector<uint8_t> a(8 * 2 * 4, 0x11), b(18, 0x22);
  w.add_tensor_ref("tensor_a", DType::F32, {8, 2, 1, 1}, 2, a.data(), a.size());
  w.add_tensor_ref("tensor_b", DType::Q4_0, {32, 1, 1, 1}, 1, b.data(), b.size());
  return w;
}

Bytes base_bytes() { return base_writer().to_bytes(); }

// Position of the first occurrence of `text` (a key or tensor name) in the file.
size_t find_text(const Bytes& b, std::string_view text) {
  const auto it = std::search(b.begin(), b.end(), text.begin(), text.end());
  TESSERA_CHECK_MSG(it != b.end(), "test file lacks a field it should have");
  return size_t(it - b.begin());
}

template <typename T>
void poke(Bytes& b, size_t at, T v) {
  ASSERT_LE(at + sizeof(T), b.size());
  std::memcpy(b.data() + at, &v, sizeof(T));
}

// Offsets of fields, found from their names.
size_t key_type_at(const Bytes& b, std::string_view key) { return find_text(b, key) + key.size(); }
size_t key_value_at(const Bytes& b, std::string_view key) { return key_type_at(b, key) + 4; }
size_t tensor_ndims_at(const Bytes& b, std::string_view name) { return find_text(b, name) + name.size(); }
size_t tensor_dim_at(const Bytes& b, std::string_view name, int d) { return tensor_ndims_at(b, name) + 4 + 8 * d; }
size_t tensor_type_at(const Bytes& b, std::string_view name, int n_dims) { return tensor_dim_at(b, name, n_dims); }
size_t tensor_offset_at(const Bytes& b, std::string_view name, int n_dims) {
  return tensor_type_at(b, name, n_dims) + 4;
}

Bytes with_key(const std::string& key, Value v) {
  Writer w = base_writer();
  w.set(key, std::move(v));
  return w.to_bytes();
}

// `b` with `n` zero bytes appended: room for a count past a limit to fit in the file, so
// that the limit, not the file size, refuses it.
Bytes padded(Bytes b, uint64_t n) {
  b.resize(b.size() + size_t(n), 0);
  return b;
}

Value nested(int depth) {
  Value v = Value::array(std::vector<uint8_t>{1});
  for (int i = 1; i < depth; ++i) v = Value::array(std::vector<Value>{v});
  return v;
}

struct BadCase {
  const char* name;
  std::function<Bytes()> make;
  std::vector<const char*> expect;  // every word must appear in the message
};

std::vector<BadCase> bad_cases() {
  auto patched = [](auto fn) {
    return [fn] {
      Bytes b = base_bytes();
      fn(b);
      return b;
    };
  };
  return {
      {"empty", [] { return Bytes{}; }, {"shorter", "header"}},
      {"short_header", [] { Bytes b = base_bytes(); b.resize(20); return b; }, {"shorter"}},
      {"bad_magic", patched([](Bytes& b) { b[3] = 'X'; }), {"magic", "offset 0"}},
      {"version_1", patched([](Bytes& b) { poke<uint32_t>(b, 4, 1); }), {"version 1"}},
      {"version_4", patched([](Bytes& b) { poke<uint32_t>(b, 4, 4); }), {"version 4"}},
      {"tensor_count_huge", patched([](Bytes& b) { poke<uint64_t>(b, 8, uint64_t(1) << 40); }),
       {"tensor_count", "cannot fit"}},
      {"kv_count_huge", patched([](Bytes& b) { poke<uint64_t>(b, 16, ~uint64_t(0)); }),
       {"metadata_kv_count", "cannot fit"}},
      {"key_length_beyond_eof", patched([](Bytes& b) { poke<uint64_t>(b, 24, uint64_t(1) << 40); }),
       {"key #0", "offset 24", "beyond end of file"}},
      {"empty_key", patched([](Bytes& b) { poke<uint64_t>(b, 24, 0); }), {"key #0", "empty"}},
      {"invalid_utf8_key", patched([](Bytes& b) { b[find_text(b, "test.count")] = 0xff; }), {"UTF-8", "\\xff"}},
      {"duplicate_key", patched([](Bytes& b) { std::memcpy(&b[find_text(b, "test.name")], "test.list", 9); }),
       {"duplicate key", "test.list"}},
      {"unknown_value_type", patched([](Bytes& b) { poke<uint32_t>(b, key_type_at(b, "test.count"), 13); }),
       {"test.count", "unknown value type 13"}},
      {"bad_bool", patched([](Bytes& b) { b[key_value_at(b, "test.flag")] = 2; }), {"test.flag", "bool"}},
      {"string_value_beyond_eof",
       patched([](Bytes& b) { poke<uint64_t>(b, key_value_at(b, "test.name"), 1u << 30); }),
       {"test.name", "string length", "beyond end of file"}},
      {"unknown_array_type", patched([](Bytes& b) { poke<uint32_t>(b, key_value_at(b, "test.list"), 99); }),
       {"test.list", "unknown array element type 99"}},
      {"array_count_beyond_eof",
       patched([](Bytes& b) { poke<uint64_t>(b, key_value_at(b, "test.list") + 4, uint64_t(1) << 50); }),
       {"test.list", "count", "cannot fit"}},
      {"string_array_count_overflow",
       patched([](Bytes& b) { poke<uint64_t>(b, key_value_at(b, "test.words") + 4, ~uint64_t(0) / 4); }),
       {"test.words", "cannot fit"}},
      {"array_depth", [] { return with_key("test.deep", nested(kMaxArrayDepth + 1)); }, {"test.deep", "nested deeper"}},
      {"alignment_type", [] { return with_key("general.alignment", "64"); }, {"general.alignment", "has type string"}},
      {"alignment_u64", [] { return with_key("general.alignment", uint64_t(64)); }, {"general.alignment", "u64"}},
      {"alignment_zero", [] { return with_key("general.alignment", uint32_t(0)); }, {"general.alignment", "power of two"}},
      // Found by the fuzzer: alignment 1 put an F16 tensor at an odd address.
      {"alignment_1", [] { return with_key("general.alignment", uint32_t(1)); }, {"general.alignment", "is 1", "at least 8"}},
      {"alignment_4", [] { return with_key("general.alignment", uint32_t(4)); }, {"general.alignment", "is 4"}},
      {"alignment_48", [] { return with_key("general.alignment", uint32_t(48)); }, {"general.alignment", "is 48"}},
      {"empty_tensor_name", patched([](Bytes& b) { poke<uint64_t>(b, find_text(b, "tensor_a") - 8, 0); }),
       {"tensor #0 name", "empty"}},
      {"tensor_name_beyond_eof",
       patched([](Bytes& b) { poke<uint64_t>(b, find_text(b, "tensor_b") - 8, b.size()); }),
       {"tensor #1 name", "beyond end of file"}},
      {"invalid_utf8_tensor_name", patched([](Bytes& b) { b[find_text(b, "tensor_a") + 7] = 0xc3; }),
       {"tensor #0 name", "UTF-8"}},
      {"n_dims_0", patched([](Bytes& b) { poke<uint32_t>(b, tensor_ndims_at(b, "tensor_a"), 0); }),
       {"tensor_a", "n_dims is 0"}},
      {"n_dims_5", patched([](Bytes& b) { poke<uint32_t>(b, tensor_ndims_at(b, "tensor_a"), 5); }),
       {"tensor_a", "n_dims is 5"}},
      {"dim_zero", patched([](Bytes& b) { poke<uint64_t>(b, tensor_dim_at(b, "tensor_a", 1), 0); }),
       {"tensor_a", "dimension 1 is 0"}},
      {"dim_negative", patched([](Bytes& b) { poke<int64_t>(b, tensor_dim_at(b, "tensor_a", 0), -8); }),
       {"tensor_a", "dimension 0 is -8"}},
      {"element_count_overflow", patched([](Bytes& b) {
         poke<uint64_t>(b, tensor_dim_at(b, "tensor_a", 0), uint64_t(1) << 40);
         poke<uint64_t>(b, tensor_dim_at(b, "tensor_a", 1), uint64_t(1) << 40);
       }),
       {"tensor_a", "element count overflows"}},
      {"byte_size_overflow",  // 2^62 elements fit in int64, their 2^64 bytes do not
       patched([](Bytes& b) { poke<uint64_t>(b, tensor_dim_at(b, "tensor_a", 0), uint64_t(1) << 61); }),
       {"tensor_a", "byte size overflows"}},
      {"unknown_tensor_type", patched([](Bytes& b) { poke<uint32_t>(b, tensor_type_at(b, "tensor_b", 1), 4); }),
       {"tensor_b", "unknown tensor type 4"}},
      {"huge_tensor_type", patched([](Bytes& b) { poke<uint32_t>(b, tensor_type_at(b, "tensor_b", 1), 1000); }),
       {"tensor_b", "unknown tensor type 1000"}},
      {"block_size", patched([](Bytes& b) { poke<uint64_t>(b, tensor_dim_at(b, "tensor_b", 0), 16); }),
       {"tensor_b", "block size 32"}},
      {"duplicate_tensor", patched([](Bytes& b) { b[find_text(b, "tensor_b") + 7] = 'a'; }),
       {"tensor_a", "duplicate tensor name"}},
      {"offset_unaligned",
       patched([](Bytes& b) { poke<uint64_t>(b, tensor_offset_at(b, "tensor_b", 1), 72); }),
       {"tensor_b", "offset 72", "alignment 32"}},
      {"data_beyond_eof",
       patched([](Bytes& b) { poke<uint64_t>(b, tensor_offset_at(b, "tensor_b", 1), 4096); }),
       {"tensor_b", "beyond end of file"}},
      {"offset_overflow",
       patched([](Bytes& b) { poke<uint64_t>(b, tensor_offset_at(b, "tensor_b", 1), ~uint64_t(31)); }),
       {"tensor_b", "overflows"}},
      {"overlap", patched([](Bytes& b) { poke<uint64_t>(b, tensor_offset_at(b, "tensor_b", 1), 32); }),
       {"tensor_b", "overlaps", "tensor_a"}},
      {"truncated_data", [] { Bytes b = base_bytes(); b.pop_back(); return b; }, {"tensor_b", "beyond end of file"}},
      // The limits of tessera/limits.h, each with a file big enough that only the limit refuses.
      {"kv_count_over_limit", [] {
         Bytes b = padded(base_bytes(), (limits::kMaxMetadataKeys + 1) * 14);
         poke<uint64_t>(b, 16, limits::kMaxMetadataKeys + 1);
         return b;
       },
       {"metadata_kv_count", "kMaxMetadataKeys = 65536"}},
      {"tensor_count_over_limit", [] {
         Bytes b = padded(base_bytes(), (limits::kMaxTensors + 1) * 33);
         poke<uint64_t>(b, 8, limits::kMaxTensors + 1);
         return b;
       },
       {"tensor_count", "kMaxTensors = 65536"}},
      {"key_over_name_limit", [] {
         Bytes b = padded(base_bytes(), limits::kMaxNameBytes + 1);
         poke<uint64_t>(b, 24, limits::kMaxNameBytes + 1);
         return b;
       },
       {"key #0", "string length 65536", "kMaxNameBytes"}},
      {"tensor_name_over_limit", [] {
         Bytes b = padded(base_bytes(), limits::kMaxNameBytes + 1);
         poke<uint64_t>(b, find_text(b, "tensor_a") - 8, limits::kMaxNameBytes + 1);
         return b;
       },
       {"tensor #0 name", "kMaxNameBytes"}},
      {"string_over_limit", [] {
         Bytes b = padded(base_bytes(), limits::kMaxStringBytes + 1);
         poke<uint64_t>(b, key_value_at(b, "test.name"), limits::kMaxStringBytes + 1);
         return b;
       },
       {"test.name", "string length 16777217", "kMaxStringBytes"}},
      {"array_over_limit", [] {
         Bytes b = padded(with_key("test.bytes", Value::array(std::vector<uint8_t>{1})), limits::kMaxArrayElements + 1);
         poke<uint64_t>(b, key_value_at(b, "test.bytes") + 4, limits::kMaxArrayElements + 1);
         return b;
       },
       {"test.bytes", "count 16777217", "kMaxArrayElements"}},
      {"string_array_over_limit", [] {
         Bytes b = padded(base_bytes(), (limits::kMaxArrayElements + 1) * 8);
         poke<uint64_t>(b, key_value_at(b, "test.words") + 4, limits::kMaxArrayElements + 1);
         return b;
       },
       {"test.words", "kMaxArrayElements"}},
      {"bool_array_bad_element", [] {  // a u8 array retyped as bool
         Bytes b = with_key("test.bools", Value::array(std::vector<uint8_t>{1, 0, 7}));
         poke<uint32_t>(b, key_value_at(b, "test.bools"), uint32_t(ValueType::Bool));
         return b;
       },
       {"test.bools", "bool element 2 is 7"}},
      {"alignment_not_u32_array", [] { return with_key("general.alignment", Value::array(std::vector<uint32_t>{32})); },
       {"general.alignment", "array of u32"}},
      {"dims_past_int64", patched([](Bytes& b) { poke<uint64_t>(b, tensor_dim_at(b, "tensor_a", 0), ~uint64_t(0)); }),
       {"tensor_a", "dimension 0 is -1"}},
      {"type_change_past_eof",  // Q4_0 -> F32: four times the bytes, past the end
       patched([](Bytes& b) { poke<uint32_t>(b, tensor_type_at(b, "tensor_b", 1), uint32_t(DType::F32)); }),
       {"tensor_b", "beyond end of file"}},
  };
}

TEST(GgufBadFiles, BaseFileIsValid) {
  auto f = File::from_bytes(base_bytes());
  ASSERT_TRUE(f) << f.status().message();
  EXPECT_EQ((*f)->tensors().size(), 2u);
}

TEST(GgufBadFiles, CorpusIsRejectedWithAMessage) {
  const auto cases = bad_cases();
  ASSERT_GE(cases.size(), 53u);
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto f = File::from_bytes(c.make(), "bad.gguf");
    ASSERT_FALSE(f) << "accepted";
    const std::string& msg = f.status().message();
    EXPECT_EQ(msg.rfind("gguf: bad.gguf: ", 0), 0u) << msg;
    for (const char* word : c.expect) EXPECT_NE(msg.find(word), std::string::npos) << "'" << word << "' not in: " << msg;
  }
}

TEST(GgufBadFiles, NestingUpToTheLimitLoads) {
  auto f = File::from_bytes(with_key("test.deep", nested(kMaxArrayDepth)));
  ASSERT_TRUE(f) << f.status().message();
  EXPECT_TRUE(*(*f)->find("test.deep") == nested(kMaxArrayDepth));
}

TEST(GgufBadFiles, EveryTruncationIsRejected) {
  const Bytes full = base_bytes();
  ASSERT_TRUE(File::from_bytes(full));
  for (size_t n = 0; n < full.size(); ++n) {
    auto f = File::from_bytes(Bytes(full.begin(), full.begin() + long(n)));
    ASSERT_FALSE(f) << "prefix of " << n << " bytes accepted";
    EXPECT_FALSE(f.status().message().empty());
  }
}

// Touches everything a loaded file exposes, so that ASan sees any bad pointer.
size_t touch(const File& f) {
  size_t sum = 0;
  for (const auto& [key, value] : f.metadata()) sum += key.size() + value.to_string(4).size();
  for (const TensorInfo& t : f.tensors()) sum += t.data[0] + t.data[t.nbytes - 1];
  return sum;
}

TEST(GgufBadFiles, RandomByteFlipsNeverCrash) {
  Writer w = base_writer();
  w.set("test.nested", Value::array(std::vector<Value>{Value::array(std::vector<float>{1, 2}),
                                                      Value::array(std::vector<std::string>{"q"})}));
  w.set("test.bools", Value::array(std::vector<bool>{true, false}));
  const Bytes full = w.to_bytes();
  std::mt19937 rng(20240501);
  size_t loaded = 0, rejected = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    Bytes b = full;
    const int flips = 1 + int(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t at = rng() % b.size();
      b[at] = (rng() % 2) ? uint8_t(rng()) : uint8_t(b[at] ^ (1u << (rng() % 8)));
    }
    auto f = File::from_bytes(std::move(b));
    if (f) {
      ++loaded;
      volatile size_t sink = touch(**f);
      (void)sink;
    } else {
      ++rejected;
      EXPECT_FALSE(f.status().message().empty());
    }
  }
  EXPECT_EQ(loaded + rejected, 2000u);
  EXPECT_GT(rejected, 0u);
}

// Flips bytes in the metadata and tensor-info region of a real file (its vocabulary).
TEST(GgufBadFiles, RandomFlipsInARealFileHeader) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto real = File::open(path);
  ASSERT_TRUE(real) << real.status().message();
  const Bytes full((*real)->file_data(), (*real)->file_data() + (*real)->file_size());
  const size_t header = size_t((*real)->data_offset());
  std::mt19937 rng(7);
  for (int iter = 0; iter < 200; ++iter) {
    Bytes b = full;
    for (int k = 0; k < 3; ++k) b[rng() % header] = uint8_t(rng());
    auto f = File::from_bytes(std::move(b), "flipped.gguf");
    if (f) {
      volatile size_t sink = touch(**f);
      (void)sink;
    } else {
      EXPECT_FALSE(f.status().message().empty());
    }
  }
}

}  // namespace
}  // namespace tessera::gguf
