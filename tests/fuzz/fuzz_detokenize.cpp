// Fuzzes tokenizer decoding: the input as little-endian u16 token ids (reduced modulo the
// vocabulary size) through each vocabulary; byte 0 picks the vocabulary and whether
// control tokens are rendered. Whole decoding, pieces and the streaming decoder.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_support.h"

using namespace tessera;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  fuzz::tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& toks = fuzz::tokenizers();
  const Tokenizer& tok = *toks[(data[0] >> 1) % toks.size()];
  const bool render_special = data[0] & 1;
  std::vector<TokenId> ids;
  for (size_t i = 1; i + 1 < size; i += 2) ids.push_back(TokenId((data[i] | data[i + 1] << 8) % tok.n_vocab()));
  size_t n = tok.decode(ids).size();
  StreamDecoder stream(tok, render_special);
  for (const TokenId id : ids) {
    n += tok.token_to_piece(id, render_special).size();
    n += stream.push(id).size();
  }
  n += stream.flush().size();
  volatile size_t sink = n;
  (void)sink;
  return 0;
}
