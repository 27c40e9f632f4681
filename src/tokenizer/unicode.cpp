#include "tokenizer/unicode.h"

#include <array>

namespace tessera::tok {
namespace {

/// The bytes that byte-level BPE keeps as their own code point.
constexpr bool is_printable_byte(int b) {
  return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

struct ByteMap {
  std::array<uint32_t, 256> to_cpt{};
  std::array<int16_t, 512> from_cpt{};  // every mapped code point is below U+0200
  std::array<std::array<char, 2>, 256> utf8{};
  std::array<uint8_t, 256> utf8_len{};

  ByteMap() {
    from_cpt.fill(-1);
    uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cpt = is_printable_byte(b) ? static_cast<uint32_t>(b) : next++;
      to_cpt[static_cast<size_t>(b)] = cpt;
      from_cpt[cpt] = static_cast<int16_t>(b);
      std::string s;
      append_utf8(cpt, s);
      utf8_len[static_cast<size_t>(b)] = static_cast<uint8_t>(s.size());
      for (size_t i = 0; i < s.size(); ++i) utf8[static_cast<size_t>(b)][i] = s[i];
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

bool is_continuation(uint8_t c) { return (c & 0xC0) == 0x80; }

}  // namespace

Utf8Scan scan_utf8(std::string_view text, size_t pos) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data()) + pos;
  const size_t avail = text.size() - pos;
  const uint8_t lead = s[0];
  if (lead < 0x80) return {Utf8Kind::Valid, 1, lead};
  // Length, payload bits of the lead byte, and the range allowed for the second byte
  // (narrower than 80..BF after E0, ED, F0 and F4: no overlongs, surrogates or > U+10FFFF).
  size_t need = 0;
  uint32_t cpt = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 2;
    cpt = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 3;
    cpt = lead & 0x0Fu;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 4;
    cpt = lead & 0x07u;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return {Utf8Kind::Invalid, 1, 0};
  }
  for (size_t i = 1; i < need; ++i) {
    if (i >= avail) return {Utf8Kind::Truncated, i, 0};
    const uint8_t c = s[i];
    const bool ok = i == 1 ? (c >= lo && c <= hi) : is_continuation(c);
    if (!ok) return {Utf8Kind::Invalid, i, 0};
    cpt = (cpt << 6) | (c & 0x3Fu);
  }
  return {Utf8Kind::Valid, need, cpt};
}

bool is_valid_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    // ASCII fast path: eight bytes at a time while no high bit is set.
    while (pos + 8 <= text.size()) {
      uint64_t word = 0;
      for (size_t i = 0; i < 8; ++i)
        word |= uint64_t{static_cast<uint8_t>(text[pos + i])} << (8 * i);
      if (word & 0x8080808080808080ull) break;
      pos += 8;
    }
    if (pos >= text.size()) break;
    const Utf8Scan scan = scan_utf8(text, pos);
    if (scan.kind != Utf8Kind::Valid) return false;
    pos += scan.len;
  }
  return true;
}

void append_utf8(uint32_t cpt, std::string& out) {
  if (cpt < 0x80) {
    out += static_cast<char>(cpt);
  } else if (cpt < 0x800) {
    out += static_cast<char>(0xC0 | (cpt >> 6));
    out += static_cast<char>(0x80 | (cpt & 0x3F));
  } else if (cpt < 0x10000) {
    out += static_cast<char>(0xE0 | (cpt >> 12));
    out += static_cast<char>(0x80 | ((cpt >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cpt & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cpt >> 18));
    out += static_cast<char>(0x80 | ((cpt >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cpt >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cpt & 0x3F));
  }
}

uint32_t byte_to_codepoint(uint8_t byte) { return byte_map().to_cpt[byte]; }

int codepoint_to_byte(uint32_t cpt) {
  return cpt < byte_map().from_cpt.size() ? byte_map().from_cpt[cpt] : -1;
}

std::string_view byte_to_utf8(uint8_t byte) {
  const ByteMap& map = byte_map();
  return {map.utf8[byte].data(), map.utf8_len[byte]};
}

}  // namespace tessera::tok
