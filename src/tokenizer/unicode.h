// UTF-8 scanning (strict, as the Unicode standard defines well-formed sequences) and the
// byte <-> code point map of byte-level BPE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::tok {

/// U+FFFD REPLACEMENT CHARACTER, in UTF-8.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

/// What starts at a position of a byte string.
enum class Utf8Kind {
  Valid,      // a complete, well-formed sequence of `len` bytes
  Truncated,  // the `len` bytes left are a proper prefix of a well-formed sequence
  Invalid,    // the `len` bytes (at least 1) are the maximal ill-formed subpart
};

struct Utf8Scan {
  Utf8Kind kind;
  size_t len;
  uint32_t cpt;  // the code point when kind == Valid
};

/// Scans the sequence starting at text[pos] (pos < text.size()). Well-formed means no
/// overlong forms, no surrogates, nothing above U+10FFFF.
Utf8Scan scan_utf8(std::string_view text, size_t pos);

/// True when the whole string is well-formed UTF-8.
bool is_valid_utf8(std::string_view text);

/// Appends the UTF-8 form of `cpt` (which must be a valid scalar value).
void append_utf8(uint32_t cpt, std::string& out);

/// Byte-level BPE (GPT-2): byte b stands for the code point byte_to_codepoint(b). The
/// printable bytes 33-126, 161-172 and 174-255 stand for themselves; the other 68 bytes
/// map, in increasing order, to U+0100, U+0101, ...
uint32_t byte_to_codepoint(uint8_t byte);
/// The byte that code point `cpt` stands for, or -1 when it is not in the map.
int codepoint_to_byte(uint32_t cpt);
/// The UTF-8 text of byte_to_codepoint(byte) (1 or 2 bytes).
std::string_view byte_to_utf8(uint8_t byte);

}  // namespace tessera::tok
