#include "tokenizer/vocab.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "core/check.h"
#include "tessera/gguf.h"
#include "tessera/log.h"

namespace tessera::tok {
namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";

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

}  // namespace

SpecialIds default_special_ids(std::string_view model) {
  SpecialIds ids;
  if (model == "llama") {
    ids.bos = 1;
    ids.eos = 2;
    ids.unk = 0;
  }
  return ids;
}

VocabFlags default_flags(std::string_view model) {
  VocabFlags flags;
  if (model != "llama") {  // byte-level BPE and others: no implicit space prefix
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

  SpecialIds ids = default_special_ids(*model);
  TESSERA_RETURN_IF_ERROR(read_special_ids(file, tokens->size(), &ids));
  VocabFlags flags = default_flags(*model);
  TESSERA_RETURN_IF_ERROR(read_flags(file, &flags));

  Result<Vocab> vocab = from_lists(*model, *tokens, scores ? *scores : std::vector<float>{},
                                   types ? *types : std::vector<int32_t>{}, ids, flags);
  if (!vocab) return vocab.status().with_context("tokenizer: " + file.path());
  return vocab;
}

Result<Vocab> Vocab::from_lists(std::string model, std::vector<std::string> tokens,
                                std::vector<float> scores, std::vector<int32_t> types,
                                SpecialIds ids, VocabFlags flags) {
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
  TESSERA_RETURN_IF_ERROR(vocab.build());
  return vocab;
}

const TokenData& Vocab::token(TokenId id) const {
  TESSERA_CHECK(contains(id));
  return tokens_[static_cast<size_t>(id)];
}

Status Vocab::build() {
  for (TokenId id : {special_.bos, special_.eos, special_.unk, special_.sep, special_.pad,
                     special_.eot, special_.eom}) {
    if (id != kNoToken && !contains(id)) {
      return Status::error("special token id " + std::to_string(id) + " is out of range (n_vocab " +
                           std::to_string(size()) + ")");
    }
  }
  build_index();
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
