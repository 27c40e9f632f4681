// read_sentencepiece_model (hf_vocab.h): SentencePiece's tokenizer.model, a protobuf
// ModelProto, read with a minimal wire-format reader (every length checked against what is
// left). Read: pieces (field 1: SentencePiece{1 piece, 2 score, 3 type}), the trainer
// spec's special ids (field 2: unk_id 40, bos_id 41, eos_id 42, pad_id 43) and the
// normalizer's add_dummy_prefix (field 3: NormalizerSpec field 3). The piece types are
// SentencePiece's, which GGUF numbers alike (normal 1, unknown 2, control 3, user-defined
// 4, unused 5, byte 6). Ids beyond the pieces, up to config.json's vocab_size, become
// "[PAD<id>]" (unused, score -1000) as the reference pads them.
#include <cstring>
#include <fstream>
#include <iterator>

#include "convert/hf_vocab.h"

namespace tessera::convert {
namespace {

/// One protobuf message's bytes, read field by field.
class Wire {
 public:
  Wire(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
  bool done() const { return p_ == end_; }

  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      const uint8_t b = *p_++;
      v |= uint64_t(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }

  /// The next field's number and wire type, and its payload: `value` for varints and fixed
  /// widths, `bytes` for length-delimited ones. False on a malformed or truncated field.
  bool next(uint32_t& field, uint32_t& wire, uint64_t& value, Wire& bytes) {
    uint64_t key = 0;
    if (!varint(key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff) return false;
    field = uint32_t(key >> 3);
    wire = uint32_t(key & 7);
    switch (wire) {
      case 0:
        return varint(value);
      case 1:
        return fixed(8, value);
      case 5:
        return fixed(4, value);
      case 2: {
        uint64_t n = 0;
        if (!varint(n) || n > uint64_t(end_ - p_)) return false;
        bytes = Wire(p_, size_t(n));
        p_ += n;
        return true;
      }
      default:
        return false;
    }
  }

  std::string str() const {
    return std::string(reinterpret_cast<const char*>(p_), size_t(end_ - p_));
  }

 private:
  bool fixed(size_t n, uint64_t& v) {
    if (size_t(end_ - p_) < n) return false;
    v = 0;
    std::memcpy(&v, p_, n);  // little-endian, as protobuf and this host
    p_ += n;
    return true;
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

Status bad(const std::filesystem::path& file, const std::string& what) {
  return Status::error("convert: " + file.string() + ": " + what);
}

Status read_piece(const std::filesystem::path& file, Wire m, HfVocab& v) {
  std::string piece;
  float score = 0;
  uint64_t type = kNormal;
  uint32_t field = 0, wire = 0;
  uint64_t value = 0;
  Wire bytes(nullptr, 0);
  while (!m.done()) {
    if (!m.next(field, wire, value, bytes))
      return bad(file, "piece " + std::to_string(v.tokens.size()) + " is malformed");
    if (field == 1 && wire == 2) piece = bytes.str();
    if (field == 2 && wire == 5) {
      const uint32_t bits = uint32_t(value);
      std::memcpy(&score, &bits, 4);
    }
    if (field == 3 && wire == 0) type = value;
  }
  if (type < kNormal || type > kByte) {
    return bad(file, "piece " + std::to_string(v.tokens.size()) + " has type " +
                         std::to_string(type) + ", not 1..6");
  }
  v.tokens.push_back(std::move(piece));
  v.scores.push_back(score);
  v.types.push_back(int32_t(type));
  return Status::ok();
}

Status read_trainer(const std::filesystem::path& file, Wire m, HfVocab& v) {
  uint32_t field = 0, wire = 0;
  uint64_t value = 0;
  Wire bytes(nullptr, 0);
  while (!m.done()) {
    if (!m.next(field, wire, value, bytes)) return bad(file, "the trainer spec is malformed");
    if (wire != 0) continue;
    const int64_t id = int64_t(int32_t(uint32_t(value)));  // int32 fields: -1 is "none"
    if (field == 40) v.unk_id = id;
    if (field == 41) v.bos_id = id;
    if (field == 42) v.eos_id = id;
    if (field == 43) v.pad_id = id;
  }
  return Status::ok();
}

Status read_normalizer(const std::filesystem::path& file, Wire m, HfVocab& v) {
  uint32_t field = 0, wire = 0;
  uint64_t value = 0;
  Wire bytes(nullptr, 0);
  while (!m.done()) {
    if (!m.next(field, wire, value, bytes)) return bad(file, "the normalizer spec is malformed");
    if (field == 3 && wire == 0) v.add_space_prefix = value != 0;
  }
  return Status::ok();
}

}  // namespace

Result<HfVocab> read_sentencepiece_model(const std::filesystem::path& file, int64_t vocab_size) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return bad(file, "cannot be read");
  const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  HfVocab v;
  v.model = "llama";
  v.pre = "default";
  Wire m(data.data(), data.size());
  uint32_t field = 0, wire = 0;
  uint64_t value = 0;
  Wire bytes(nullptr, 0);
  while (!m.done()) {
    if (!m.next(field, wire, value, bytes))
      return bad(file, "is not a SentencePiece model (malformed protobuf)");
    if (wire != 2) continue;
    if (field == 1) TESSERA_RETURN_IF_ERROR(read_piece(file, bytes, v));
    if (field == 2) TESSERA_RETURN_IF_ERROR(read_trainer(file, bytes, v));
    if (field == 3) TESSERA_RETURN_IF_ERROR(read_normalizer(file, bytes, v));
  }
  if (v.tokens.empty()) return bad(file, "is not a SentencePiece model (no pieces)");
  if (vocab_size > (int64_t(1) << 24))
    return bad(file, "config.json's vocab_size " + std::to_string(vocab_size) + " is out of range");
  for (int64_t i = int64_t(v.tokens.size()); i < vocab_size; ++i) {
    v.tokens.push_back("[PAD" + std::to_string(i) + "]");
    v.scores.push_back(-1000.0f);
    v.types.push_back(kUnused);
  }
  return v;
}

}  // namespace tessera::convert
