// WordPiece tokenizer ("bert" vocabularies): the reference's ids for the archs2 BERT
// vocabulary (4129 tokens: bge's first 4096 plus the one-letter continuations), on the
// golden's hello text and on strings worked out from the reference's rules (per code point
// "NFD" keeping the first code point, lowercase, dropped controls, punctuation / ASCII
// symbols / CJK as one-character words, greedy longest match, unknown whole words).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/test_util.h"
#include "tessera/gguf.h"
#include "tessera/tokenizer.h"
#include "tokenizer/unicode_props.h"
#include "tokenizer/wpm.h"

namespace tessera {
namespace {

constexpr const char* kBertModel = "archs2/models/bert.gguf";

std::unique_ptr<Tokenizer> load(const std::string& path) {
  auto file = gguf::File::open(path);
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file) return nullptr;
  auto tokenizer = Tokenizer::from_gguf(**file);
  EXPECT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
  return tokenizer ? std::move(tokenizer).value() : nullptr;
}

TEST(TokenizerWpm, HelloMatchesTheGolden) {
  TESSERA_REQUIRE_SHARED(path, kBertModel);
  TESSERA_REQUIRE_SHARED(golden_path, "archs2/golden/bert.hello.json");
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  EXPECT_EQ(tokenizer->model_name(), "bert");
  EXPECT_EQ(tokenizer->n_vocab(), 4129);
  std::ifstream in(golden_path);
  const nlohmann::json golden = nlohmann::json::parse(in);
  const std::vector<TokenId> want = golden.at("prompt_ids").get<std::vector<TokenId>>();
  EXPECT_EQ(tokenizer->encode("Hello world, this is a test of the engine.", true), want);
  // Without add_special, no [CLS] / [SEP]; [CLS] and [SEP] are the file's ids.
  const std::vector<TokenId> bare = tokenizer->encode("Hello world, this is a test of the engine.", false);
  EXPECT_EQ(bare, std::vector<TokenId>(want.begin() + 1, want.end() - 1));
  EXPECT_EQ(tokenizer->bos(), 101);
  EXPECT_EQ(tokenizer->unk(), 100);
}

TEST(TokenizerWpm, FollowsTheReferenceRules) {
  TESSERA_REQUIRE_SHARED(path, kBertModel);
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  const struct {
    const char* text;
    std::vector<TokenId> ids;  // with add_special
  } cases[] = {
      // precomposed accents: the first code point of the decomposition (the base letter)
      {"Caf\u00e9  na\u00efve R\u00c9SUM\u00c9", {101, 1039, 2050, 2546, 2063, 1050, 2050, 3512, 2128, 2015, 2819, 2063, 102}},
      // a combining mark already in the text stays in the word: nothing matches it, the
      // whole word is [UNK]
      {"cafe\u0301 ok", {101, 100, 1051, 2243, 102}},
      // CJK ideographs are one-character words; hiragana is not CJK but has its own token
      {"\u6771\u4eac\u306f\u65e5\u672c", {101, 1879, 1755, 1672, 1864, 1876, 102}},
      // ASCII symbols and punctuation split words
      {"a$b+c=d <x> @home #1", {101, 1037, 1002, 1038, 1009, 1039, 1027, 1040, 1026, 1060, 1028, 1030, 2188, 1001, 1015, 102}},
      // greedy longest match, continuations without ##
      {"xyzzyqq supercalifragilistic",
       {101, 1060, 2100, 2480, 2480, 2100, 4096, 4096, 3565, 3540, 3669, 2546, 2527, 2290, 4014, 2923, 2594, 102}},
      // tab and newline split; the control U+0001 is dropped inside the word
      {"tab\there\nnew\x01line", {101, 1056, 2050, 2497, 2182, 2047, 3669, 2638, 102}},
      // non-ASCII punctuation splits too
      {"don't stop\u2014(really)!", {101, 2123, 1005, 1056, 2644, 1517, 1006, 2428, 1007, 999, 102}},
      // U+01C4 has no canonical decomposition; its lowercase U+01C6 is no token: [UNK].
      // U+0130 decomposes to I + dot: "i".
      {"\u00c0\u00c9\u00ce\u00d5\u00dc \u01c4 \u00df \u0130stanbul",
       {101, 1037, 2063, 3695, 2226, 100, 1096, 2003, 2696, 2078, 2497, 2226, 2140, 102}},
      // soft hyphen and zero-width space (format controls) and U+FFFD are dropped
      {"x\u00ady \u200bz\ufffdw", {101, 1060, 2100, 1062, 2860, 102}},
      // Unicode whitespace
      {"a\u3000b\u00a0c\u2028d", {101, 1037, 1038, 1039, 1040, 102}},
      // invalid UTF-8 becomes U+FFFD, which is dropped
      {"\xe4\xb8", {101, 102}},
      {"\u00dcn\u00efc\u00f6d\u00e9\u2014TEST\u2026", {101, 1057, 3490, 3597, 3207, 1517, 3231, 1529, 102}},
      {"", {101, 102}},
  };
  for (const auto& c : cases) EXPECT_EQ(tokenizer->encode(c.text, true), c.ids) << "text: '" << c.text << "'";
}

TEST(TokenizerWpm, SplitsWords) {
  using tok::WpmAlgorithm;
  EXPECT_EQ(WpmAlgorithm::words("Hello,  World!"), (std::vector<std::string>{"hello", ",", "world", "!"}));
  EXPECT_EQ(WpmAlgorithm::words("  "), std::vector<std::string>{});
  // non-ASCII symbols stay in the word; ASCII ones split it
  EXPECT_EQ(WpmAlgorithm::words("a\u00a9b^c"), (std::vector<std::string>{"a\u00a9b", "^", "c"}));
  EXPECT_EQ(WpmAlgorithm::words("\u4e2d\u6587x"), (std::vector<std::string>{"\u4e2d", "\u6587", "x"}));
  // a precomposed letter keeps only its base letter; a separate combining mark stays
  EXPECT_EQ(WpmAlgorithm::words("\u00c9te\u0301"), std::vector<std::string>{"ete\u0301"});
}

TEST(TokenizerWpm, UnicodeProperties) {
  using namespace tok;
  EXPECT_EQ(char_class('a'), CharClass::Other);
  EXPECT_EQ(char_class(','), CharClass::Punctuation);
  EXPECT_EQ(char_class('$'), CharClass::Symbol);
  EXPECT_EQ(char_class(0x01), CharClass::Control);
  EXPECT_EQ(char_class(0xAD), CharClass::Control);   // Cf
  EXPECT_EQ(char_class(0xE000), CharClass::Control); // Co
  EXPECT_EQ(char_class(0x0378), CharClass::Other);   // unassigned: not a control
  EXPECT_EQ(char_class(0x2014), CharClass::Punctuation);
  EXPECT_EQ(nfd_first(0xE9), uint32_t('e'));
  EXPECT_EQ(nfd_first(0xAC00), 0x1100u);  // a Hangul syllable: its leading consonant
  EXPECT_EQ(nfd_first(0x01C4), 0x01C4u);  // only a compatibility decomposition
  EXPECT_EQ(to_lower('A'), uint32_t('a'));
  EXPECT_EQ(to_lower(0x0130), 0x0130u);  // lowercases to two code points: kept
  EXPECT_EQ(to_lower(0x0410), 0x0430u);
  EXPECT_TRUE(is_whitespace(0x3000));
  EXPECT_FALSE(is_whitespace(0x200B));
  EXPECT_TRUE(is_cjk_ideograph(0x4E2D));
  EXPECT_FALSE(is_cjk_ideograph(0x306F));
}

TEST(TokenizerWpm, DecodesPieces) {
  TESSERA_REQUIRE_SHARED(path, kBertModel);
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  const std::vector<TokenId> ids = tokenizer->encode("Hello world.", true);
  EXPECT_EQ(tokenizer->decode(ids), "hello world .");
  EXPECT_EQ(tokenizer->token_to_piece(101), "");
  EXPECT_EQ(tokenizer->token_to_piece(101, true), "[CLS]");
}

}  // namespace
}  // namespace tessera
