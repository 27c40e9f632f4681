// StreamDecoder: token pieces out as well-formed UTF-8, holding back split characters.
#include "tessera/tokenizer.h"
#include "tokenizer/unicode.h"

namespace tessera {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool render_special)
    : tokenizer_(&tokenizer), render_special_(render_special) {}

std::string StreamDecoder::push(TokenId id) {
  pending_ += tokenizer_->token_to_piece(id, render_special_);
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const tok::Utf8Scan scan = tok::scan_utf8(pending_, pos);
    if (scan.kind == tok::Utf8Kind::Truncated) break;  // wait for the bytes that complete it
    if (scan.kind == tok::Utf8Kind::Valid) {
      out.append(pending_, pos, scan.len);
    } else {
      out += tok::kReplacementChar;
    }
    pos += scan.len;
  }
  pending_.erase(0, pos);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  // Whatever is pending is one incomplete sequence: push() keeps nothing else.
  if (!pending_.empty()) out = tok::kReplacementChar;
  pending_.clear();
  return out;
}

}  // namespace tessera
