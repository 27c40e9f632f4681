// The vocabulary of a tokenizer: token texts, scores and types, special token ids and
// the tokenizer.ggml.* flags, with a text -> id index. Shared by every algorithm.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.h"
#include "tessera/tokenizer.h"

namespace tessera::gguf {
class File;
}

namespace tessera::tok {

/// No token (absent special id, failed lookup).
inline constexpr TokenId kNoToken = -1;

/// One vocabulary entry.
struct TokenData {
  std::string text;  // as stored: spaces appear as U+2581 in SentencePiece vocabularies
  float score = 0.0f;
  TokenType type = TokenType::Normal;
};

/// Special token ids; kNoToken where the vocabulary has none.
struct SpecialIds {
  TokenId bos = kNoToken;
  TokenId eos = kNoToken;
  TokenId unk = kNoToken;
  TokenId sep = kNoToken;
  TokenId pad = kNoToken;
  TokenId eot = kNoToken;
  TokenId eom = kNoToken;
  TokenId mask = kNoToken;
  // Fill-in-the-middle: prefix, suffix, middle, padding, repository, file separator.
  TokenId fim_pre = kNoToken;
  TokenId fim_suf = kNoToken;
  TokenId fim_mid = kNoToken;
  TokenId fim_pad = kNoToken;
  TokenId fim_rep = kNoToken;
  TokenId fim_sep = kNoToken;
};

/// tokenizer.ggml.add_bos_token / add_eos_token / add_space_prefix.
struct VocabFlags {
  bool add_bos = true;
  bool add_eos = false;
  bool add_space_prefix = true;
};

/// What byte-level BPE ("gpt2") vocabularies add: tokenizer.ggml.merges ("a b" strings,
/// rank = index; absent is not the same as empty) and tokenizer.ggml.pre.
struct BpeData {
  std::optional<std::vector<std::string>> merges;
  std::string pre;  // "" when the key is absent
  /// tokenizer.tessera.ignore_merges (which `convert` writes from tokenizer.json's
  /// model.ignore_merges): a pre-token that is a token is taken whole. Absent: the
  /// pre-tokenizer's own rule (llama.cpp's: only llama3's ignores merges).
  std::optional<bool> ignore_merges;
  /// tokenizer.tessera.pre_regexes (written by `convert` where tokenizer.json's regexes
  /// differ from llama.cpp's form of them): run instead of those of `pre`.
  std::optional<std::vector<std::string>> pre_regexes;
};

/// The defaults llama.cpp uses for a model name when the GGUF keys are absent
/// ("llama": bos 1, eos 2, unk 0, add_bos, add_space_prefix; "gpt2": bos = eos = 11, no
/// add_bos unless the pre-tokenizer asks for it (llama3), no space prefix).
SpecialIds default_special_ids(std::string_view model);
VocabFlags default_flags(std::string_view model);

class Vocab {
 public:
  /// Reads tokenizer.ggml.model, tokens, scores, token_type, merges, pre, the special ids
  /// and the flags. Errors: missing model/tokens, mistyped arrays, size mismatches, scores
  /// absent for a "llama" vocabulary, merges absent for a "gpt2" one, a merge that is not
  /// "left right". Special ids out of range keep their default (as llama.cpp).
  static Result<Vocab> from_gguf(const gguf::File& file);

  /// Builds from plain lists. `scores` and `types` may be empty (0 / Normal); otherwise
  /// they must have one entry per token. Special ids must be kNoToken or in range.
  /// As llama.cpp, tokens whose text names an end of turn or a fill-in-the-middle role
  /// ("<|im_end|>", "<|fim_prefix|>", ...) fill the matching special ids left unset and
  /// become control tokens.
  static Result<Vocab> from_lists(std::string model, std::vector<std::string> tokens,
                                  std::vector<float> scores, std::vector<int32_t> types,
                                  SpecialIds ids, VocabFlags flags, BpeData bpe = {});

  const std::string& model() const { return model_; }
  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  bool contains(TokenId id) const { return id >= 0 && id < size(); }
  /// Entry `id` (must be in range: checked).
  const TokenData& token(TokenId id) const;

  /// Id of the token whose text is exactly `text`, or kNoToken. When texts repeat, the
  /// last id wins (as llama.cpp).
  TokenId find(std::string_view text) const {
    const uint64_t h = hash_text(text);
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & slot_mask_;; i = (i + 1) & slot_mask_) {
      const Slot& slot = slots_[i];
      if (slot.id == kNoToken) return kNoToken;
      if (slot.tag == tag && tokens_[static_cast<size_t>(slot.id)].text == text) return slot.id;
    }
  }
  /// The token for one raw byte: "<0xNN>", else the one-byte text, else unk.
  TokenId byte_token(uint8_t byte) const { return byte_tokens_[byte]; }

  /// The hash of the text index (FNV-1a, folded: token texts are short, so a byte loop
  /// beats a block hash here).
  static uint64_t hash_text(std::string_view text) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    return h ^ (h >> 29);
  }

  const SpecialIds& special() const { return special_; }
  const VocabFlags& flags() const { return flags_; }
  /// tokenizer.ggml.merges; nullptr when the vocabulary has none.
  const std::vector<std::string>* merges() const { return bpe_.merges ? &*bpe_.merges : nullptr; }
  /// tokenizer.ggml.pre ("" when absent).
  const std::string& pre() const { return bpe_.pre; }
  /// tokenizer.tessera.ignore_merges, when the file has it.
  std::optional<bool> ignore_merges() const { return bpe_.ignore_merges; }
  /// tokenizer.tessera.pre_regexes; nullptr when the file has none.
  const std::vector<std::string>* pre_regexes() const { return bpe_.pre_regexes ? &*bpe_.pre_regexes : nullptr; }
  /// Tokens that end generation: EOS, EOT, EOM, FIM pad/repo/separator, and tokens whose
  /// text llama.cpp treats as an end of turn ("<|eot_id|>", "<|im_end|>", ...). Sorted.
  const std::vector<TokenId>& eog_ids() const { return eog_ids_; }
  /// Control, user-defined and unknown tokens, longest text first (ties: lower id first):
  /// the order in which they are cut out of the input.
  const std::vector<TokenId>& special_tokens() const { return special_tokens_; }

 private:
  Vocab() = default;  // built only by from_lists

  /// One entry of the open-addressing text -> id index (linear probing).
  struct Slot {
    uint32_t tag;  // high half of the text's hash
    TokenId id;    // kNoToken: empty
  };

  Status build();
  void build_index();
  /// Fills unset eot/eom/fim ids from token texts and collects the end-of-generation set.
  void detect_special_texts();

  std::string model_;
  std::vector<TokenData> tokens_;
  std::vector<Slot> slots_;  // a power of two, at most half full
  size_t slot_mask_ = 0;
  std::vector<TokenId> byte_tokens_;
  std::vector<TokenId> special_tokens_;
  SpecialIds special_;
  VocabFlags flags_;
  BpeData bpe_;
  std::vector<TokenId> eog_ids_;
};

}  // namespace tessera::tok
