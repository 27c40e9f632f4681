// Byte-level BPE ("gpt2" vocabularies), as llama.cpp does it: the pre-tokenizer named by
// tokenizer.ggml.pre cuts the text into pre-tokens; each pre-token's bytes become the
// code points of the GPT-2 byte map (one symbol per byte); adjacent symbols merge by
// tokenizer.ggml.merges, lowest rank first (ties: leftmost first); each final symbol is
// looked up as a token (a symbol that is no token falls back to its bytes' tokens).
// Decoding maps the code points back to bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tessera/status.h"
#include "tokenizer/algorithm.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/vocab.h"

namespace tessera::tok {

class BpeAlgorithm final : public Algorithm {
 public:
  /// Builds the merge table and compiles the pre-tokenizer over `vocab` (which must
  /// outlive the algorithm). An unknown or missing tokenizer.ggml.pre selects llama.cpp's
  /// "default" pre-tokenizer, with a warning naming the value. Errors: no merges.
  static Result<std::unique_ptr<BpeAlgorithm>> create(const Vocab& vocab);

  void encode_text(std::string_view text, bool after_special,
                   std::vector<TokenId>& out) const override;
  std::string piece(TokenId id, bool render_special) const override;
  std::string_view pre_tokenizer_name() const override { return spec_->name; }

  /// The tokens of one pre-token (raw bytes), without pre-tokenizing it.
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;
  /// The pre-tokens of `text` (any bytes), as byte strings of `text`.
  std::vector<std::string> pre_tokenize(std::string_view text) const;

  /// A vocabulary token's text (byte-level code points) as the bytes it stands for;
  /// code points outside the byte map are kept as they are.
  static std::string decode_byte_level(std::string_view text);

 private:
  /// One entry of the merge table: the pair (left, right) of symbols joins into `result`.
  struct Merge {
    uint64_t key;  // left << 32 | right; kEmptyKey: free slot
    int32_t rank;
    int32_t result;
  };
  static constexpr uint64_t kEmptyKey = ~uint64_t{0};

  BpeAlgorithm(const Vocab& vocab, const PreTokenizerSpec& spec, PreTokenizer pre);
  /// `text` (not well-formed UTF-8) with each invalid byte that has no token of its own
  /// replaced by U+FFFD; the other bytes are kept.
  std::string replace_untokenizable_bytes(std::string_view text) const;
  /// The symbol id of `text`: its token id, or an id past the vocabulary for texts that
  /// only occur inside merges.
  int32_t intern(std::string_view text);
  void add_merge(int32_t left, int32_t right, int32_t rank, int32_t result);
  void build_merges(const std::vector<std::string>& merges);
  /// The merge of two symbols, or nullptr.
  const Merge* find_merge(int32_t left, int32_t right) const {
    const uint64_t key =
        (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
    for (size_t i = hash_key(key) & mask_;; i = (i + 1) & mask_) {
      const Merge& m = table_[i];
      if (m.key == key) return &m;
      if (m.key == kEmptyKey) return nullptr;
    }
  }
  static size_t hash_key(uint64_t key) {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32);
  }

  friend class BpeSession;

  const Vocab& vocab_;
  const PreTokenizerSpec* spec_;
  bool ignore_merges_;  // the vocabulary's tokenizer.tessera.ignore_merges, else the spec's
  PreTokenizer pre_;
  std::vector<int32_t> byte_symbol_;  // [256]: the symbol of each byte's code point
  std::unordered_map<std::string, int32_t> extra_ids_;  // texts past the vocabulary
  std::vector<Merge> table_;  // open addressing, a power of two, at most half full
  size_t mask_ = 0;
};

}  // namespace tessera::tok
