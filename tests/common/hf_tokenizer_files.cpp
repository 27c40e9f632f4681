#include "common/hf_tokenizer_files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tokenizer/pretokenize.h"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The regexes as Llama 3 and Qwen2 publish them in tokenizer.json.
constexpr const char* kLlama3Published =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Published =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

json byte_level(bool use_regex) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", true},
          {"use_regex", use_regex}};
}
json split(const std::string& regex) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", regex}}},
          {"behavior", "Isolated"},
          {"invert", false}};
}

/// The pre_tokenizer a model of tokenizer.ggml.pre `pre` publishes: the published forms of
/// GPT-2, StarCoder, Llama 3 and Qwen2, else a Split per regex of the spec.
json pre_tokenizer_of(const std::string& pre) {
  const tok::PreTokenizerSpec* spec = tok::find_pre_tokenizer(pre);
  if (spec == nullptr) spec = &tok::default_pre_tokenizer();
  if (spec->name == "gpt-2") return byte_level(true);
  if (spec->name == "starcoder")
    return {
        {"type", "Sequence"},
        {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byte_level(true)}}};
  if (spec->name == "llama3")
    return {{"type", "Sequence"}, {"pretokenizers", {split(kLlama3Published), byte_level(false)}}};
  if (spec->name == "qwen2")
    return {{"type", "Sequence"}, {"pretokenizers", {split(kQwen2Published), byte_level(false)}}};
  json seq = json::array();
  for (std::string_view r : spec->regexes) seq.push_back(split(std::string(r)));
  seq.push_back(byte_level(false));
  return {{"type", "Sequence"}, {"pretokenizers", seq}};
}

template <typename T>
std::vector<T> array_of(const gguf::File& f, const char* key) {
  const gguf::Value* v = f.find(key);
  return v != nullptr && v->as_array<T>() != nullptr ? *v->as_array<T>() : std::vector<T>{};
}

int64_t id_of(const gguf::File& f, const std::string& key) {
  const gguf::Value* v = f.find("tokenizer.ggml." + key);
  return v != nullptr && v->as_int() ? *v->as_int() : -1;
}

/// tokenizer_config.json: the special tokens by text (alternating the string and the
/// {"content": ...} forms), add_bos_token / add_eos_token where the GGUF has them.
void write_config(const gguf::File& f, const std::vector<std::string>& tokens,
                  const fs::path& dir) {
  json tc = json::object();
  const std::pair<const char*, const char*> kinds[] = {
      {"bos", "bos_token_id"},       {"eos", "eos_token_id"},     {"unk", "unknown_token_id"},
      {"sep", "seperator_token_id"}, {"pad", "padding_token_id"}, {"cls", "cls_token_id"},
      {"mask", "mask_token_id"}};
  bool object_form = false;
  for (const auto& [kind, key] : kinds) {
    const int64_t id = id_of(f, key);
    if (id < 0 || id >= int64_t(tokens.size())) continue;
    const std::string text = tokens[size_t(id)];
    tc[std::string(kind) + "_token"] =
        object_form ? json{{"content", text}, {"special", true}} : json(text);
    object_form = !object_form;
  }
  for (const char* flag : {"add_bos_token", "add_eos_token"}) {
    const gguf::Value* v = f.find(std::string("tokenizer.ggml.") + flag);
    if (v != nullptr && v->as_bool()) tc[flag] = *v->as_bool();
  }
  std::ofstream(dir / "tokenizer_config.json") << tc.dump(1);
}

void write_bpe_json(const gguf::File& f, const fs::path& dir, bool pair_merges) {
  const auto tokens = array_of<std::string>(f, "tokenizer.ggml.tokens");
  const auto types = array_of<int32_t>(f, "tokenizer.ggml.token_type");
  json vocab = json::object(), added = json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (types[i] == 5) continue;  // unused: no entry
    vocab[tokens[i]] = i;
    if (types[i] == 3 || types[i] == 4)
      added.push_back({{"id", i}, {"content", tokens[i]}, {"special", types[i] == 3}});
  }
  json merges = json::array();
  for (const std::string& m : array_of<std::string>(f, "tokenizer.ggml.merges")) {
    const size_t sp = m.find(' ', 1);
    merges.push_back(pair_merges ? json{m.substr(0, sp), m.substr(sp + 1)} : json(m));
  }
  const std::string pre =
      f.find("tokenizer.ggml.pre") ? *f.find("tokenizer.ggml.pre")->as_string() : "default";
  const tok::PreTokenizerSpec* spec = tok::find_pre_tokenizer(pre);
  json j = {{"version", "1.0"},
            {"added_tokens", added},
            {"pre_tokenizer", pre_tokenizer_of(pre)},
            {"decoder", byte_level(true)},
            {"model",
             {{"type", "BPE"},
              {"byte_fallback", false},
              {"ignore_merges", spec != nullptr && spec->ignore_merges},
              {"vocab", vocab},
              {"merges", merges}}}};
  std::ofstream(dir / "tokenizer.json") << j.dump();
  write_config(f, tokens, dir);
}

/// "llama" as HF's SentencePiece-to-BPE conversion makes it: every split of a normal piece
/// into two normal pieces is a merge, ordered by the piece's score (highest first).
void write_spm_json(const gguf::File& f, const fs::path& dir) {
  const auto tokens = array_of<std::string>(f, "tokenizer.ggml.tokens");
  const auto types = array_of<int32_t>(f, "tokenizer.ggml.token_type");
  const auto scores = array_of<float>(f, "tokenizer.ggml.scores");
  std::map<std::string, size_t> normal;
  json vocab = json::object(), added = json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    vocab[tokens[i]] = i;
    if (types[i] == 1) normal.emplace(tokens[i], i);
    if (types[i] == 3 || types[i] == 4)
      added.push_back({{"id", i}, {"content", tokens[i]}, {"special", types[i] == 3}});
  }
  std::vector<std::tuple<float, size_t, size_t, std::string, std::string>> found;
  for (const auto& [t, id] : normal) {
    for (size_t at = 1; at < t.size(); ++at) {
      if ((uint8_t(t[at]) & 0xC0) == 0x80) continue;  // inside a UTF-8 character
      auto l = normal.find(t.substr(0, at)), r = normal.find(t.substr(at));
      if (l != normal.end() && r != normal.end())
        found.emplace_back(-scores[id], id, l->second, l->first, r->first);
    }
  }
  std::sort(found.begin(), found.end());
  json merges = json::array();
  for (const auto& m : found) merges.push_back({std::get<3>(m), std::get<4>(m)});
  // As HF's converter: "▁" for spaces, and first unless the model says add_dummy_prefix false.
  const gguf::Value* prefix = f.find("tokenizer.ggml.add_space_prefix");
  json normalizers = json::array();
  if (prefix == nullptr || prefix->as_bool().value_or(true))
    normalizers.push_back({{"type", "Prepend"}, {"prepend", "\u2581"}});
  normalizers.push_back(
      {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}});
  json j = {{"version", "1.0"},
            {"added_tokens", added},
            {"normalizer", {{"type", "Sequence"}, {"normalizers", normalizers}}},
            {"pre_tokenizer", nullptr},
            {"model",
             {{"type", "BPE"},
              {"byte_fallback", true},
              {"unk_token", "<unk>"},
              {"fuse_unk", true},
              {"vocab", vocab},
              {"merges", merges}}}};
  std::ofstream(dir / "tokenizer.json") << j.dump();
  write_config(f, tokens, dir);
}

void put_varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(char(0x80 | (v & 0x7f)));
  out.push_back(char(v));
}
void put_bytes(std::string& out, uint32_t field, const std::string& bytes) {
  put_varint(out, uint64_t(field) << 3 | 2);
  put_varint(out, bytes.size());
  out += bytes;
}

/// tokenizer.model: ModelProto{1: SentencePiece{1 piece, 2 score, 3 type}..., 3: NormalizerSpec}.
void write_spm_model(const gguf::File& f, const fs::path& dir) {
  const auto tokens = array_of<std::string>(f, "tokenizer.ggml.tokens");
  const auto types = array_of<int32_t>(f, "tokenizer.ggml.token_type");
  const auto scores = array_of<float>(f, "tokenizer.ggml.scores");
  std::string model;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string piece;
    put_bytes(piece, 1, tokens[i]);
    piece.push_back(char(2 << 3 | 5));
    uint32_t bits = 0;
    std::memcpy(&bits, &scores[i], 4);
    for (int b = 0; b < 4; ++b) piece.push_back(char(bits >> (8 * b)));
    put_varint(piece, 3 << 3 | 0);
    put_varint(piece, uint64_t(types[i]));
    put_bytes(model, 1, piece);
  }
  if (const gguf::Value* v = f.find("tokenizer.ggml.add_space_prefix");
      v != nullptr && v->as_bool()) {
    std::string normalizer;  // NormalizerSpec{3: add_dummy_prefix}
    put_varint(normalizer, 3 << 3 | 0);
    put_varint(normalizer, *v->as_bool() ? 1 : 0);
    put_bytes(model, 3, normalizer);
  }
  std::ofstream(dir / "tokenizer.model", std::ios::binary) << model;
  write_config(f, tokens, dir);
}

/// vocab.txt: GGUF's phantom-space tokens back to WordPiece's "##" continuations.
void write_wordpiece(const gguf::File& f, const fs::path& dir) {
  const auto tokens = array_of<std::string>(f, "tokenizer.ggml.tokens");
  std::ofstream out(dir / "vocab.txt", std::ios::binary);
  for (const std::string& t : tokens) {
    if (t.starts_with("\xE2\x96\x81")) {
      out << t.substr(3) << "\n";
    } else if (t.size() >= 2 && t.front() == '[' && t.back() == ']') {
      out << t << "\n";
    } else {
      out << "##" << t << "\n";
    }
  }
  write_config(f, tokens, dir);
}

}  // namespace

void write_hf_tokenizer(const gguf::File& f, const fs::path& dir, HfTokenizerForm form) {
  const gguf::Value* m = f.find("tokenizer.ggml.model");
  ASSERT_NE(m, nullptr) << f.path() << " has no vocabulary";
  const std::string model = *m->as_string();
  if (model == "gpt2") {
    write_bpe_json(f, dir, form == HfTokenizerForm::PairMerges);
  } else if (model == "llama") {
    if (form == HfTokenizerForm::SpmJson) {
      write_spm_json(f, dir);
    } else {
      write_spm_model(f, dir);
    }
  } else if (model == "bert") {
    write_wordpiece(f, dir);
  } else {
    FAIL() << f.path() << ": no HF form for tokenizer model " << model;
  }
}

}  // namespace tessera::test
