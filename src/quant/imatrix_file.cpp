// The importance matrix file: reading with every count checked, writing through a
// temporary file renamed into place.
#include "quant/imatrix_file.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

namespace tessera::quant {
namespace {

// Sanity limits: a name longer than GGUF allows, or more values than any tensor row of a
// stack of experts has, means a corrupt file, not a big model.
constexpr int32_t kMaxNameLen = 65535;
constexpr int32_t kMaxValues = 1 << 28;
constexpr int32_t kMaxEntries = 1 << 20;

class Cursor {
 public:
  explicit Cursor(const std::string& bytes) : bytes_(bytes) {}
  size_t offset() const { return at_; }
  bool at_end() const { return at_ == bytes_.size(); }
  bool read(void* dst, size_t n) {
    if (bytes_.size() - at_ < n) return false;
    std::memcpy(dst, bytes_.data() + at_, n);
    at_ += n;
    return true;
  }
  bool i32(int32_t& v) { return read(&v, 4); }

 private:
  const std::string& bytes_;
  size_t at_ = 0;
};

Status bad(const std::string& path, const Cursor& c, const std::string& what) {
  return Status::error(path + ": not an importance matrix file: " + what + " (at byte " +
                       std::to_string(c.offset()) + ")");
}

}  // namespace

std::vector<float> ImatrixEntry::importance() const {
  std::vector<float> out = values;
  if (ncall > 0) {
    for (float& v : out) v /= float(ncall);
  }
  return out;
}

const ImatrixEntry* Imatrix::find(const std::string& name) const {
  for (const ImatrixEntry& e : entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

Result<Imatrix> read_imatrix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open the importance matrix file");
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  Cursor c(bytes);
  Imatrix m;
  int32_t n_entries = 0;
  if (!c.i32(n_entries)) return bad(path, c, "shorter than its entry count");
  if (n_entries < 1 || n_entries > kMaxEntries) {
    return bad(path, c, "entry count " + std::to_string(n_entries) + " out of range");
  }
  m.entries.resize(size_t(n_entries));
  for (int32_t i = 0; i < n_entries; ++i) {
    ImatrixEntry& e = m.entries[size_t(i)];
    const std::string which = "entry " + std::to_string(i + 1) + " of " + std::to_string(n_entries);
    int32_t len = 0;
    if (!c.i32(len) || len < 1 || len > kMaxNameLen) return bad(path, c, which + ": bad name length");
    e.name.resize(size_t(len));
    if (!c.read(e.name.data(), size_t(len))) return bad(path, c, which + ": truncated name");
    int32_t nval = 0;
    if (!c.i32(e.ncall) || e.ncall < 0) return bad(path, c, which + " (" + e.name + "): bad call count");
    if (!c.i32(nval) || nval < 1 || nval > kMaxValues) {
      return bad(path, c, which + " (" + e.name + "): bad value count");
    }
    e.values.resize(size_t(nval));
    if (!c.read(e.values.data(), size_t(nval) * sizeof(float))) {
      return bad(path, c, which + " (" + e.name + "): truncated values");
    }
  }
  if (!c.at_end()) {
    int32_t len = 0;
    if (!c.i32(m.chunks) || m.chunks < 0) return bad(path, c, "bad chunk count in the trailer");
    if (!c.i32(len) || len < 0 || len > 1 << 20) return bad(path, c, "bad dataset name length");
    m.dataset.resize(size_t(len));
    if (!c.read(m.dataset.data(), size_t(len))) return bad(path, c, "truncated dataset name");
    if (!c.at_end()) return bad(path, c, "bytes after the dataset name");
  }
  return m;
}

Status write_imatrix(const std::string& path, const Imatrix& m) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::error(tmp + ": cannot create");
    auto i32 = [&](int32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
    i32(int32_t(m.entries.size()));
    for (const ImatrixEntry& e : m.entries) {
      i32(int32_t(e.name.size()));
      out.write(e.name.data(), std::streamsize(e.name.size()));
      i32(e.ncall);
      i32(int32_t(e.values.size()));
      out.write(reinterpret_cast<const char*>(e.values.data()), std::streamsize(e.values.size() * sizeof(float)));
    }
    i32(m.chunks);
    i32(int32_t(m.dataset.size()));
    out.write(m.dataset.data(), std::streamsize(m.dataset.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return Status::error(tmp + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::error(path + ": cannot rename " + tmp + " into place");
  }
  return Status::ok();
}

}  // namespace tessera::quant
