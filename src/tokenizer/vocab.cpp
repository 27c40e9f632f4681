#include "tokenizer/vocab.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "core/check.h"
#include "tessera/gguf.h"
#include "tessera/log.h"
#include "tokenizer/pretokenize.h"

namespace tessera::tok {
namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";
constexpr std::string_view kPreKey = "tokenizer.ggml.pre";

std::string describe_type(const gguf::Value& v) {
  std::string name(gguf::value_type_name(v.type()));
  if (v.is_array()) name += " of " + std::string(gguf::value_type_name(v.array_type()));
  return name;
}

Status key_error(const gguf::File& file, std::string_view key, const std::string& what) {
  return Status::error("tokenizer: " + file.path() + ": key '" + std::string(key) + "' " + what);
}

/// The array at `key` with element type T; nullptr with *status set when present but
/// mistyped, nullptr with *status ok when absent.
template <typename T>
const std::vector<T>* find_array(const gguf::File& file, std::string_view key, const char* expected,
                                 Status* status) {
  *status = Status::ok();
  const gguf::Value* v = file.find(key);
  if (v == nullptr) return nullptr;
  const std::vector<T>* array = v->as_array<T>();
  if (array == nullptr) {
    *status = key_error(file, key, "has type " + describe_type(*v) + ", expected " + expected);
  }
  return array;
}

/// Reads one special id into *id; absent keys and out-of-range values keep *id.
Status read_special_id(const gguf::File& file, std::string_view key, size_t n_tokens, TokenId* id) {
  if (file.find(key) == nullptr) return Status::ok();
  Result<int64_t> value = file.get_int(key);
  if (!value) return value.status().with_context("tokenizer");
  if (*value >= 0 && *value < static_cast<int64_t>(n_tokens)) {
    *id = static_cast<TokenId>(*value);
  } else if (*value != -1 && *value != 0xFFFFFFFFll) {  // both spell "none"
    log(LogLevel::Warn, "tokenizer: %s = %lld is not a token id (n_vocab %zu); keeping %d",
        std::string(key).c_str(), static_cast<long long>(*value), n_tokens, *id);
  }
  return Status::ok();
}

Status read_special_ids(const gguf::File& file, size_t n_tokens, SpecialIds* ids) {
  const std::pair<std::string_view, TokenId*> keys[] = {
      {"tokenizer.ggml.bos_token_id", &ids->bos},
      {"tokenizer.ggml.eos_token_id", &ids->eos},
      {"tokenizer.ggml.unknown_token_id", &ids->unk},
      {"tokenizer.ggml.seperator_token_id", &ids->sep},  // sic: the key GGUF files carry
      {"tokenizer.ggml.padding_token_id", &ids->pad},
      {"tokenizer.ggml.eot_token_id", &ids->eot},
      {"tokenizer.ggml.eom_token_id", &ids->eom},
      {"tokenizer.ggml.mask_token_id", &ids->mask},
      {"tokenizer.ggml.fim_pre_token_id", &ids->fim_pre},
      {"tokenizer.ggml.fim_suf_token_id", &ids->fim_suf},
      {"tokenizer.ggml.fim_mid_token_id", &ids->fim_mid},
      {"tokenizer.ggml.fim_pad_token_id", &ids->fim_pad},
      {"tokenizer.ggml.fim_rep_token_id", &ids->fim_rep},
      {"tokenizer.ggml.fim_sep_token_id", &ids->fim_sep},
      // Older names of the first three FIM ids; read last, so they win (as llama.cpp).
      {"tokenizer.ggml.prefix_token_id", &ids->fim_pre},
      {"tokenizer.ggml.suffix_token_id", &ids->fim_suf},
      {"tokenizer.ggml.middle_token_id", &ids->fim_mid},
  };
  for (const auto& [key, id] : keys) {
    TESSERA_RETURN_IF_ERROR(read_special_id(file, key, n_tokens, id));
  }
  return Status::ok();
}

Status read_flag(const gguf::File& file, std::string_view key, bool* flag) {
  if (file.find(key) == nullptr) return Status::ok();
  Result<bool> value = file.get_bool(key);
  if (!value) return value.status().with_context("tokenizer");
  *flag = *value;
  return Status::ok();
}

Status read_flags(const gguf::File& file, VocabFlags* flags) {
  TESSERA_RETURN_IF_ERROR(read_flag(file, "tokenizer.ggml.add_bos_token", &flags->add_bos));
  TESSERA_RETURN_IF_ERROR(read_flag(file, "tokenizer.ggml.add_eos_token", &flags->add_eos));
  return read_flag(file, "tokenizer.ggml.add_space_prefix", &flags->add_space_prefix);
}

TokenType to_token_type(int32_t raw) {
  if (raw < 0 || raw > static_cast<int32_t>(TokenType::Byte)) return TokenType::Undefined;
  return static_cast<TokenType>(raw);
}

bool is_special_type(TokenType type) {
  return type == TokenType::Control || type == TokenType::UserDefined || type == TokenType::Unknown;
}

/// tokenizer.ggml.pre and tokenizer.ggml.merges into *bpe; merges are required for "gpt2".
Status read_bpe_data(const gguf::File& file, const std::string& model, BpeData* bpe) {
  if (file.find(kPreKey) != nullptr) {
    Result<std::string> pre = file.get_string(kPreKey);
    if (!pre) return pre.status().with_context("tokenizer");
    bpe->pre = *pre;
  }
  if (file.find("tokenizer.tessera.ignore_merges") != nullptr) {
    bool ignore = false;
    TESSERA_RETURN_IF_ERROR(read_flag(file, "tokenizer.tessera.ignore_merges", &ignore));
    bpe->ignore_merges = ignore;
  }
  Status status;
  const auto* regexes = find_array<std::string>(file, "tokenizer.tessera.pre_regexes", "an array of strings", &status);
  TESSERA_RETURN_IF_ERROR(status);
  if (regexes != nullptr) bpe->pre_regexes = *regexes;
  const auto* merges = find_array<std::string>(file, kMergesKey, "an array of strings", &status);
  TESSERA_RETURN_IF_ERROR(status);
  if (merges != nullptr) {
    // "left right", split at the first space after the first byte (as bpe.cpp reads them).
    for (size_t i = 0; i < merges->size(); ++i) {
      const std::string& merge = (*merges)[i];
      const size_t space = merge.find(' ', 1);
      if (space == std::string::npos || space + 1 == merge.size()) {
        return key_error(file, kMergesKey, "entry " + std::to_string(i) + " " +
                                               gguf::Value(merge.substr(0, 64)).to_string() +
                                               " is not two pieces separated by a space");
      }
    }
    bpe->merges = *merges;
  } else if (model == "gpt2") {
    return key_error(file, kMergesKey, "is missing (a \"gpt2\" vocabulary needs merges)");
  }
  return Status::ok();
}

/// Texts llama.cpp recognises as roles (its workaround for ids missing from the metadata).
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>",      "<|im_end|>", "<|end|>", "<end_of_turn>",         "<|endoftext|>",
    "<|end_of_text|>", "<EOT>",      "_<EOT>",  "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
constexpr std::string_view kFimPreTexts[] = {"<|fim_prefix|>",  "<fim-prefix>", "<fim_prefix>",
                                             "<｜fim▁begin｜>", "<PRE>",        "▁<PRE>",
                                             "<|code_prefix|>"};
constexpr std::string_view kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                             "<｜fim▁hole｜>", "<SUF>",        "▁<SUF>",
                                             "<|code_suffix|>"};
constexpr std::string_view kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                             "<｜fim▁end｜>",  "<MID>",        "▁<MID>",
                                             "<|code_middle|>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                             "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
constexpr std::string_view kEogTexts[] = {"<|eot_id|>",    "<|im_end|>",      "<|end|>",
                                          "<|return|>",    "<|call|>",        "<end_of_turn>",
                                          "<|endoftext|>", "<|eom_id|>",      "<EOT>",
                                          "_<EOT>",        "<|end_of_text|>", "<end_of_utterance>"};

}  // namespace

SpecialIds default_special_ids(std::string_view model) {
  SpecialIds ids;
  if (model == "llama") {
    ids.bos = 1;
    ids.eos = 2;
    ids.unk = 0;
  } else if (model == "gpt2") {  // llama.cpp's defaults, from Falcon's vocabulary
    ids.bos = 11;
    ids.eos = 11;
  } else if (model == "bert") {  // WordPiece: [CLS] 101 (as BOS), [SEP] 102, [UNK] 100
    ids.bos = 101;
    ids.unk = 100;
    ids.sep = 102;
    ids.pad = 0;
    ids.mask = 103;
  }
  return ids;
}

VocabFlags default_flags(std::string_view model) {
  VocabFlags flags;
  if (model == "bert") {  // WordPiece: [CLS] first; word-start pieces carry the phantom space
    flags.add_bos = true;
  } else if (model != "llama") {  // byte-level BPE and others: no BOS, no implicit space prefix
    flags.add_bos = false;
    flags.add_space_prefix = false;
  }
  return flags;
}

Result<Vocab> Vocab::from_gguf(const gguf::File& file) {
  if (file.find(kModelKey) == nullptr) {
    return key_error(file, kModelKey, "is missing (the file has no tokenizer)");
  }
  Result<std::string> model = file.get_string(kModelKey);
  if (!model) return model.status().with_context("tokenizer");

  Status status;
  const auto* tokens = find_array<std::string>(file, kTokensKey, "an array of strings", &status);
  TESSERA_RETURN_IF_ERROR(status);
  if (tokens == nullptr) return key_error(file, kTokensKey, "is missing (no vocabulary)");
  const auto* scores = find_array<float>(file, kScoresKey, "an array of f32", &status);
  TESSERA_RETURN_IF_ERROR(status);
  if (scores == nullptr && *model == "llama") {
    return key_error(file, kScoresKey, "is missing (a \"llama\" vocabulary needs scores)");
  }
  const auto* types = find_array<int32_t>(file, kTypesKey, "an array of i32", &status);
  TESSERA_RETURN_IF_ERROR(status);

  BpeData bpe;
  TESSERA_RETURN_IF_ERROR(read_bpe_data(file, *model, &bpe));

  SpecialIds ids = default_special_ids(*model);
  VocabFlags flags = default_flags(*model);
  if (*model == "gpt2") {  // what the pre-tokenizer implies, before the keys say otherwise
    const PreTokenizerSpec* spec = find_pre_tokenizer(bpe.pre);
    if (spec != nullptr && spec->add_bos) flags.add_bos = true;
    if (spec != nullptr && spec->no_bos) ids.bos = kNoToken;
  }
  for (TokenId* id : {&ids.bos, &ids.eos, &ids.unk}) {  // defaults beyond a small vocabulary
    if (*id >= static_cast<TokenId>(tokens->size())) *id = kNoToken;
  }
  TESSERA_RETURN_IF_ERROR(read_special_ids(file, tokens->size(), &ids));
  TESSERA_RETURN_IF_ERROR(read_flags(file, &flags));

  Result<Vocab> vocab =
      from_lists(*model, *tokens, scores ? *scores : std::vector<float>{},
                 types ? *types : std::vector<int32_t>{}, ids, flags, std::move(bpe));
  if (!vocab) return vocab.status().with_context("tokenizer: " + file.path());
  return vocab;
}

Result<Vocab> Vocab::from_lists(std::string model, std::vector<std::string> tokens,
                                std::vector<float> scores, std::vector<int32_t> types,
                                SpecialIds ids, VocabFlags flags, BpeData bpe) {
  const size_t n = tokens.size();
  if (n == 0) return Status::error("the vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX)) return Status::error("the vocabulary is too large");
  if (!scores.empty() && scores.size() != n) {
    return Status::error("tokenizer.ggml.scores has " + std::to_string(scores.size()) +
                         " entries but tokenizer.ggml.tokens has " + std::to_string(n));
  }
  if (!types.empty() && types.size() != n) {
    return Status::error("tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                         " entries but tokenizer.ggml.tokens has " + std::to_string(n));
  }
  Vocab vocab;
  vocab.model_ = std::move(model);
  vocab.tokens_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TokenData& t = vocab.tokens_[i];
    t.text = std::move(tokens[i]);
    if (t.text.empty()) t.text = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp
    if (!scores.empty()) t.score = scores[i];
    if (!types.empty()) t.type = to_token_type(types[i]);
  }
  vocab.special_ = ids;
  vocab.flags_ = flags;
  vocab.bpe_ = std::move(bpe);
  TESSERA_RETURN_IF_ERROR(vocab.build());
  return vocab;
}

const TokenData& Vocab::token(TokenId id) const {
  TESSERA_CHECK(contains(id));
  return tokens_[static_cast<size_t>(id)];
}

Status Vocab::build() {
  const SpecialIds& s = special_;
  for (TokenId id : {s.bos, s.eos, s.unk, s.sep, s.pad, s.eot, s.eom, s.mask, s.fim_pre, s.fim_suf,
                     s.fim_mid, s.fim_pad, s.fim_rep, s.fim_sep}) {
    if (id != kNoToken && !contains(id)) {
      return Status::error("special token id " + std::to_string(id) + " is out of range (n_vocab " +
                           std::to_string(size()) + ")");
    }
  }
  build_index();
  detect_special_texts();
  for (TokenId id = 0; id < size(); ++id) {
    if (is_special_type(tokens_[static_cast<size_t>(id)].type)) special_tokens_.push_back(id);
  }
  std::stable_sort(special_tokens_.begin(), special_tokens_.end(), [&](TokenId a, TokenId b) {
    return token(a).text.size() > token(b).text.size();
  });
  byte_tokens_.resize(256);
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    TokenId id = find(hex);
    if (id == kNoToken) id = find(std::string(1, static_cast<char>(b)));
    byte_tokens_[static_cast<size_t>(b)] = id == kNoToken ? special_.unk : id;
  }
  return Status::ok();
}

void Vocab::build_index() {
  size_t n_slots = 16;
  while (n_slots < 2 * tokens_.size()) n_slots *= 2;
  slots_.assign(n_slots, Slot{0, kNoToken});
  slot_mask_ = n_slots - 1;
  for (TokenId id = 0; id < size(); ++id) {
    const std::string& text = tokens_[static_cast<size_t>(id)].text;
    const uint64_t h = hash_text(text);
    size_t i = h & slot_mask_;
    // A repeated text takes the later id (as llama.cpp's map does).
    while (slots_[i].id != kNoToken && tokens_[static_cast<size_t>(slots_[i].id)].text != text) {
      i = (i + 1) & slot_mask_;
    }
    slots_[i] = Slot{static_cast<uint32_t>(h >> 32), id};
  }
}

}  // namespace tessera::tok

namespace tessera::tok {

void Vocab::detect_special_texts() {
  // A role the metadata left unset takes the first text of its list that is a token; the
  // token becomes a control token (so it is not matched as text without parse_special).
  const auto make_control = [&](TokenId id) {
    TokenData& t = tokens_[static_cast<size_t>(id)];
    if (t.type != TokenType::Control) {
      log(LogLevel::Info,
          "tokenizer: token %d '%s' names a role but is not a control token; "
          "treating it as one",
          id, t.text.c_str());
      t.type = TokenType::Control;
    }
  };
  const auto detect = [&](TokenId* role, const auto& texts) {
    if (*role != kNoToken) return;
    for (std::string_view text : texts) {
      if (const TokenId id = find(text); id != kNoToken) {
        *role = id;
        make_control(id);
        return;
      }
    }
  };
  detect(&special_.eot, kEotTexts);
  detect(&special_.eom, kEomTexts);
  detect(&special_.fim_pre, kFimPreTexts);
  detect(&special_.fim_suf, kFimSufTexts);
  detect(&special_.fim_mid, kFimMidTexts);
  detect(&special_.fim_pad, kFimPadTexts);
  detect(&special_.fim_rep, kFimRepTexts);
  detect(&special_.fim_sep, kFimSepTexts);

  std::vector<TokenId> eog;
  for (std::string_view text : kEogTexts) {
    if (const TokenId id = find(text); id != kNoToken) {
      eog.push_back(id);
      make_control(id);
    }
  }
  // gpt-oss (harmony): "<|end|>" ends a message, not the generation.
  const TokenId end_id = find("<|end|>");
  if (find("<|return|>") != kNoToken && find("<|call|>") != kNoToken && end_id != kNoToken) {
    eog.erase(std::find(eog.begin(), eog.end(), end_id));
    tokens_[static_cast<size_t>(end_id)].type = TokenType::UserDefined;
  }
  // gpt-oss: these always render, like user-defined tokens.
  for (std::string_view text : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    if (const TokenId id = find(text); id != kNoToken) {
      tokens_[static_cast<size_t>(id)].type = TokenType::UserDefined;
    }
  }
  for (TokenId id : {special_.eos, special_.eot, special_.eom, special_.fim_pad, special_.fim_rep,
                     special_.fim_sep}) {
    if (id != kNoToken) eog.push_back(id);
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  eog_ids_ = std::move(eog);
}

}  // namespace tessera::tok
