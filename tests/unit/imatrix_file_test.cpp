// The importance matrix file (quant/imatrix_file.h): a write/read round trip, the
// reference's own file (../shared/models/mini-llama.imatrix) read and rewritten byte for
// byte, and each kind of malformed file refused with a message that says what is wrong.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "quant/imatrix_file.h"

namespace tessera::quant {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("tessera_imatrix_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

// Builds files by hand, field by field.
struct Bytes {
  std::string s;
  Bytes& i32(int32_t v) {
    s.append(reinterpret_cast<const char*>(&v), 4);
    return *this;
  }
  Bytes& str(const std::string& v) {
    s += v;
    return *this;
  }
  Bytes& floats(int n, float v) {
    for (int i = 0; i < n; ++i) s.append(reinterpret_cast<const char*>(&v), 4);
    return *this;
  }
};

Imatrix sample() {
  Imatrix m;
  m.entries.push_back({"blk.0.attn_q.weight", 10, {1.0f, 2.5f, 0.0f, 40.0f}});
  m.entries.push_back({"blk.0.ffn_down_exps.weight", 3, std::vector<float>(12, 0.75f)});
  m.chunks = 10;
  m.dataset = "calibration.txt";
  return m;
}

TEST(ImatrixFile, RoundTrip) {
  const std::string path = temp_path("round_trip.dat");
  const Imatrix m = sample();
  ASSERT_TRUE(write_imatrix(path, m).is_ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  Result<Imatrix> r = read_imatrix(path);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->entries.size(), m.entries.size());
  for (size_t i = 0; i < m.entries.size(); ++i) {
    EXPECT_EQ(r->entries[i].name, m.entries[i].name);
    EXPECT_EQ(r->entries[i].ncall, m.entries[i].ncall);
    EXPECT_EQ(r->entries[i].values, m.entries[i].values);
  }
  EXPECT_EQ(r->chunks, 10);
  EXPECT_EQ(r->dataset, "calibration.txt");
  ASSERT_NE(r->find("blk.0.attn_q.weight"), nullptr);
  EXPECT_EQ(r->find("blk.0.attn_q.weight")->importance()[3], 4.0f);  // 40 / ncall 10
  EXPECT_EQ(r->find("output.weight"), nullptr);
  std::filesystem::remove(path);
}

TEST(ImatrixFile, WithoutTrailerIsRead) {
  // Files of older reference builds end after the last entry.
  const std::string path = temp_path("no_trailer.dat");
  write_bytes(path, Bytes().i32(1).i32(4).str("abcd").i32(2).i32(3).floats(3, 1.0f).s);
  Result<Imatrix> r = read_imatrix(path);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->chunks, 0);
  EXPECT_EQ(r->dataset, "");
  EXPECT_EQ(r->entries[0].importance(), std::vector<float>(3, 0.5f));
  std::filesystem::remove(path);
}

TEST(ImatrixFile, ReferenceFileRoundTripsByteForByte) {
  TESSERA_REQUIRE_SHARED(ref, "models/mini-llama.imatrix");
  Result<Imatrix> r = read_imatrix(ref);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->entries.size(), 14u);  // 2 layers x 7 matrices (../shared/README.md)
  EXPECT_EQ(r->chunks, 100);
  const std::string path = temp_path("copy.dat");
  ASSERT_TRUE(write_imatrix(path, *r).is_ok());
  EXPECT_EQ(read_bytes(path), read_bytes(ref));
  std::filesystem::remove(path);
}

struct BadCase {
  const char* what;
  std::string bytes;
  const char* message;  // a part of the error
};

TEST(ImatrixFile, MalformedFilesRefusedByName) {
  const std::string good_entry = Bytes().i32(4).str("abcd").i32(2).i32(2).floats(2, 1.0f).s;
  const BadCase cases[] = {
      {"empty", "", "shorter than its entry count"},
      {"zero entries", Bytes().i32(0).s, "entry count 0 out of range"},
      {"negative entries", Bytes().i32(-3).s, "entry count -3 out of range"},
      {"missing entry", Bytes().i32(2).s + good_entry, "entry 2 of 2: bad name length"},
      {"zero name length", Bytes().i32(1).i32(0).s, "entry 1 of 1: bad name length"},
      {"truncated name", Bytes().i32(1).i32(10).str("abc").s, "entry 1 of 1: truncated name"},
      {"negative ncall", Bytes().i32(1).i32(4).str("abcd").i32(-1).s,
       "entry 1 of 1 (abcd): bad call count"},
      {"zero values", Bytes().i32(1).i32(4).str("abcd").i32(1).i32(0).s,
       "entry 1 of 1 (abcd): bad value count"},
      {"truncated values", Bytes().i32(1).i32(4).str("abcd").i32(1).i32(8).floats(3, 1.0f).s,
       "entry 1 of 1 (abcd): truncated values"},
      {"bad chunk count", Bytes().i32(1).s + good_entry + Bytes().i32(-5).s,
       "bad chunk count in the trailer"},
      {"bad dataset length", Bytes().i32(1).s + good_entry + Bytes().i32(1).i32(-2).s,
       "bad dataset name length"},
      {"truncated dataset", Bytes().i32(1).s + good_entry + Bytes().i32(1).i32(9).str("ab").s,
       "truncated dataset name"},
      {"trailing bytes", Bytes().i32(1).s + good_entry + Bytes().i32(1).i32(2).str("abXY").s,
       "bytes after the dataset name"},
  };
  const std::string path = temp_path("bad.dat");
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    write_bytes(path, c.bytes);
    Result<Imatrix> r = read_imatrix(path);
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
  }
  std::filesystem::remove(path);
  Result<Imatrix> missing = read_imatrix(path);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
}

TEST(ImatrixFile, UnwritablePathLeavesNoFile) {
  const std::string dir = temp_path("no_such_dir");
  const Status s = write_imatrix(dir + "/x.dat", sample());
  EXPECT_FALSE(s.is_ok());
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.dat"));
}

}  // namespace
}  // namespace tessera::quant
