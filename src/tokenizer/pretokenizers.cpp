// The pre-tokenizer regexes of each model family, as their tokenizers publish them
// (tokenizer.json) and as llama.cpp selects them by `tokenizer.ggml.pre`. Where llama.cpp
// runs a regex in an adapted form, the adapted form is the one here (noted), since a
// vocabulary must tokenize as llama.cpp does.
#include <algorithm>

#include "tokenizer/pretokenize.h"

namespace tessera::tok {
namespace {

// GPT-2 (OpenAI's encoder.py): contractions, letters, digits, other symbols, each with an
// optional leading space; whitespace runs leave their last space to the next word.
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

// Llama 3 / tiktoken cl100k. Published with (?i:'s|'t|'re|'ve|'m|'ll|'d); llama.cpp spells
// the case-insensitive contractions in ASCII (so 'ſ' U+017F is not an 's').
constexpr std::string_view kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2 / StableLM2: as Llama 3 but one digit per piece.
constexpr std::string_view kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Mistral Tekken. Published with \p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M} classes; llama.cpp runs this
// form, where any letter but a-z opens a word and any letter but A-Z continues it.
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// GPT-4o (o200k) / Llama 4, in llama.cpp's adapted form (as Tekken, plus contractions).
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// BLOOM / Poro / GPT3-Finnish: everything up to whitespace or a few punctuation marks.
constexpr std::string_view kBloom = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

// DeepSeek LLM and Coder: CJK runs (U+4E00-U+9FA5, U+0800-U+4E00, U+AC00-U+D7FF).
// llama.cpp matches these regexes against text whose non-ASCII whitespace became U+000B,
// so such whitespace (U+1680, U+2000.., U+3000) never counts as CJK: excluded here.
constexpr std::string_view kDeepseekCjk =
    R"((?:(?!\s)[\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}])+)";

// DeepSeek LLM: cased letters of many scripts (A-Za-z, Latin-1, Greek, Cyrillic, ...).
constexpr std::string_view kDeepseekLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
    R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})"
    R"(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
    R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
    R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})"
    R"(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D})"
    R"(\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})"
    R"(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4})"
    R"(\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124})"
    R"(\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F})"
    R"(\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
    R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})"
    R"(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17})"
    R"(\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3})"
    R"(\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})"
    R"(\x{1E900}-\x{1E943}]+)";

// DeepSeek LLM: ASCII and full-width punctuation, quotes U+2018-U+201F, U+3001-U+3002
// (published from U+3000, which llama.cpp's text never holds: see kDeepseekCjk).
constexpr std::string_view kDeepseekPunct =
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3001}-\x{3002}]+)";

// DeepSeek V3: digits by three, CJK and kana, then a cl100k-like split.
constexpr std::string_view kDeepseek3Main =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Ling / BailingMoE (possessive quantifiers of the published form made greedy, as llama.cpp).
constexpr std::string_view kBailing =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";

// Seed-Coder: one digit per piece; symbol runs do not take newlines.
constexpr std::string_view kSeedCoder =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::vector<PreTokenizerSpec> make_specs() {
  std::vector<PreTokenizerSpec> specs;
  // llama.cpp's fallback: punctuation runs first, then GPT-2, digit runs, digits by three.
  specs.push_back(
      {"default", {}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}});
  specs.push_back({"gpt-2",
                   {"gpt2", "gpt-neox", "olmo", "mpt", "jais", "trillion", "granite-docling",
                    "phi-2", "jina-es", "jina-de", "jina-v1-en", "jina-v2-es", "jina-v2-de",
                    "jina-v2-code", "roberta-bpe", "gigachat", "exaone4", "a.x-4.0", "mellum"},
                   {kGpt2}});
  specs.push_back({"llama3",
                   {"llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
                   {kLlama3},
                   /*ignore_merges=*/true,
                   /*add_bos=*/true});
  specs.push_back({"dbrx", {"smaug-bpe"}, {kLlama3}});
  specs.push_back({"chatglm-bpe", {"glm4"}, {kLlama3}, false, false, /*no_bos=*/true});
  specs.push_back({"qwen2",
                   {"stablelm2", "deepseek-r1-qwen", "megrez", "kormo", "hunyuan", "grok-2"},
                   {kQwen2}});
  specs.push_back({"falcon", {}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}});
  specs.push_back({"starcoder",
                   {"refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
                   {R"(\p{N})", kGpt2}});
  specs.push_back(
      {"deepseek-llm",
       {},
       {"[\\r\\n]", kDeepseekLetters, kDeepseekPunct, R"(\s+$)", kDeepseekCjk, R"(\p{N}+)"}});
  specs.push_back({"deepseek-coder",
                   {},
                   {"[\\r\\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})"}});
  specs.push_back({"deepseek-v3",
                   {"hunyuan-dense"},
                   {R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
                    kDeepseek3Main}});
  specs.push_back({"bloom", {"poro-chat", "gpt3-finnish"}, {kBloom}});
  specs.push_back({"viking", {}, {kBloom, R"(\p{N})"}});
  specs.push_back({"tekken", {}, {kTekken}, true, true});
  specs.push_back({"gpt-4o", {"llama4", "minimax-m2"}, {kGpt4o}});
  specs.push_back({"chameleon",
                   {},
                   {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
                    R"(([\t\n]|    |  ))", R"(\p{N})", R"([\p{P}!-/:-@\[-`{-~])", kGpt2},
                   false,
                   true});
  specs.push_back({"superbpe", {}, {R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"}});
  specs.push_back({"bailingmoe", {"bailingmoe2", "llada-moe"}, {kBailing}});
  specs.push_back({"seed-coder", {}, {kSeedCoder}});
  return specs;
}

}  // namespace

const std::vector<PreTokenizerSpec>& pre_tokenizer_specs() {
  static const std::vector<PreTokenizerSpec> specs = make_specs();
  return specs;
}

const PreTokenizerSpec* find_pre_tokenizer(std::string_view pre) {
  for (const PreTokenizerSpec& spec : pre_tokenizer_specs()) {
    if (spec.name == pre) return &spec;
    if (std::find(spec.aliases.begin(), spec.aliases.end(), pre) != spec.aliases.end())
      return &spec;
  }
  return nullptr;
}

const PreTokenizerSpec& default_pre_tokenizer() { return pre_tokenizer_specs().front(); }

}  // namespace tessera::tok
