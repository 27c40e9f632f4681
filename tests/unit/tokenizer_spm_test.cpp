// SentencePiece-style tokenizer ("llama" vocabularies): exact ids against llama.cpp's
// test vectors, round trips, special tokens, bad input, load errors and speed.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "common/test_util.h"
#include "common/vocab_vectors.h"
#include "tessera/gguf.h"
#include "tessera/tokenizer.h"
#include "tokenizer/spm.h"
#include "tokenizer/vocab.h"

namespace tessera {
namespace {

constexpr const char* kSpmVocab = "vocab/ggml-vocab-llama-spm.gguf";

using test::read_inputs;
using test::read_outputs;
using test::read_text;

std::unique_ptr<Tokenizer> load(const std::string& path) {
  auto file = gguf::File::open(path);
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file) return nullptr;
  auto tokenizer = Tokenizer::from_gguf(**file);
  EXPECT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
  return tokenizer ? std::move(tokenizer).value() : nullptr;
}

TEST(TokenizerSpm, MatchesLlamaCppVocabTestVectors) {
  TESSERA_REQUIRE_SHARED(path, kSpmVocab);
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  EXPECT_EQ(tokenizer->model_name(), "llama");
  EXPECT_EQ(tokenizer->n_vocab(), 32000);
  const auto inputs = read_inputs(path + ".inp");
  const auto outputs = read_outputs(path + ".out");
  ASSERT_EQ(inputs.size(), outputs.size());
  ASSERT_GT(inputs.size(), 40u);
  size_t matched = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto ids = tokenizer->encode(inputs[i], /*add_special=*/false);
    EXPECT_EQ(ids, outputs[i]) << "test string " << i << ": '" << inputs[i] << "'";
    matched += ids == outputs[i];
  }
  EXPECT_EQ(matched, inputs.size());
  std::printf("[ vocab    ] llama-spm: %zu/%zu lines match\n", matched, inputs.size());
}

TEST(TokenizerSpm, RoundTripsTestStrings) {
  TESSERA_REQUIRE_SHARED(path, kSpmVocab);
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  for (const std::string& s : read_inputs(path + ".inp")) {
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(s, false)), s);
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(s, true)), s);  // BOS yields no text
  }
}

TEST(TokenizerSpm, SingleTokensDecodeToTheirPiece) {
  TESSERA_REQUIRE_SHARED(path, kSpmVocab);
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  for (TokenId id = 0; id < tokenizer->n_vocab(); ++id) {
    const std::string piece = tokenizer->token_to_piece(id);
    const std::string& text = tokenizer->token_text(id);
    switch (tokenizer->token_type(id)) {
      case TokenType::Normal:
        EXPECT_EQ(piece, tok::unescape_spaces(text)) << id;
        EXPECT_EQ(tokenizer->decode({id}), piece[0] == ' ' ? piece.substr(1) : piece) << id;
        break;
      case TokenType::Byte:
        ASSERT_EQ(piece.size(), 1u) << id;
        EXPECT_EQ(static_cast<uint8_t>(piece[0]), id - 3) << id;  // <0x00> is id 3
        EXPECT_EQ(tokenizer->decode({id}), piece) << id;
        break;
      default:  // <unk>, <s>, </s>
        EXPECT_EQ(piece, "") << id;
        EXPECT_EQ(tokenizer->token_to_piece(id, /*render_special=*/true), text) << id;
    }
  }
  EXPECT_EQ(tokenizer->token_to_piece(-1), "");
  EXPECT_EQ(tokenizer->token_to_piece(tokenizer->n_vocab()), "");
  EXPECT_EQ(tokenizer->token_text(-5), "");
}

TEST(TokenizerSpm, SpecialIdsAndEmptyInput) {
  TESSERA_REQUIRE_SHARED(path, kSpmVocab);
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  EXPECT_EQ(tokenizer->bos(), 1);
  EXPECT_EQ(tokenizer->eos(), 2);
  EXPECT_EQ(tokenizer->unk(), 0);
  EXPECT_TRUE(tokenizer->is_eog(2));
  EXPECT_FALSE(tokenizer->is_eog(1));
  EXPECT_FALSE(tokenizer->is_eog(-1));
  EXPECT_EQ(tokenizer->token_type(1), TokenType::Control);
  EXPECT_TRUE(tokenizer->encode("", false).empty());
  EXPECT_EQ(tokenizer->encode("", true), std::vector<TokenId>{1});
  EXPECT_EQ(tokenizer->encode("Hello world", true), (std::vector<TokenId>{1, 15043, 3186}));
}

TEST(TokenizerSpm, ParsesSpecialTokensOnlyWhenAsked) {
  TESSERA_REQUIRE_SHARED(path, kSpmVocab);
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  // Each run after a special token gets the space prefix again (llama.cpp).
  EXPECT_EQ(tokenizer->encode("<s>Hello</s>", false, true), (std::vector<TokenId>{1, 15043, 2}));
  EXPECT_EQ(tokenizer->encode("Hello</s> world", false, true),
            (std::vector<TokenId>{15043, 2, 29871, 3186}));
  EXPECT_EQ(tokenizer->encode("<unk>", false, true), std::vector<TokenId>{0});
  const auto plain = tokenizer->encode("<s>Hello</s>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
  EXPECT_EQ(tokenizer->decode(plain), "<s>Hello</s>");
}

TEST(TokenizerSpm, InvalidUtf8DoesNotCrashAndRoundTrips) {
  TESSERA_REQUIRE_SHARED(path, kSpmVocab);
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  const std::vector<std::string> bad = {"\x80",
                                        "\xE2\x82",
                                        "a\xF0\x9F",
                                        "\xFF\xFE\xFD",
                                        "x\xC3",
                                        std::string("\0a\0", 3),
                                        "\xE2"
                                        "ab c"};
  for (const std::string& s : bad) EXPECT_EQ(tokenizer->decode(tokenizer->encode(s, true)), s);
  // Random bytes, without spaces: a space after a truncated UTF-8 lead byte is escaped
  // to U+2581 and then swallowed into that "character", so it comes back as U+2581's
  // bytes, exactly as with llama.cpp.
  std::mt19937 rng(42);
  for (int round = 0; round < 500; ++round) {
    std::string s(rng() % 40, '\0');
    for (char& c : s) c = static_cast<char>(rng() & 0xFF);
    std::replace(s.begin(), s.end(), ' ', '_');
    const auto ids = tokenizer->encode(s, true, true);
    for (TokenId id : ids) ASSERT_TRUE(id >= 0 && id < tokenizer->n_vocab());
    if (s.find("\xE2\x96\x81") == std::string::npos && s.find("<s>") == std::string::npos &&
        s.find("</s>") == std::string::npos && s.find("<unk>") == std::string::npos) {
      EXPECT_EQ(tokenizer->decode(ids), s) << "round " << round;
    }
  }
}

TEST(TokenizerSpm, Stories260KPromptsMatchGolden) {
  TESSERA_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  EXPECT_EQ(tokenizer->n_vocab(), 512);
  // A chess vocabulary under LLaMA's first pieces: "▁" 482, 'O' by byte <0x4F> (82),
  // "n" 508, "c" 499, "e" 496, "▁" 482, 'u' <0x75> (120), "p" 488, 'o' <0x6F> (114), "n",
  // "▁a" 267, "▁", 't' 'i' 'm' as bytes (119 108 112), "e".
  const std::vector<TokenId> once = {1,   482, 82,  508, 499, 496, 482, 120, 488,
                                     114, 508, 267, 482, 119, 108, 112, 496};
  EXPECT_EQ(tokenizer->encode("Once upon a time", true), once);
  EXPECT_EQ(tokenizer->decode(once), "Once upon a time");
  const std::pair<const char*, const char*> golden[] = {
      {"golden/stories260K.once-upon.json", "Once upon a time"},
      {"golden/stories260K.little-dog.json", "The little dog ran to the park and"},
  };
  for (const auto& [file, prompt] : golden) {
    const std::string json_path = test::shared_file(file);
    if (json_path.empty()) continue;
    const auto json = nlohmann::json::parse(read_text(json_path));
    const auto expected = json.at("prompt_ids").get<std::vector<TokenId>>();
    EXPECT_EQ(tokenizer->encode(prompt, true), expected) << file;
  }
}

// A megabyte of text round-trips (speed is measured in bench/tokenizer_bench.cpp).
TEST(TokenizerSpm, OneMegabyteRoundTrips) {
  TESSERA_REQUIRE_SHARED(path, kSpmVocab);
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  const std::string text = test::english_text(size_t(1) << 20);
  const auto ids = tokenizer->encode(text, true);
  EXPECT_GT(ids.size(), text.size() / 8);
  EXPECT_EQ(tokenizer->decode(ids), text);
}

TEST(TokenizerSpm, CuttingTheTextGivesTheSameTokensAsMergingItWhole) {
  // The encoder merges the text piece by piece between characters that no token joins;
  // llama.cpp merges it whole. Both must agree on every input.
  for (const char* name : {kSpmVocab, "models/stories260K.gguf"}) {
    const std::string path = test::shared_file(name);
    if (path.empty()) continue;
    auto tokenizer = load(path);
    ASSERT_TRUE(tokenizer);
    const tok::SpmAlgorithm cut(tokenizer->vocab(), true);
    const tok::SpmAlgorithm whole(tokenizer->vocab(), false);
    const char* parts[] = {" ",   "  ",           "\n",   "\t",       "the",          "Hello",
                           "ing", "\xE2\x96\x81", "\xE2", "\xC3\xA9", "\xE6\x97\xA5", "333",
                           "...", "'s",           "a",    "\x80"};
    std::mt19937 rng(3);
    for (int round = 0; round < 2000; ++round) {
      std::string s;
      for (int i = static_cast<int>(rng() % 120); i > 0; --i) s += parts[rng() % std::size(parts)];
      std::vector<TokenId> a, b;
      cut.encode_text(s, true, a);
      whole.encode_text(s, true, b);
      ASSERT_EQ(a, b) << name << " round " << round;
    }
  }
}

// ---- synthetic vocabularies: the algorithm's rules in isolation -------------------------

std::unique_ptr<Tokenizer> tiny(std::vector<std::string> tokens, std::vector<float> scores,
                                std::vector<int32_t> types = {}) {
  auto vocab = tok::Vocab::from_lists("llama", std::move(tokens), std::move(scores),
                                      std::move(types), {.unk = 0}, {.add_bos = false});
  EXPECT_TRUE(vocab.is_ok()) << vocab.status().message();
  auto tokenizer = Tokenizer::from_vocab(std::move(vocab).value());
  EXPECT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
  return std::move(tokenizer).value();
}

TEST(TokenizerSpmRules, HighestScoreMergesFirst) {
  // "abc": "ab" (-1) beats "bc" (-2), then "abc" is not reachable from "ab"+"c".
  auto t = tiny({"<unk>", "a", "b", "c", "ab", "bc", "\xE2\x96\x81"},
                {0, -10, -10, -10, -1, -2, -5}, {2, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(t->encode("abc", false), (std::vector<TokenId>{6, 4, 3}));
  auto u = tiny({"<unk>", "a", "b", "c", "ab", "bc", "\xE2\x96\x81"},
                {0, -10, -10, -10, -2, -1, -5}, {2, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(u->encode("abc", false), (std::vector<TokenId>{6, 1, 5}));
}

TEST(TokenizerSpmRules, TiesMergeLeftmostFirst) {
  // "aaa": the pairs (0,1) and (1,2) tie; the leftmost merges, leaving "aa" "a".
  auto t = tiny({"<unk>", "a", "aa", "\xE2\x96\x81"}, {0, -10, -1, -5}, {2, 1, 1, 1});
  EXPECT_EQ(t->encode("aaa", false), (std::vector<TokenId>{3, 2, 1}));
}

TEST(TokenizerSpmRules, ByteFallbackAndUnknown) {
  // Without <0xNN> tokens a character outside the vocabulary becomes unk, per byte.
  auto t = tiny({"<unk>", "a", "\xE2\x96\x81"}, {0, -1, -1}, {2, 1, 1});
  EXPECT_EQ(t->encode("a\xC3\xA9", false), (std::vector<TokenId>{2, 1, 0, 0}));
  EXPECT_EQ(t->decode(t->encode("a", false)), "a");
}

TEST(TokenizerSpmRules, UserDefinedTokensAreAlwaysCutOut) {
  auto t = tiny({"<unk>", "a", "\xE2\x96\x81", "<tool>"}, {0, -1, -1, 0}, {2, 1, 1, 4});
  EXPECT_EQ(t->encode("a<tool>a", false, false), (std::vector<TokenId>{2, 1, 3, 2, 1}));
  EXPECT_EQ(t->decode({3}), "<tool>");
}

TEST(TokenizerSpmRules, NoSpacePrefixWhenTheVocabularySaysSo) {
  auto vocab =
      tok::Vocab::from_lists("llama", {"<unk>", "a", "\xE2\x96\x81"}, {0, -1, -1}, {2, 1, 1},
                             {.unk = 0}, {.add_bos = false, .add_space_prefix = false});
  ASSERT_TRUE(vocab.is_ok());
  auto t = Tokenizer::from_vocab(std::move(vocab).value());
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ((*t)->encode("a a", false), (std::vector<TokenId>{1, 2, 1}));
  EXPECT_EQ((*t)->decode({2, 1}), " a");
}

TEST(TokenizerSpmRules, VocabListErrors) {
  EXPECT_FALSE(tok::Vocab::from_lists("llama", {}, {}, {}, {}, {}).is_ok());
  auto mismatch = tok::Vocab::from_lists("llama", {"a", "b"}, {0}, {}, {}, {});
  ASSERT_FALSE(mismatch.is_ok());
  EXPECT_NE(mismatch.status().message().find("scores"), std::string::npos);
  EXPECT_FALSE(tok::Vocab::from_lists("llama", {"a"}, {}, {}, {.bos = 5}, {}).is_ok());
  auto bpe = Tokenizer::from_vocab(*tok::Vocab::from_lists("gpt2", {"a"}, {}, {}, {}, {}));
  ASSERT_FALSE(bpe.is_ok());
  EXPECT_NE(bpe.status().message().find("gpt2"), std::string::npos);
}

// ---- GGUF loading errors -------------------------------------------------------------------

Result<std::unique_ptr<Tokenizer>> from_writer(const gguf::Writer& writer) {
  auto file = gguf::File::from_bytes(writer.to_bytes(), "test.gguf");
  if (!file) return file.status();
  return Tokenizer::from_gguf(**file);
}

gguf::Writer small_vocab_writer() {
  gguf::Writer w;
  w.set("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens",
        gguf::Value::array(std::vector<std::string>{"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a"}));
  w.set("tokenizer.ggml.scores", gguf::Value::array(std::vector<float>{0, 0, 0, -1, -2}));
  w.set("tokenizer.ggml.token_type", gguf::Value::array(std::vector<int32_t>{2, 3, 3, 1, 1}));
  return w;
}

void expect_error(const gguf::Writer& w, const std::string& needle) {
  auto t = from_writer(w);
  ASSERT_FALSE(t.is_ok()) << "expected an error mentioning " << needle;
  EXPECT_NE(t.status().message().find(needle), std::string::npos) << t.status().message();
}

TEST(TokenizerGguf, LoadsASmallVocabulary) {
  gguf::Writer w = small_vocab_writer();
  w.set("tokenizer.ggml.seperator_token_id", uint32_t{0xFFFFFFFF});
  auto t = from_writer(w);
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_EQ((*t)->bos(), 1);  // llama.cpp's defaults when the keys are absent
  EXPECT_EQ((*t)->eos(), 2);
  EXPECT_EQ((*t)->encode("a", true), (std::vector<TokenId>{1, 3, 4}));
}

TEST(TokenizerGguf, ReportsBadVocabularies) {
  gguf::Writer no_tokens;
  no_tokens.set("tokenizer.ggml.model", "llama");
  expect_error(no_tokens, "tokenizer.ggml.tokens");

  gguf::Writer w = small_vocab_writer();
  w.set("tokenizer.ggml.scores", gguf::Value::array(std::vector<float>{0, 0}));
  expect_error(w, "tokenizer.ggml.scores");

  w = small_vocab_writer();
  w.set("tokenizer.ggml.scores", gguf::Value::array(std::vector<int32_t>{0, 0, 0, 0, 0}));
  expect_error(w, "tokenizer.ggml.scores");

  w = small_vocab_writer();
  w.set("tokenizer.ggml.token_type", gguf::Value::array(std::vector<int32_t>{1}));
  expect_error(w, "tokenizer.ggml.token_type");

  w = small_vocab_writer();
  w.set("tokenizer.ggml.model", "gpt2");
  expect_error(w, "\"gpt2\"");

  w = small_vocab_writer();
  w.set("tokenizer.ggml.model", "wordpiece");
  expect_error(w, "\"wordpiece\"");

  gguf::Writer missing_scores;
  missing_scores.set("tokenizer.ggml.model", "llama");
  missing_scores.set("tokenizer.ggml.tokens",
                     gguf::Value::array(std::vector<std::string>{"a", "b"}));
  expect_error(missing_scores, "tokenizer.ggml.scores");

  gguf::Writer empty;
  expect_error(empty, "tokenizer.ggml.model");
}

}  // namespace
}  // namespace tessera
