// GGUF reader/writer: round trips of every value and tensor type, the typed getters,
// Value's human form, file errors, and the real files under shared/.
#include "tessera/gguf.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <limits>

#include "common/test_util.h"

namespace tessera::gguf {
namespace {

namespace fs = std::filesystem;

// A temporary path removed when the test ends.
struct TempPath {
  fs::path path;
  explicit TempPath(const std::string& stem)
      : path(fs::temp_directory_path() / ("tessera_gguf_" + std::to_string(::getpid()) + "_" + stem)) {}
  ~TempPath() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

std::vector<std::pair<std::string, Value>> all_values() {
  std::vector<std::pair<std::string, Value>> kv = {
      {"s.u8", uint8_t(200)},
      {"s.i8", int8_t(-100)},
      {"s.u16", uint16_t(60000)},
      {"s.i16", int16_t(-30000)},
      {"s.u32", uint32_t(4000000000u)},
      {"s.i32", int32_t(-2000000000)},
      {"s.u64", std::numeric_limits<uint64_t>::max()},
      {"s.i64", std::numeric_limits<int64_t>::min()},
      {"s.f32", 3.25f},
      {"s.f64", -1e300},
      {"s.bool_t", true},
      {"s.bool_f", false},
      {"s.str", "hello"},
      {"s.str_empty", ""},
      {"s.str_bytes", std::string("nul\0inside \xc3\xa9 \xff", 16)},
      {"a.u8", Value::array(std::vector<uint8_t>{0, 1, 255})},
      {"a.i8", Value::array(std::vector<int8_t>{-128, 0, 127})},
      {"a.u16", Value::array(std::vector<uint16_t>{1, 65535})},
      {"a.i16", Value::array(std::vector<int16_t>{-32768, 32767})},
      {"a.u32", Value::array(std::vector<uint32_t>{7, 8, 9})},
      {"a.i32", Value::array(std::vector<int32_t>{-1, 2, -3})},
      {"a.u64", Value::array(std::vector<uint64_t>{1, std::numeric_limits<uint64_t>::max()})},
      {"a.i64", Value::array(std::vector<int64_t>{-5, 5})},
      {"a.f32", Value::array(std::vector<float>{0.5f, -2.0f, 1e-30f})},
      {"a.f64", Value::array(std::vector<double>{0.1, 1e200})},
      {"a.bool", Value::array(std::vector<bool>{true, false, true})},
      {"a.str", Value::array(std::vector<std::string>{"a", "", "<0x0A>", "\xe2\x96\x81the"})},
      {"a.nested", Value::array(std::vector<Value>{Value::array(std::vector<int32_t>{1, 2}),
                                                   Value::array(std::vector<std::string>{"x"}),
                                                   Value::array(std::vector<Value>{})})},
  };
  // Empty arrays of every element type keep their element type.
  kv.emplace_back("e.u8", Value::array(std::vector<uint8_t>{}));
  kv.emplace_back("e.i8", Value::array(std::vector<int8_t>{}));
  kv.emplace_back("e.u16", Value::array(std::vector<uint16_t>{}));
  kv.emplace_back("e.i16", Value::array(std::vector<int16_t>{}));
  kv.emplace_back("e.u32", Value::array(std::vector<uint32_t>{}));
  kv.emplace_back("e.i32", Value::array(std::vector<int32_t>{}));
  kv.emplace_back("e.u64", Value::array(std::vector<uint64_t>{}));
  kv.emplace_back("e.i64", Value::array(std::vector<int64_t>{}));
  kv.emplace_back("e.f32", Value::array(std::vector<float>{}));
  kv.emplace_back("e.f64", Value::array(std::vector<double>{}));
  kv.emplace_back("e.bool", Value::array(std::vector<bool>{}));
  kv.emplace_back("e.str", Value::array(std::vector<std::string>{}));
  kv.emplace_back("e.nested", Value::array(std::vector<Value>{}));
  return kv;
}

struct TensorSpec {
  std::string name;
  DType type;
  std::array<int64_t, 4> ne;
  int n_dims;
  std::vector<uint8_t> data;
};

std::vector<TensorSpec> all_tensors() {
  auto bytes = [](size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 7);
    return v;
  };
  return {
      {"t.f32", DType::F32, {4, 3, 1, 1}, 2, bytes(4 * 3 * 4, 1)},
      {"t.f16", DType::F16, {5, 1, 1, 1}, 1, bytes(5 * 2, 2)},  // 10 bytes: next tensor needs padding
      {"t.q4_0", DType::Q4_0, {64, 2, 1, 1}, 2, bytes(2 * 2 * 18, 3)},
      {"t.i32", DType::I32, {5, 1, 2, 1}, 3, bytes(5 * 2 * 4, 4)},
      {"t.f32_4d", DType::F32, {2, 2, 2, 2}, 4, bytes(16 * 4, 5)},
  };
}

Writer make_writer(size_t alignment) {
  Writer w;
  if (alignment != kDefaultAlignment) w.set_alignment(alignment);
  for (auto& [k, v] : all_values()) w.set(k, v);
  for (const TensorSpec& t : all_tensors()) w.add_tensor(t.name, t.type, t.ne, t.n_dims, t.data.data(), t.data.size());
  return w;
}

void expect_matches(const File& f, size_t alignment) {
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), alignment);
  EXPECT_EQ(f.data_offset() % alignment, 0u);
  // Metadata in order (general.alignment comes first when it was set first).
  auto expected = all_values();
  if (alignment != kDefaultAlignment) expected.insert(expected.begin(), {"general.alignment", uint32_t(alignment)});
  ASSERT_EQ(f.metadata().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(f.metadata()[i].first, expected[i].first);
    EXPECT_TRUE(f.metadata()[i].second == expected[i].second) << expected[i].first << ": "
                                                              << f.metadata()[i].second.to_string();
  }
  const auto specs = all_tensors();
  ASSERT_EQ(f.tensors().size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorInfo& t = f.tensors()[i];
    SCOPED_TRACE(specs[i].name);
    EXPECT_EQ(t.name, specs[i].name);
    EXPECT_EQ(t.type, specs[i].type);
    EXPECT_EQ(t.ne, specs[i].ne);
    EXPECT_EQ(t.n_dims, specs[i].n_dims);
    EXPECT_EQ(t.nbytes, specs[i].data.size());
    EXPECT_EQ(t.offset % alignment, 0u);
    EXPECT_EQ(t.data, f.file_data() + f.data_offset() + t.offset);
    EXPECT_EQ(std::memcmp(t.data, specs[i].data.data(), t.nbytes), 0);
    EXPECT_EQ(f.find_tensor(t.name), &t);
  }
  EXPECT_EQ(f.find_tensor("absent"), nullptr);
}

TEST(GgufRoundTrip, BytesDefaultAlignment) {
  auto f = File::from_bytes(make_writer(32).to_bytes(), "rt.gguf");
  ASSERT_TRUE(f) << f.status().message();
  expect_matches(**f, 32);
  EXPECT_EQ((*f)->find("general.alignment"), nullptr);
  EXPECT_EQ((*f)->path(), "rt.gguf");
}

TEST(GgufRoundTrip, BytesAlignment64) {
  auto f = File::from_bytes(make_writer(64).to_bytes());
  ASSERT_TRUE(f) << f.status().message();
  expect_matches(**f, 64);
  ASSERT_NE((*f)->find("general.alignment"), nullptr);
  EXPECT_EQ((*f)->find("general.alignment")->type(), ValueType::U32);
}

TEST(GgufRoundTrip, TempFile) {
  for (size_t alignment : {size_t(32), size_t(64)}) {
    TempPath tmp("roundtrip_" + std::to_string(alignment) + ".gguf");
    const Writer w = make_writer(alignment);
    ASSERT_TRUE(w.write(tmp.path.string()).is_ok());
    auto f = File::open(tmp.path.string());
    ASSERT_TRUE(f) << f.status().message();
    expect_matches(**f, alignment);
    EXPECT_EQ((*f)->file_size(), fs::file_size(tmp.path));
    EXPECT_EQ((*f)->file_size(), w.to_bytes().size());
  }
}

TEST(GgufRoundTrip, ReferencedTensorAndVersion2) {
  const std::vector<float> data = {1, 2, 3, 4};
  Writer w;
  w.add_tensor_ref("x", DType::F32, {4, 1, 1, 1}, 1, data.data(), 16);
  std::vector<uint8_t> bytes = w.to_bytes();
  bytes[4] = 2;  // versions 2 and 3 share the little-endian layout
  auto f = File::from_bytes(bytes);
  ASSERT_TRUE(f) << f.status().message();
  EXPECT_EQ((*f)->version(), 2u);
  EXPECT_EQ(std::memcmp((*f)->tensors()[0].data, data.data(), 16), 0);
}

TEST(GgufRoundTrip, EmptyFileHasNoKeysOrTensors) {
  auto f = File::from_bytes(Writer().to_bytes());
  ASSERT_TRUE(f) << f.status().message();
  EXPECT_TRUE((*f)->metadata().empty());
  EXPECT_TRUE((*f)->tensors().empty());
}

TEST(GgufWriter, SetReplacesInPlaceAndAlignmentKey) {
  Writer w;
  w.set("a", 1);
  w.set("b", 2);
  w.set("a", "three");
  w.set_alignment(128);
  w.set_alignment(32);  // back to the default: the key goes away
  w.set("general.alignment", uint32_t(16));
  EXPECT_EQ(w.alignment(), 16u);
  auto f = File::from_bytes(w.to_bytes());
  ASSERT_TRUE(f) << f.status().message();
  ASSERT_EQ((*f)->metadata().size(), 3u);
  EXPECT_EQ((*f)->metadata()[0].first, "a");
  EXPECT_EQ(*(*f)->metadata()[0].second.as_string(), "three");
  EXPECT_EQ((*f)->metadata()[1].first, "b");
  EXPECT_EQ((*f)->alignment(), 16u);
}

TEST(GgufWriter, WriteErrorNamesPathAndOsError) {
  const Status s = Writer().write("/nonexistent-dir/x.gguf");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("/nonexistent-dir/x.gguf"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("No such file"), std::string::npos) << s.message();
}

TEST(GgufOpen, FileErrors) {
  auto missing = File::open("/nonexistent-dir/y.gguf");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("/nonexistent-dir/y.gguf"), std::string::npos);
  EXPECT_NE(missing.status().message().find("open"), std::string::npos);

  auto dir = File::open(fs::temp_directory_path().string());
  ASSERT_FALSE(dir);
  EXPECT_NE(dir.status().message().find("not a regular file"), std::string::npos) << dir.status().message();

  TempPath empty("empty.gguf");
  ASSERT_TRUE(Writer().write(empty.path.string()).is_ok());
  fs::resize_file(empty.path, 0);
  auto e = File::open(empty.path.string());
  ASSERT_FALSE(e);
  EXPECT_NE(e.status().message().find("shorter"), std::string::npos) << e.status().message();
  EXPECT_NE(e.status().message().find(empty.path.string()), std::string::npos) << e.status().message();
}

TEST(GgufGetters, TypedAccessAndMessages) {
  Writer w;
  w.set("n", int32_t(-7));
  w.set("big", std::numeric_limits<uint64_t>::max());
  w.set("x", 2.5f);
  w.set("s", "text");
  w.set("b", true);
  w.set("arr", Value::array(std::vector<float>{1}));
  auto r = File::from_bytes(w.to_bytes(), "g.gguf");
  ASSERT_TRUE(r) << r.status().message();
  const File& f = **r;
  EXPECT_EQ(*f.get_int("n"), -7);
  EXPECT_EQ(*f.get_float("x"), 2.5);
  EXPECT_EQ(*f.get_float("n"), -7.0);  // integers convert
  EXPECT_EQ(*f.get_string("s"), "text");
  EXPECT_EQ(*f.get_bool("b"), true);

  EXPECT_EQ(f.get_int("llama.block_count").status().message(), "gguf: g.gguf: key 'llama.block_count' is missing");
  EXPECT_EQ(f.get_int("s").status().message(), "gguf: g.gguf: key 's' has type string, expected an integer");
  EXPECT_NE(f.get_int("big").status().message().find("out of range"), std::string::npos);
  EXPECT_NE(f.get_float("s").status().message().find("expected a number"), std::string::npos);
  EXPECT_NE(f.get_string("n").status().message().find("has type i32, expected a string"), std::string::npos);
  EXPECT_NE(f.get_bool("n").status().message().find("expected a bool"), std::string::npos);
  EXPECT_NE(f.get_string("arr").status().message().find("array of f32"), std::string::npos);
}

TEST(GgufValue, AccessorsAndTypes) {
  EXPECT_EQ(Value().type(), ValueType::U8);
  EXPECT_EQ(Value(uint64_t(1) << 63).as_int(), std::nullopt);
  EXPECT_EQ(Value(int16_t(-3)).as_int(), -3);
  EXPECT_EQ(Value(true).as_int(), std::nullopt);
  EXPECT_EQ(Value(1.5).as_int(), std::nullopt);
  EXPECT_EQ(Value(uint8_t(4)).as_float(), 4.0);
  EXPECT_EQ(Value("s").as_float(), std::nullopt);
  EXPECT_EQ(Value(false).as_bool(), false);
  EXPECT_EQ(Value(1).as_bool(), std::nullopt);
  EXPECT_EQ(Value("lit").type(), ValueType::String);  // not a bool
  const Value a = Value::array(std::vector<float>{1, 2});
  EXPECT_EQ(a.type(), ValueType::Array);
  EXPECT_EQ(a.array_type(), ValueType::F32);
  EXPECT_EQ(a.array_size(), 2u);
  EXPECT_NE(a.as_array<float>(), nullptr);
  EXPECT_EQ(a.as_array<double>(), nullptr);
  EXPECT_EQ(a.as_string_array(), nullptr);
  EXPECT_EQ(a.as_int(), std::nullopt);
  EXPECT_EQ(Value("x").array_size(), 0u);
  EXPECT_EQ(Value::array(std::vector<bool>{true}).as_array<bool>()->at(0), true);
  EXPECT_EQ(value_type_name(ValueType::F64), "f64");
  EXPECT_EQ(value_type_name(static_cast<ValueType>(99)), "unknown");
}

TEST(GgufValue, ToString) {
  std::vector<int32_t> many(32000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = int32_t(i);
  EXPECT_EQ(Value::array(many).to_string(), "[0, 1, 2, 3, 4, 5, 6, 7, ... (32000 items)]");
  EXPECT_EQ(Value::array(many).to_string(3), "[0, 1, 2, ... (32000 items)]");
  EXPECT_EQ(Value::array(std::vector<std::string>{"a", "b\n"}).to_string(), "[\"a\", \"b\\n\"]");
  EXPECT_EQ(Value::array(std::vector<bool>{true, false}).to_string(), "[true, false]");
  EXPECT_EQ(Value::array(std::vector<uint8_t>{}).to_string(), "[]");
  EXPECT_EQ(Value(std::string("q\"\x01")).to_string(), "\"q\\\"\\x01\"");
  EXPECT_EQ(Value(int8_t(-4)).to_string(), "-4");
  EXPECT_EQ(Value(uint8_t(250)).to_string(), "250");
  EXPECT_EQ(Value(1e-5f).to_string(), "1e-05");
  EXPECT_EQ(Value(10000.0f).to_string(), "10000");
  EXPECT_EQ(Value(false).to_string(), "false");
  const Value nested = Value::array(std::vector<Value>{Value::array(std::vector<int8_t>{1, 2})});
  EXPECT_EQ(nested.to_string(), "[[1, 2]]");
}

// ---- real files from llama.cpp -----------------------------------------------------

TEST(GgufShared, Stories260K) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto r = File::open(path);
  ASSERT_TRUE(r) << r.status().message();
  const File& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(*f.get_string("general.architecture"), "llama");
  const TensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, DType::F32);
  EXPECT_EQ(emb->n_dims, 2);
  EXPECT_EQ(emb->ne[0], 64);
  EXPECT_EQ(emb->ne[1], 512);
  EXPECT_EQ(emb->nbytes, 64u * 512u * 4u);
  EXPECT_EQ(*f.get_int("llama.block_count"), 5);
  const Value* tokens = f.find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  ASSERT_NE(tokens->as_string_array(), nullptr);
  EXPECT_EQ(tokens->array_size(), 512u);
}

TEST(GgufShared, EveryModelAndVocabOpens) {
  size_t opened = 0;
  for (const char* dir : {"models", "vocab"}) {
    const std::string folder = test::shared_folder(dir);
    if (folder.empty()) continue;
    for (const auto& entry : fs::directory_iterator(folder)) {
      if (entry.path().extension() != ".gguf") continue;
      auto r = File::open(entry.path().string());
      EXPECT_TRUE(r) << r.status().message();
      if (!r) continue;
      ++opened;
      EXPECT_TRUE((*r)->find("general.architecture") != nullptr) << entry.path();
      for (const auto& [key, value] : (*r)->metadata()) EXPECT_FALSE(value.to_string().empty()) << key;
      // Writing the parsed file back reproduces every key and tensor.
      Writer w;
      if ((*r)->alignment() != kDefaultAlignment) w.set_alignment((*r)->alignment());
      for (const auto& [key, value] : (*r)->metadata()) w.set(key, value);
      for (const TensorInfo& t : (*r)->tensors()) w.add_tensor_ref(t.name, t.type, t.ne, t.n_dims, t.data, t.nbytes);
      auto back = File::from_bytes(w.to_bytes());
      ASSERT_TRUE(back) << back.status().message();
      EXPECT_EQ((*back)->metadata().size(), (*r)->metadata().size());
      EXPECT_EQ((*back)->tensors().size(), (*r)->tensors().size());
    }
  }
  if (opened == 0) GTEST_SKIP() << "no shared GGUF files found under " << test::shared_dir();
}

}  // namespace
}  // namespace tessera::gguf
