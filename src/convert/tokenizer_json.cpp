// read_tokenizer_json (hf_vocab.h): HF tokenizers' tokenizer.json with a BPE model, as the
// reference converter reads it. Byte-level BPE (no byte_fallback) becomes model "gpt2"
// with its merges and the pre-tokenizer its regexes name; SentencePiece-style BPE (▁ for
// spaces, byte_fallback, <0xXX> byte pieces) becomes model "llama", each piece scored by
// the rank of the merge that makes it (-(rank + 1); see scores_from_merges), so
// llama.cpp's highest-score-first merging applies the merges in their order, and
// add_space_prefix says whether the normalizer or pre-tokenizer puts "▁" first. Ids the file
// leaves out, up to config.json's vocab_size, become "[PAD<id>]" (unused).
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "convert/hf_vocab.h"
#include "convert/json_file.h"
#include "tokenizer/pretokenize.h"

namespace tessera::convert {
namespace {

using nlohmann::json;

constexpr int64_t kMaxTokens = int64_t(1) << 24;

bool looks_special(const std::string& t) {
  if (t.size() >= 4 && t.starts_with("<|") && t.ends_with("|>")) return true;
  if (t.size() >= 4 && t.starts_with("<｜") && t.ends_with("｜>")) return true;
  static const char* const kNames[] = {"<s>", "</s>", "<pad>", "<unk>", "<mask>", "<bos>", "<eos>"};
  for (const char* n : kNames) {
    if (t == n) return true;
  }
  return false;
}

bool is_byte_piece(const std::string& t) {
  auto hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f');
  };
  return t.size() == 6 && t.starts_with("<0x") && t[5] == '>' && hex(t[3]) && hex(t[4]);
}

Status bad(const std::filesystem::path& file, const std::string& what) {
  return Status::error("convert: " + file.string() + ": " + what);
}

/// model.merges in either form ("a b", or ["a", "b"]) as "a b".
Result<std::vector<std::string>> read_merges(const std::filesystem::path& file, const json& model) {
  std::vector<std::string> merges;
  if (!model.contains("merges")) return merges;
  if (!model["merges"].is_array()) return bad(file, "model.merges is not an array");
  merges.reserve(model["merges"].size());
  for (const json& m : model["merges"]) {
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ', 1);
      if (space == std::string::npos || space + 1 == s.size()) {
        return bad(file, "merge " + std::to_string(merges.size()) + " " + m.dump() +
                             " is not two pieces separated by a space");
      }
      merges.push_back(s);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string() &&
               !m[0].get<std::string>().empty() && !m[1].get<std::string>().empty()) {
      merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    } else {
      return bad(file, "merge " + std::to_string(merges.size()) +
                           " is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  return merges;
}

/// Puts `text` at `id`, refusing ids out of range and ids given twice.
Status place(const std::filesystem::path& file, HfVocab& v, std::vector<bool>& seen, int64_t id,
             const std::string& text, int32_t type) {
  if (id < 0 || id >= kMaxTokens)
    return bad(file,
               "token " + json(text).dump() + " has id " + std::to_string(id) + ", out of range");
  if (size_t(id) >= v.tokens.size()) {
    v.tokens.resize(size_t(id) + 1);
    v.types.resize(size_t(id) + 1, kUnused);
    seen.resize(size_t(id) + 1, false);
  }
  if (seen[size_t(id)] && v.tokens[size_t(id)] != text) {
    return bad(file, "id " + std::to_string(id) + " is both " + json(v.tokens[size_t(id)]).dump() +
                         " and " + json(text).dump());
  }
  seen[size_t(id)] = true;
  v.tokens[size_t(id)] = text;
  v.types[size_t(id)] = type;
  return Status::ok();
}

Status read_vocab(const std::filesystem::path& file, const json& j, bool spm, HfVocab& v,
                  std::vector<bool>& seen) {
  const json& model = j["model"];
  if (!model.contains("vocab") || !model["vocab"].is_object())
    return bad(file, "model.vocab is not an object");
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer())
      return bad(file, "token " + json(text).dump() + " has an id that is not an integer");
    TESSERA_RETURN_IF_ERROR(place(file, v, seen, id.get<int64_t>(), text,
                                  spm && is_byte_piece(text) ? kByte : kNormal));
  }
  if (!j.contains("added_tokens")) return Status::ok();
  if (!j["added_tokens"].is_array()) return bad(file, "added_tokens is not an array");
  for (const json& a : j["added_tokens"]) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
        !a.contains("content") || !a["content"].is_string()) {
      return bad(file, "an added_tokens entry has no integer \"id\" and string \"content\"");
    }
    const std::string text = a["content"].get<std::string>();
    const bool special =
        a.contains("special") && a["special"].is_boolean() && a["special"].get<bool>();
    TESSERA_RETURN_IF_ERROR(place(file, v, seen, a["id"].get<int64_t>(), text,
                                  special || looks_special(text) ? kControl : kUserDefined));
  }
  return Status::ok();
}

/// Whether a SentencePiece-style tokenizer.json puts "▁" before the text: a Prepend("▁")
/// normalizer, or a Metaspace pre-tokenizer that prepends (prepend_scheme other than "never").
bool adds_space_prefix(const json& j) {
  bool found = false;
  auto visit = [&found](const json& node, const char* list, auto&& self) -> void {
    if (!node.is_object()) return;
    const std::string type =
        node.contains("type") && node["type"].is_string() ? node["type"].get<std::string>() : "";
    if (type == "Sequence" && node.contains(list) && node[list].is_array()) {
      for (const json& n : node[list]) self(n, list, self);
    } else if (type == "Prepend") {
      found = found || (node.contains("prepend") && node["prepend"] == "\u2581");
    } else if (type == "Metaspace") {
      const bool never = node.contains("prepend_scheme") && node["prepend_scheme"] == "never";
      const bool off = node.contains("add_prefix_space") && node["add_prefix_space"] == false;
      found = found || (!never && !off);
    }
  };
  if (j.contains("normalizer")) visit(j["normalizer"], "normalizers", visit);
  if (j.contains("pre_tokenizer")) visit(j["pre_tokenizer"], "pretokenizers", visit);
  return found;
}

/// -(rank + 1) for each piece a merge makes (its first merge); below every merge for the
/// other pieces of more than one character, which BPE never makes (SentencePiece would
/// join their characters, so they come last); 0 for single characters (never a join).
std::vector<float> scores_from_merges(const HfVocab& v) {
  std::unordered_map<std::string, size_t> rank;
  for (size_t r = 0; r < v.merges.size(); ++r) {
    std::string joined = v.merges[r];
    joined.erase(joined.find(' ', 1), 1);
    rank.emplace(joined, r);
  }
  std::vector<float> scores(v.tokens.size(), 0.0f);
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.types[i] != kNormal) continue;
    const std::string& t = v.tokens[i];
    const size_t first = t.empty() ? 0
                                   : (uint8_t(t[0]) < 0x80         ? 1
                                      : (uint8_t(t[0]) >> 5) == 6  ? 2
                                      : (uint8_t(t[0]) >> 4) == 14 ? 3
                                                                   : 4);
    if (auto it = rank.find(t); it != rank.end()) {
      scores[i] = -float(it->second + 1);
    } else if (t.size() > first) {
      scores[i] = -float(v.merges.size() + 1);
    }
  }
  return scores;
}

}  // namespace

Result<HfVocab> read_tokenizer_json(const std::filesystem::path& file, int64_t vocab_size) {
  Result<json> read = read_json_object(file);
  if (!read) return read.status();
  const json& j = *read;
  if (!j.contains("model") || !j["model"].is_object()) return bad(file, "has no \"model\" object");
  const json& model = j["model"];
  const std::string type =
      model.contains("type") && model["type"].is_string() ? model["type"].get<std::string>() : "";
  if (type != "BPE") {
    return bad(file, "model.type is \"" + type +
                         "\"; convert reads BPE tokenizer.json files (Unigram/WordPiece ones "
                         "through tokenizer.model / vocab.txt)");
  }
  const bool spm = model.contains("byte_fallback") && model["byte_fallback"].is_boolean() &&
                   model["byte_fallback"].get<bool>();
  HfVocab v;
  v.model = spm ? "llama" : "gpt2";
  std::vector<bool> seen;
  TESSERA_RETURN_IF_ERROR(read_vocab(file, j, spm, v, seen));
  if (vocab_size > kMaxTokens)
    return bad(file, "config.json's vocab_size " + std::to_string(vocab_size) + " is out of range");
  if (vocab_size > int64_t(v.tokens.size())) {
    v.tokens.resize(size_t(vocab_size));
    v.types.resize(size_t(vocab_size), kUnused);
    seen.resize(size_t(vocab_size), false);
  }
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (!seen[i]) v.tokens[i] = "[PAD" + std::to_string(i) + "]";
  }
  Result<std::vector<std::string>> merges = read_merges(file, model);
  if (!merges) return merges.status();
  v.merges = std::move(*merges);
  if (spm) {
    v.pre = "default";
    v.scores = scores_from_merges(v);
    v.merges.clear();  // the "llama" model merges by score; the reference writes no merges for it
    v.add_space_prefix = adds_space_prefix(j);
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      for (size_t i = 0; i < v.tokens.size(); ++i) {
        if (v.tokens[i] == model["unk_token"].get<std::string>()) v.types[i] = kUnknown;
      }
    }
    return v;
  }
  if (v.merges.empty()) return bad(file, "a byte-level BPE model with no merges");
  const bool ignore_merges = model.contains("ignore_merges") &&
                             model["ignore_merges"].is_boolean() &&
                             model["ignore_merges"].get<bool>();
  std::vector<std::string> published;
  Result<std::string> pre = identify_pre_tokenizer(
      j.contains("pre_tokenizer") ? j["pre_tokenizer"].dump() : "null", ignore_merges, &published);
  if (!pre) return bad(file, "pre_tokenizer: " + pre.status().message());
  v.pre = *pre;
  const tok::PreTokenizerSpec* spec = tok::find_pre_tokenizer(v.pre);
  if (spec && spec->ignore_merges != ignore_merges) v.ignore_merges = ignore_merges;
  if (spec && !std::equal(spec->regexes.begin(), spec->regexes.end(), published.begin(), published.end())) {
    // Only regexes tessera can run (PCRE2) are kept; otherwise llama.cpp's form serves.
    if (tok::PreTokenizer::compile({published.begin(), published.end()})) v.pre_regexes = published;
  }
  return v;
}

}  // namespace tessera::convert
