// Pre-tokenizer regexes, family by family: splits worked out by hand from each published
// definition (not taken from any tokenizer's output), covering contractions, digit runs,
// whitespace runs, code, multilingual text and emoji.
#include <gtest/gtest.h>

#include "tokenizer/pretokenize.h"

namespace tessera::tok {
namespace {

using Pieces = std::vector<std::string>;

Pieces split(std::string_view pre, std::string_view text) {
  const PreTokenizerSpec* spec = find_pre_tokenizer(pre);
  EXPECT_NE(spec, nullptr) << pre;
  if (spec == nullptr) return {};
  auto compiled = PreTokenizer::compile(spec->regexes);
  EXPECT_TRUE(compiled.is_ok()) << compiled.status().message();
  if (!compiled) return {};
  return compiled->split(text);
}

TEST(PreTokenize, EverySpecCompilesAndCoversItsText) {
  const std::string text =
      "Hello, y'all! I'M 1234567 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E caf\xC3\xA9 "
      "\xF0\x9F\xA6\x99\n\n"
      "  x = f(a[1]);\t// \xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xE3\x80\x80 \xC2\xA0 "
      "end   ";
  for (const PreTokenizerSpec& spec : pre_tokenizer_specs()) {
    auto compiled = PreTokenizer::compile(spec.regexes);
    ASSERT_TRUE(compiled.is_ok()) << spec.name << ": " << compiled.status().message();
    std::vector<Span> spans;
    compiled->split(text, spans);
    // The pieces tile the text: in order, no gaps, none empty.
    size_t pos = 0;
    for (const Span& s : spans) {
      EXPECT_EQ(s.begin, pos) << spec.name;
      EXPECT_LT(s.begin, s.end) << spec.name;
      pos = s.end;
    }
    EXPECT_EQ(pos, text.size()) << spec.name;
    compiled->split("", spans);
    EXPECT_TRUE(spans.empty()) << spec.name;
  }
}

TEST(PreTokenize, NamesAndAliases) {
  EXPECT_EQ(find_pre_tokenizer("llama-bpe")->name, "llama3");
  EXPECT_EQ(find_pre_tokenizer("llama3")->name, "llama3");
  EXPECT_TRUE(find_pre_tokenizer("llama3")->ignore_merges);
  EXPECT_EQ(find_pre_tokenizer("smaug-bpe")->name, "dbrx");
  EXPECT_FALSE(find_pre_tokenizer("dbrx")->ignore_merges);
  EXPECT_EQ(find_pre_tokenizer("stablelm2")->name, "qwen2");
  EXPECT_EQ(find_pre_tokenizer("refact")->name, "starcoder");
  EXPECT_EQ(find_pre_tokenizer("command-r")->name, "starcoder");
  EXPECT_EQ(find_pre_tokenizer("mpt")->name, "gpt-2");
  EXPECT_EQ(find_pre_tokenizer("gpt-neox")->name, "gpt-2");
  EXPECT_EQ(find_pre_tokenizer("olmo")->name, "gpt-2");
  EXPECT_EQ(find_pre_tokenizer("jina-v2-code")->name, "gpt-2");
  EXPECT_EQ(find_pre_tokenizer("nonsense"), nullptr);
  EXPECT_EQ(default_pre_tokenizer().name, "default");
}

TEST(PreTokenize, WhitespaceTranslation) {
  const std::string p = to_pcre2_pattern(R"(\s+(?!\S)|[^\s\p{L}]|\\s|[\]\s])");
  EXPECT_EQ(p.find("\\s"), p.find("\\\\s") + 1);  // only the escaped backslash stays
  EXPECT_NE(p.find("[^\\t-\\r \\x{85}"), std::string::npos);
  EXPECT_NE(p.find("[^\\t-\\r \\x{85}\\x{A0}"), std::string::npos);
}

// ---- GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) ----------

TEST(PreTokenizeGpt2, Words) {
  EXPECT_EQ(split("gpt-2", "Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(split("gpt-2", "na\xC3\xAFve caf\xC3\xA9"), (Pieces{"na\xC3\xAFve", " caf\xC3\xA9"}));
  EXPECT_EQ(split("gpt-2", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E text"),
            (Pieces{"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", " text"}));
}

TEST(PreTokenizeGpt2, ContractionsAreLowerCaseOnly) {
  EXPECT_EQ(split("gpt-2", "I'm DON'T you're"),
            (Pieces{"I", "'m", " DON", "'", "T", " you", "'re"}));
}

TEST(PreTokenizeGpt2, NumbersStayWhole) {
  EXPECT_EQ(split("gpt-2", "1234567"), (Pieces{"1234567"}));
  EXPECT_EQ(split("gpt-2", "v 42"), (Pieces{"v", " 42"}));
}

TEST(PreTokenizeGpt2, WhitespaceRunsLeaveOneSpaceToTheNextWord) {
  EXPECT_EQ(split("gpt-2", "a   b\n\n c"), (Pieces{"a", "  ", " b", "\n\n", " c"}));
  EXPECT_EQ(split("gpt-2", "a\n\n  b"), (Pieces{"a", "\n\n ", " b"}));
  EXPECT_EQ(split("gpt-2", "ab  "), (Pieces{"ab", "  "}));
  // A lone tab, NBSP or ideographic space before a word matches nothing: a gap of its own.
  EXPECT_EQ(split("gpt-2", "a\tb"), (Pieces{"a", "\t", "b"}));
  EXPECT_EQ(split("gpt-2",
                  "a\xC2\xA0"
                  "b"),
            (Pieces{"a", "\xC2\xA0", "b"}));
  EXPECT_EQ(split("gpt-2", "\xE6\x97\xA5\xE3\x80\x80\xE6\x9C\xAC"),
            (Pieces{"\xE6\x97\xA5", "\xE3\x80\x80", "\xE6\x9C\xAC"}));
}

TEST(PreTokenizeGpt2, CodeAndEmoji) {
  EXPECT_EQ(split("gpt-2", "x = foo(bar);  // ok"),
            (Pieces{"x", " =", " foo", "(", "bar", ");", " ", " //", " ok"}));
  EXPECT_EQ(split("gpt-2", "\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99 ok!"),
            (Pieces{"\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99", " ok", "!"}));
}

// ---- Llama 3 (cl100k) ----------------------------------------------------------------------

TEST(PreTokenizeLlama3, ContractionsIgnoreCase) {
  EXPECT_EQ(split("llama3", "I'm DON'T you're"), (Pieces{"I", "'m", " DON", "'T", " you", "'re"}));
}

TEST(PreTokenizeLlama3, DigitsByThree) {
  EXPECT_EQ(split("llama3", "1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(split("llama3", "3.14"), (Pieces{"3", ".", "14"}));
}

TEST(PreTokenizeLlama3, Whitespace) {
  EXPECT_EQ(split("llama3", "a   b\n\n c"), (Pieces{"a", "  ", " b", "\n\n", " c"}));
  // \s*[\r\n]+ ends at the last newline; the spaces after it split as usual.
  EXPECT_EQ(split("llama3", "a\n\n  b"), (Pieces{"a", "\n\n", " ", " b"}));
  // Any one non-letter, non-newline character may lead a word.
  EXPECT_EQ(split("llama3", "a\tb"), (Pieces{"a", "\tb"}));
  EXPECT_EQ(split("llama3",
                  "a\xC2\xA0"
                  "b"),
            (Pieces{"a",
                    "\xC2\xA0"
                    "b"}));
  EXPECT_EQ(split("llama3", "ab  "), (Pieces{"ab", "  "}));
}

TEST(PreTokenizeLlama3, CodeAndSymbols) {
  EXPECT_EQ(split("llama3", "x = foo(bar);  // ok"),
            (Pieces{"x", " =", " foo", "(bar", ");", " ", " //", " ok"}));
  EXPECT_EQ(split("llama3", "hello!\n\nworld"), (Pieces{"hello", "!\n\n", "world"}));
  EXPECT_EQ(split("llama3", "\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99 ok!"),
            (Pieces{"\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99", " ok", "!"}));
}

TEST(PreTokenizeLlama3, SameRegexFamily) {
  for (const char* name : {"llama-bpe", "dbrx", "smaug-bpe", "chatglm-bpe"}) {
    EXPECT_EQ(split(name, "I'M 1234567"), (Pieces{"I", "'M", " ", "123", "456", "7"})) << name;
  }
}

// ---- Qwen2 / StableLM2: Llama 3 with single digits -----------------------------------------

TEST(PreTokenizeQwen2, SingleDigits) {
  for (const char* name : {"qwen2", "stablelm2"}) {
    EXPECT_EQ(split(name, "1234567"), (Pieces{"1", "2", "3", "4", "5", "6", "7"})) << name;
    EXPECT_EQ(split(name, "I'm DON'T"), (Pieces{"I", "'m", " DON", "'T"})) << name;
    EXPECT_EQ(split(name, "x = foo(bar);"), (Pieces{"x", " =", " foo", "(bar", ");"})) << name;
  }
}

// ---- Falcon: [\p{P}\$\+<=>\^~\|`]+ , then GPT-2, then [0-9][0-9][0-9] -----------------------

TEST(PreTokenizeFalcon, PunctuationFirst) {
  EXPECT_EQ(split("falcon", "Hello, world!"), (Pieces{"Hello", ",", " world", "!"}));
  EXPECT_EQ(split("falcon", "I'm DON'T"), (Pieces{"I", "'", "m", " DON", "'", "T"}));
  EXPECT_EQ(split("falcon", "x = foo(bar);  // ok"),
            (Pieces{"x", " ", "=", " foo", "(", "bar", ");", "  ", "//", " ok"}));
  EXPECT_EQ(split("falcon", "a`b"), (Pieces{"a", "`", "b"}));
}

TEST(PreTokenizeFalcon, DigitsByThreeAfterGpt2) {
  EXPECT_EQ(split("falcon", "1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(split("falcon", "12345 abc"), (Pieces{"123", "45", " abc"}));
  // The GPT-2 piece " 12345" keeps its space as a gap before the first group of three.
  EXPECT_EQ(split("falcon", "a 12345"), (Pieces{"a", " ", "123", "45"}));
  EXPECT_EQ(split("falcon", "$100 + 20"), (Pieces{"$", "100", " ", "+", " 20"}));
  EXPECT_EQ(split("falcon", "a   b\n\n c"), (Pieces{"a", "  ", " b", "\n\n", " c"}));
}

// ---- llama.cpp's default: punctuation, GPT-2, \p{N}+, [0-9][0-9][0-9] ------------------------

TEST(PreTokenizeDefault, Sequence) {
  EXPECT_EQ(split("default", "1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(split("default", "a 12345"), (Pieces{"a", " ", "123", "45"}));
  EXPECT_EQ(split("default", "x = foo(bar);"), (Pieces{"x", " ", "=", " foo", "(", "bar", ");"}));
  EXPECT_EQ(split("default", "a`b"), (Pieces{"a", "`", "b"}));  // ` is no punctuation here
}

// ---- StarCoder / Refact / Command-R: \p{N}, then GPT-2 --------------------------------------

TEST(PreTokenizeStarcoder, EveryDigitAlone) {
  for (const char* name : {"starcoder", "refact", "command-r"}) {
    EXPECT_EQ(split(name, "1234567"), (Pieces{"1", "2", "3", "4", "5", "6", "7"})) << name;
    EXPECT_EQ(split(name, "a 12 b"), (Pieces{"a", " ", "1", "2", " b"})) << name;
    EXPECT_EQ(split(name, "x = foo(bar);  // ok"),
              (Pieces{"x", " =", " foo", "(", "bar", ");", " ", " //", " ok"}))
        << name;
    EXPECT_EQ(split(name, "I'm DON'T"), (Pieces{"I", "'m", " DON", "'", "T"})) << name;
  }
}

// ---- DeepSeek Coder: [\r\n], \s?\p{L}+, \s?\p{P}+, CJK, \p{N} --------------------------------

TEST(PreTokenizeDeepseekCoder, Sequence) {
  EXPECT_EQ(split("deepseek-coder", "Hello world\nfoo"), (Pieces{"Hello", " world", "\n", "foo"}));
  EXPECT_EQ(split("deepseek-coder", "x = foo(bar);  // ok"),
            (Pieces{"x", " =", " foo", "(", "bar", ");", " ", " //", " ok"}));
  EXPECT_EQ(split("deepseek-coder", "1234567"), (Pieces{"1", "2", "3", "4", "5", "6", "7"}));
  EXPECT_EQ(split("deepseek-coder", "I'm"), (Pieces{"I", "'", "m"}));
  EXPECT_EQ(split("deepseek-coder", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E text"),
            (Pieces{"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", " text"}));
}

// ---- DeepSeek LLM: [\r\n], cased letters, punctuation, \s+$, CJK, \p{N}+ ----------------------

TEST(PreTokenizeDeepseekLlm, Sequence) {
  EXPECT_EQ(split("deepseek-llm", "Hello world 123!"),
            (Pieces{"Hello", " world", " ", "123", "!"}));
  EXPECT_EQ(split("deepseek-llm", "a  "), (Pieces{"a", "  "}));
  // Each regex splits the pieces of the one before: the punctuation class !-/:-~ holds the
  // ASCII letters, so it cuts "caf" from the "é" that the letter regex had kept with it.
  EXPECT_EQ(split("deepseek-llm", "caf\xC3\xA9"), (Pieces{"caf", "\xC3\xA9"}));
  EXPECT_EQ(
      split("deepseek-llm",
            "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80"),
      (Pieces{"\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82", " \xD0\xBC\xD0\xB8\xD1\x80"}));
  // The ideographic space is whitespace, never part of a CJK run.
  EXPECT_EQ(split("deepseek-llm", "\xE6\x97\xA5\xE6\x9C\xAC\xE3\x80\x80\xE8\xAA\x9E"),
            (Pieces{"\xE6\x97\xA5\xE6\x9C\xAC", "\xE3\x80\x80", "\xE8\xAA\x9E"}));
  // Greek capital omega with oxia..small omega with oxia (U+1F5F..U+1F7D) are letters here.
  EXPECT_EQ(split("deepseek-llm", "\xE1\xBD\xBD!"), (Pieces{"\xE1\xBD\xBD", "!"}));
}

// ---- BLOOM / Poro: ' ?[^(\s|.,!?…。，、।۔،)]+' -------------------------------------------------

TEST(PreTokenizeBloom, Sequence) {
  EXPECT_EQ(split("bloom", "Hello, world! (ok)"),
            (Pieces{"Hello", ",", " world", "! (", "ok", ")"}));
  EXPECT_EQ(split("bloom", "a   b"), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(split("bloom", "1234567"), (Pieces{"1234567"}));
}

// ---- Tekken and GPT-4o: case-aware words ----------------------------------------------------

TEST(PreTokenizeTekken, CamelCase) {
  EXPECT_EQ(split("tekken", "HelloWorld"), (Pieces{"Hello", "World"}));
  EXPECT_EQ(split("tekken", "HTTPServer"), (Pieces{"HTTPServer"}));
  EXPECT_EQ(split("tekken", "ABC def"), (Pieces{"ABC", " def"}));
  EXPECT_EQ(split("tekken", "1234"), (Pieces{"1", "2", "3", "4"}));
  EXPECT_EQ(split("gpt-4o", "I'm DON'T you're"), (Pieces{"I'm", " DON'T", " you're"}));
  EXPECT_EQ(split("gpt-4o", "1234567"), (Pieces{"123", "456", "7"}));
}

// ---- SuperBPE: empty matches split digit runs into groups of three from the right ------------

TEST(PreTokenizeSuperBpe, EmptyMatchesSplit) {
  EXPECT_EQ(split("superbpe", "1234567"), (Pieces{"1", "234", "567"}));
  EXPECT_EQ(split("superbpe", "abc 1234"), (Pieces{"abc ", "1", "234"}));
}

}  // namespace
}  // namespace tessera::tok
