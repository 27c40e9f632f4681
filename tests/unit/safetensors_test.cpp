// The safetensors reader and writer (tessera/safetensors.h): a written file reads back
// tensor for tensor; the 8-bit floats decode as the OCP FP8 formats define them; every
// malformed file is refused with a message naming what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/fp16.h"
#include "tessera/safetensors.h"

namespace tessera::safetensors {
namespace {

template <typename T>
std::span<const uint8_t> bytes_of(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

/// A file image: the 8-byte header length, `header`, then `data`.
std::vector<uint8_t> image(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  out.reserve(8 + header.size() + data.size());
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(uint64_t(header.size()) >> (8 * i)));
  for (char c : header) out.push_back(uint8_t(c));
  for (uint8_t b : data) out.push_back(b);
  return out;
}

std::string error_of(std::vector<uint8_t> bytes) {
  Result<std::unique_ptr<File>> f = File::from_bytes(std::move(bytes), "bad.safetensors");
  return f ? std::string("(loaded)") : f.status().message();
}

TEST(Safetensors, WrittenFileReadsBack) {
  const std::string path = ::testing::TempDir() + "/st_roundtrip.safetensors";
  const std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  std::vector<uint16_t> h, b;
  for (float x : a) {
    h.push_back(f32_to_f16(x));
    b.push_back(f32_to_bf16(x));
  }
  const std::vector<int64_t> ids = {3, -1, 1LL << 40};
  const std::vector<uint8_t> f8 = {0x38, 0xB8, 0x7E, 0x01};  // 1, -1, 448, 2^-9
  ASSERT_TRUE(write(path,
                    {{"model.a", Dtype::F32, {2, 3}, bytes_of(a)},
                     {"model.h", Dtype::F16, {3, 2}, bytes_of(h)},
                     {"model.b", Dtype::BF16, {6}, bytes_of(b)},
                     {"ids", Dtype::I64, {3}, bytes_of(ids)},
                     {"fp8", Dtype::F8_E4M3, {2, 2}, bytes_of(f8)},
                     {"empty", Dtype::F32, {0, 4}, {}}},
                    {{"format", "pt"}})
                  .is_ok());
  Result<std::unique_ptr<File>> f = File::open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  ASSERT_EQ((*f)->tensors().size(), 6u);
  for (const char* name : {"model.a", "model.h", "model.b"}) {
    const TensorInfo* t = (*f)->find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->n_elements(), 6);
    std::vector<float> got(6);
    ASSERT_TRUE(to_float(*t, got).is_ok());
    EXPECT_EQ(got, a) << name;  // every value is exact in half and bfloat16
  }
  EXPECT_EQ((*f)->find("model.a")->shape, (std::vector<int64_t>{2, 3}));
  const TensorInfo* t8 = (*f)->find("fp8");
  std::vector<float> got8(4);
  ASSERT_TRUE(to_float(*t8, got8).is_ok());
  EXPECT_EQ(got8, (std::vector<float>{1.0f, -1.0f, 448.0f, std::ldexp(1.0f, -9)}));
  const TensorInfo* ti = (*f)->find("ids");
  std::vector<int64_t> got_ids(3);
  std::memcpy(got_ids.data(), ti->data, 24);
  EXPECT_EQ(got_ids, ids);
  std::vector<float> no(3);
  const Status s = to_float(*ti, no);
  EXPECT_NE(s.message().find("'ids' is I64, not a floating-point type"), std::string::npos) << s.message();
  EXPECT_EQ((*f)->find("empty")->n_elements(), 0);
  EXPECT_EQ((*f)->find("absent"), nullptr);
  std::filesystem::remove(path);
}

TEST(Safetensors, EightBitFloatsDecodeAsTheOcpFormats) {
  std::vector<uint8_t> e4(256), e5(256);
  for (int i = 0; i < 256; ++i) e4[size_t(i)] = e5[size_t(i)] = uint8_t(i);
  Result<std::unique_ptr<File>> f = File::from_bytes(
      image(R"({"a":{"dtype":"F8_E4M3","shape":[256],"data_offsets":[0,256]},)"
            R"("b":{"dtype":"F8_E5M2","shape":[256],"data_offsets":[256,512]}})",
            [&] {
              std::vector<uint8_t> d = e4;
              d.insert(d.end(), e5.begin(), e5.end());
              return d;
            }()),
      "fp8");
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  std::vector<float> a(256), b(256);
  ASSERT_TRUE(to_float(*(*f)->find("a"), a).is_ok());
  ASSERT_TRUE(to_float(*(*f)->find("b"), b).is_ok());
  for (int i = 0; i < 256; ++i) {
    // E4M3FN: bias 7, no infinities, S.1111.111 is NaN.
    const int e = (i >> 3) & 15, m = i & 7;
    const double mag = e == 0 ? m / 8.0 * std::ldexp(1.0, -6) : (1 + m / 8.0) * std::ldexp(1.0, e - 7);
    if ((i & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(a[size_t(i)])) << i;
    } else {
      EXPECT_EQ(double(a[size_t(i)]), (i & 0x80 ? -mag : mag)) << i;
    }
    // E5M2: bias 15, IEEE infinities and NaNs.
    const int e5x = (i >> 2) & 31, m5 = i & 3;
    if (e5x == 31) {
      EXPECT_TRUE(m5 == 0 ? std::isinf(b[size_t(i)]) : std::isnan(b[size_t(i)])) << i;
    } else {
      const double mag5 = e5x == 0 ? m5 / 4.0 * std::ldexp(1.0, -14) : (1 + m5 / 4.0) * std::ldexp(1.0, e5x - 15);
      EXPECT_EQ(double(b[size_t(i)]), (i & 0x80 ? -mag5 : mag5)) << i;
    }
  }
  EXPECT_EQ(a[0x7E], 448.0f);  // the largest E4M3FN value
}

struct BadCase {
  const char* what;
  std::vector<uint8_t> bytes;
  const char* message;
};

TEST(Safetensors, MalformedFilesAreRefusedByName) {
  const std::string one = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::vector<uint8_t> huge(8, 0xFF);
  const std::vector<BadCase> cases = {
      {"short", {1, 2, 3}, "fewer than the 8 of a header length"},
      {"huge header length", huge, "exceeds the limit"},
      {"header past the end", [&] { auto v = image(one, std::vector<uint8_t>(8)); v[0] = 200; return v; }(),
       "runs past the end of the file"},
      {"not an object", image("[1,2]", {}), "does not start with '{'"},
      {"not JSON", image("{\"w\":", {}), "the header is not JSON"},
      {"duplicate", image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                          std::vector<uint8_t>(8)),
       "names 'w' twice"},
      {"dtype", image(R"({"w":{"dtype":"F17","shape":[2],"data_offsets":[0,8]}})", std::vector<uint8_t>(8)),
       "tensor 'w' 'dtype' \"F17\" is not one of"},
      {"no shape", image(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", std::vector<uint8_t>(8)),
       "tensor 'w' has no 'shape'"},
      {"negative dim", image(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", std::vector<uint8_t>(8)),
       "negative or non-integer size"},
      {"overflow", image(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                         std::vector<uint8_t>(8)),
       "overflows"},
      {"offsets lie about size", image(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                                       std::vector<uint8_t>(8)),
       "tensor 'w' has 8 bytes (data_offsets [0,8]), but F32 [3] needs 12"},
      {"reversed offsets", image(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", std::vector<uint8_t>(8)),
       "is not [begin, end]"},
      {"gap", image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::vector<uint8_t>(8)),
       "starts at data offset 4, but the tensors before it end at 0 (a gap)"},
      {"overlap", image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                        std::vector<uint8_t>(8)),
       "(overlap)"},
      {"truncated", image(one, std::vector<uint8_t>(5)), "cover 8 bytes of data, but the file holds 5 (truncated)"},
      {"left over", image(one, std::vector<uint8_t>(12)), "(bytes left over)"},
      {"metadata", image(R"({"__metadata__":{"format":1}})", {}), "'__metadata__' value of 'format' is not a string"},
      {"entry not object", image(R"({"w":[1]})", {}), "tensor 'w' is array, not an object"},
  };
  for (const BadCase& c : cases) {
    const std::string m = error_of(c.bytes);
    EXPECT_NE(m.find(c.message), std::string::npos) << c.what << ": " << m;
    EXPECT_NE(m.find("bad.safetensors"), std::string::npos) << c.what << ": " << m;
  }
  EXPECT_NE(error_of({}).find("empty"), std::string::npos);
  const Result<std::unique_ptr<File>> missing = File::open("/nonexistent/x.safetensors");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/x.safetensors"), std::string::npos);
}

TEST(Safetensors, WriterRefusesWhatItCannotWrite) {
  const std::string path = ::testing::TempDir() + "/st_bad.safetensors";
  const std::vector<float> v = {1, 2, 3};
  EXPECT_NE(write(path, {{"w", Dtype::F32, {2}, bytes_of(v)}}).message().find("has 12 bytes for 2 F32 elements"),
            std::string::npos);
  EXPECT_NE(write(path, {{"w", Dtype::F32, {3}, bytes_of(v)}, {"w", Dtype::F32, {3}, bytes_of(v)}})
                .message()
                .find("'w' is reserved or given twice"),
            std::string::npos);
  EXPECT_NE(write(path, {{"__metadata__", Dtype::F32, {3}, bytes_of(v)}}).message().find("reserved"),
            std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tessera::safetensors
