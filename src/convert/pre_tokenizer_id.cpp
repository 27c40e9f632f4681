// identify_pre_tokenizer (hf_vocab.h): a tokenizer.json pre_tokenizer → the regexes it
// applies, in order → the tessera pre-tokenizer (tokenizer/pretokenize.h) with the same
// regexes. The published spellings that llama.cpp runs in an adapted form are translated
// first: the case-insensitive contractions of Llama 3 / Qwen2 spelled in ASCII, and the
// cased-letter classes of Tekken / o200k as "a letter but a-z" / "a letter but A-Z". Both
// sides are compared in one spelling: literal tab, CR, LF and non-ASCII characters as
// escapes (\t, \r, \n, \x{HEX}).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "convert/hf_vocab.h"
#include "tokenizer/pretokenize.h"

namespace tessera::convert {
namespace {

using nlohmann::json;

constexpr std::string_view kCaseInsensitiveContractions = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
constexpr std::string_view kAsciiContractions =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

constexpr std::pair<std::string_view, std::string_view> kAdaptations[] = {
    {kCaseInsensitiveContractions, kAsciiContractions},
    {R"([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])", R"(((?=[\p{L}])([^a-z])))"},
    {R"([\p{Ll}\p{Lm}\p{Lo}\p{M}])", R"(((?=[\p{L}])([^A-Z])))"},
};

/// Literal control and non-ASCII characters as escapes (the regex is UTF-8; a malformed
/// byte is kept as it is).
std::string escaped(const std::string& r) {
  std::string out;
  for (size_t i = 0; i < r.size();) {
    const uint8_t c = uint8_t(r[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (c == '\t' || c == '\r' || c == '\n') {
      out += c == '\t' ? "\\t" : c == '\r' ? "\\r" : "\\n";
    } else if (n <= 1 || i + size_t(n) > r.size()) {
      out += char(c);
    } else {
      uint32_t cp = c & (0x7f >> n);
      for (int k = 1; k < n; ++k) cp = cp << 6 | (uint8_t(r[i + size_t(k)]) & 0x3f);
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\x{%X}", unsigned(cp));
      out += buf;
      i += size_t(n);
      continue;
    }
    ++i;
  }
  return out;
}

std::string adapted(std::string regex) {
  for (const auto& [published, runs] : kAdaptations) {
    for (size_t at = regex.find(published); at != std::string::npos;
         at = regex.find(published, at + runs.size())) {
      regex.replace(at, published.size(), runs);
    }
  }
  return escaped(regex);
}

std::string gpt2_regex() { return std::string(tok::find_pre_tokenizer("gpt-2")->regexes.at(0)); }
std::string punctuation_regex() {
  return std::string(tok::find_pre_tokenizer("falcon")->regexes.at(0));
}

/// Appends the regexes of one pre-tokenizer object (recursing into sequences), adapted to
/// llama.cpp's spelling in `out` and as published in `published`.
Status collect(const json& p, std::vector<std::string>& out, std::vector<std::string>& published) {
  if (p.is_null()) return Status::ok();
  if (!p.is_object() || !p.contains("type") || !p["type"].is_string()) {
    return Status::error("a pre_tokenizer is not an object with a \"type\"");
  }
  const std::string type = p["type"].get<std::string>();
  if (type == "Sequence") {
    if (!p.contains("pretokenizers") || !p["pretokenizers"].is_array()) {
      return Status::error("a Sequence pre_tokenizer has no \"pretokenizers\" array");
    }
    for (const json& q : p["pretokenizers"]) TESSERA_RETURN_IF_ERROR(collect(q, out, published));
  } else if (type == "Split") {
    const json* pattern = p.contains("pattern") ? &p["pattern"] : nullptr;
    if (pattern == nullptr || !pattern->is_object() || !pattern->contains("Regex") ||
        !(*pattern)["Regex"].is_string()) {
      return Status::error("a Split pre_tokenizer has no {\"Regex\": ...} pattern");
    }
    published.push_back((*pattern)["Regex"].get<std::string>());
    out.push_back(adapted(published.back()));
  } else if (type == "ByteLevel") {
    if (!p.contains("use_regex") || (p["use_regex"].is_boolean() && p["use_regex"].get<bool>())) {
      published.push_back(gpt2_regex());
      out.push_back(adapted(published.back()));
    }
  } else if (type == "Digits") {
    const bool one = p.contains("individual_digits") && p["individual_digits"].is_boolean() &&
                     p["individual_digits"].get<bool>();
    published.push_back(one ? R"(\p{N})" : R"(\p{N}+)");
    out.push_back(published.back());
  } else if (type == "Punctuation") {
    published.push_back(punctuation_regex());
    out.push_back(adapted(published.back()));
  } else {
    return Status::error("the pre_tokenizer type \"" + type + "\" is not one convert maps");
  }
  return Status::ok();
}

}  // namespace

Result<std::string> identify_pre_tokenizer(const std::string& pre_tokenizer_json, bool ignore_merges,
                                           std::vector<std::string>* published) {
  const json p = json::parse(pre_tokenizer_json, nullptr, false);
  if (p.is_discarded()) return Status::error("the pre_tokenizer is not JSON");
  std::vector<std::string> regexes, as_published;
  TESSERA_RETURN_IF_ERROR(collect(p, regexes, as_published));
  if (published != nullptr) *published = as_published;
  if (regexes.empty())
    return Status::error("the pre_tokenizer splits nothing (no regex, no byte-level split)");
  const tok::PreTokenizerSpec* found = nullptr;
  for (const tok::PreTokenizerSpec& spec : tok::pre_tokenizer_specs()) {
    if (!std::equal(spec.regexes.begin(), spec.regexes.end(), regexes.begin(), regexes.end(),
                    [](std::string_view a, const std::string& b) {
                      return adapted(std::string(a)) == b;
                    })) {
      continue;
    }
    // Specs with the same regexes differ in ignore_merges (llama3 / dbrx): the model's says which.
    if (found == nullptr ||
        (spec.ignore_merges == ignore_merges && found->ignore_merges != ignore_merges))
      found = &spec;
  }
  if (found != nullptr) return std::string(found->name);
  std::string list;
  for (const std::string& r : regexes) list += (list.empty() ? "" : ", ") + json(r).dump();
  return Status::error("no tessera pre-tokenizer applies the regexes [" + list + "]");
}

}  // namespace tessera::convert
