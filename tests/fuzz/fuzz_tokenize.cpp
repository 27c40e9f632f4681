// Fuzzes tokenizer encoding: arbitrary bytes (invalid UTF-8 included) through each
// vocabulary of ../shared/vocab and the default model's. Byte 0 picks the vocabulary and
// the flags (add_special, parse_special); the rest is the text. The ids must be in range,
// and decoding them (whole and streamed) must not fail.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

using namespace tessera;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  fuzz::tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& toks = fuzz::tokenizers();
  const Tokenizer& tok = *toks[(data[0] >> 2) % toks.size()];
  const bool add_special = data[0] & 1, parse_special = data[0] & 2;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::vector<TokenId> ids = tok.encode(text, add_special, parse_special);
  for (const TokenId id : ids) {
    if (id < 0 || id >= tok.n_vocab()) fuzz::property_failed("encode gave an id outside the vocabulary");
  }
  // Nothing is lost silently, except ASCII bytes the vocabulary has no token for (dropped
  // as llama.cpp drops them; invalid UTF-8 without a token becomes U+FFFD instead).
  const bool ascii_missing = std::any_of(text.begin(), text.end(), [&](char c) {
    return uint8_t(c) < 0x80 && tok.vocab().find(tok::byte_to_utf8(uint8_t(c))) == tok::kNoToken;
  });
  if (!parse_special && !add_special && !text.empty() && ids.empty() && !ascii_missing) {
    fuzz::property_failed("a non-empty text encoded to no tokens");
  }
  std::string whole = tok.decode(ids);
  StreamDecoder stream(tok);
  std::string streamed;
  for (const TokenId id : ids) streamed += stream.push(id);
  streamed += stream.flush();
  volatile size_t n = whole.size() + streamed.size();
  (void)n;
  return 0;
}
