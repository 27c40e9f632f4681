// Byte-level BPE ("gpt2" vocabularies): exact ids against llama.cpp's test vectors,
// round trips, every token's bytes, special tokens, the merge rules on hand-built
// vocabularies, pre-tokenizer selection, and the streaming decoder.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "common/test_util.h"
#include "common/vocab_vectors.h"
#include "tessera/gguf.h"
#include "tessera/log.h"
#include "tessera/tokenizer.h"
#include "tokenizer/bpe.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace tessera {
namespace {

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

/// The BPE vocabularies of shared/vocab and the pre-tokenizer each file names.
struct VocabCase {
  const char* name;
  const char* pre;
};
constexpr VocabCase kBpeVocabs[] = {
    {"gpt-2", "gpt-2"}, {"falcon", "falcon"}, {"starcoder", "starcoder"}};

std::string vocab_path(const char* name) {
  return std::string("vocab/ggml-vocab-") + name + ".gguf";
}

class BpeVocab : public ::testing::TestWithParam<VocabCase> {};

TEST_P(BpeVocab, MatchesLlamaCppVocabTestVectors) {
  TESSERA_REQUIRE_SHARED(path, vocab_path(GetParam().name));
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  EXPECT_EQ(tokenizer->model_name(), "gpt2");
  EXPECT_EQ(tokenizer->pre_tokenizer(), GetParam().pre);
  const auto inputs = read_inputs(path + ".inp");
  const auto outputs = read_outputs(path + ".out");
  ASSERT_EQ(inputs.size(), outputs.size());
  ASSERT_GT(inputs.size(), 40u);
  size_t matched = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto ids = tokenizer->encode(inputs[i], /*add_special=*/false, /*parse_special=*/false);
    EXPECT_EQ(ids, outputs[i]) << "test string " << i << ": '" << inputs[i] << "'";
    matched += ids == outputs[i];
  }
  EXPECT_EQ(matched, inputs.size());
  std::printf("[ vocab    ] %s: %zu/%zu lines match\n", GetParam().name, matched, inputs.size());
}

TEST_P(BpeVocab, RoundTripsTestStrings) {
  TESSERA_REQUIRE_SHARED(path, vocab_path(GetParam().name));
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  for (const std::string& s : read_inputs(path + ".inp")) {
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(s, false)), s);
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(s, true)), s);  // BOS, if any, yields no text
  }
}

TEST_P(BpeVocab, EveryTokenDecodesToItsBytes) {
  TESSERA_REQUIRE_SHARED(path, vocab_path(GetParam().name));
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  size_t normal = 0;
  for (TokenId id = 0; id < tokenizer->n_vocab(); ++id) {
    const std::string& text = tokenizer->token_text(id);
    const std::string piece = tokenizer->token_to_piece(id);
    switch (tokenizer->token_type(id)) {
      case TokenType::Normal: {
        // Each code point of the text is one byte of the piece.
        std::string expected;
        for (size_t pos = 0; pos < text.size();) {
          const tok::Utf8Scan scan = tok::scan_utf8(text, pos);
          ASSERT_EQ(scan.kind, tok::Utf8Kind::Valid) << id;
          const int byte = tok::codepoint_to_byte(scan.cpt);
          ASSERT_GE(byte, 0) << "token " << id << " '" << text
                             << "' holds a code point outside the byte map";
          expected += static_cast<char>(byte);
          pos += scan.len;
        }
        EXPECT_EQ(piece, expected) << id;
        EXPECT_EQ(tokenizer->decode({id}), expected) << id;
        ++normal;
        break;
      }
      case TokenType::UserDefined:
        EXPECT_EQ(piece, text) << id;
        break;
      default:
        EXPECT_EQ(piece, "") << id;
        EXPECT_EQ(tokenizer->token_to_piece(id, true), text) << id;
    }
  }
  EXPECT_GT(normal, static_cast<size_t>(tokenizer->n_vocab() / 2));
}

TEST_P(BpeVocab, EncodingAPieceGivesItsBytesBack) {
  // Encoding the bytes of any single token and decoding the result gives the bytes back
  // (the ids may differ: BPE need not reach the token itself).
  TESSERA_REQUIRE_SHARED(path, vocab_path(GetParam().name));
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  for (TokenId id = 0; id < tokenizer->n_vocab(); id += 7) {
    if (tokenizer->token_type(id) != TokenType::Normal) continue;
    const std::string piece = tokenizer->token_to_piece(id);
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(piece, false)), piece) << id;
  }
}

TEST_P(BpeVocab, RandomBytesRoundTrip) {
  TESSERA_REQUIRE_SHARED(path, vocab_path(GetParam().name));
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  // Falcon and StarCoder lack tokens for some bytes (e.g. F5..FF, which never occur in
  // UTF-8) and for some ASCII controls (0x1C): as in llama.cpp, an ASCII one is dropped,
  // any other is encoded as U+FFFD, so it comes back as that.
  bool has_token[256] = {};
  size_t n_with_token = 0;
  for (int b = 0; b < 256; ++b) {
    has_token[b] = tokenizer->vocab().find(tok::byte_to_utf8(static_cast<uint8_t>(b))) != tok::kNoToken;
    n_with_token += has_token[b];
  }
  std::printf("[ bytes    ] %s: %zu of 256 bytes have a token\n", GetParam().name, n_with_token);
  ASSERT_GE(n_with_token, 200u);
  std::mt19937 rng(11);
  const char* parts[] = {" ",        "  ",  "\n",   "\t",       "the",  "Hello", "'s",
                         "'LL",      "123", "4567", "é",        "日本", "🦙",  "\xE2\x80\x83",
                         "\xC2\xA0", "(",   "...",  "\xF0\x9F", "\x80", "\xC3"};
  for (int round = 0; round < 300; ++round) {
    std::string s;
    for (int i = static_cast<int>(rng() % 30); i > 0; --i) {
      if (rng() % 4 == 0) {
        s += static_cast<char>(rng() % 256);
      } else {
        s += parts[rng() % std::size(parts)];
      }
    }
    std::string expected;
    for (const char c : s) {
      const auto u = static_cast<uint8_t>(c);
      if (has_token[u]) expected += c;
      else if (u >= 0x80) expected += "\xEF\xBF\xBD";
    }
    const auto ids = tokenizer->encode(s, false);
    for (TokenId id : ids) ASSERT_TRUE(id >= 0 && id < tokenizer->n_vocab());
    EXPECT_EQ(tokenizer->decode(ids), expected) << "round " << round;
  }
}

INSTANTIATE_TEST_SUITE_P(SharedVocabs, BpeVocab, ::testing::ValuesIn(kBpeVocabs),
                         [](const ::testing::TestParamInfo<VocabCase>& param_info) {
                           std::string name = param_info.param.name;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(TokenizerBpe, DefaultsAndSpecialTokens) {
  TESSERA_REQUIRE_SHARED(path, vocab_path("gpt-2"));
  auto t = load(path);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->n_vocab(), 50257);
  EXPECT_FALSE(t->add_bos_token());  // "gpt2" vocabularies: no BOS unless the file says so
  EXPECT_EQ(t->bos(), 50256);
  EXPECT_EQ(t->eos(), 50256);
  EXPECT_TRUE(t->is_eog(50256));
  EXPECT_EQ(t->encode("Hello world", true), (std::vector<TokenId>{15496, 995}));
  // "<|endoftext|>" is a control token: its text is plain text unless parse_special.
  const auto plain = t->encode("a<|endoftext|>b", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 50256), 0);
  EXPECT_EQ(t->decode(plain), "a<|endoftext|>b");
  const auto parsed = t->encode("a<|endoftext|>b", false, true);
  EXPECT_EQ(parsed, (std::vector<TokenId>{64, 50256, 65}));
  EXPECT_EQ(t->decode(parsed), "ab");  // control tokens yield no text
  EXPECT_EQ(t->token_to_piece(50256, true), "<|endoftext|>");
}

TEST(TokenizerBpe, StarcoderSpecialTokens) {
  TESSERA_REQUIRE_SHARED(path, vocab_path("starcoder"));
  auto t = load(path);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->bos(), 0);
  EXPECT_TRUE(t->is_eog(0));
  // FIM ids come from the token texts when the metadata has none (as llama.cpp).
  EXPECT_EQ(t->token_text(t->fim_pre()), "<fim_prefix>");
  EXPECT_EQ(t->token_text(t->fim_suf()), "<fim_suffix>");
  EXPECT_EQ(t->token_text(t->fim_mid()), "<fim_middle>");
  const auto ids = t->encode("<fim_prefix>def f():<fim_suffix>", false, true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), t->fim_pre());
  EXPECT_EQ(ids.back(), t->fim_suf());
  const auto plain = t->encode("<fim_prefix>", false, false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), t->fim_pre()), 0);
  EXPECT_EQ(t->decode(plain), "<fim_prefix>");
}

// A megabyte of text round-trips (speed is measured in bench/tokenizer_bench.cpp).
TEST(TokenizerBpe, BytesWithoutATokenBecomeReplacementCharacters) {
  // Falcon has no tokens for 0xFE and 0xFF (found by the tokenize fuzzer: the text gave
  // no tokens at all).
  TESSERA_REQUIRE_SHARED(path, vocab_path("falcon"));
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  const auto ids = tokenizer->encode("A\xfe\xff", false);
  EXPECT_EQ(tokenizer->decode(ids), "A\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(TokenizerBpe, OneMegabyteRoundTrips) {
  TESSERA_REQUIRE_SHARED(path, vocab_path("gpt-2"));
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  const std::string text = test::english_text(size_t(1) << 20);
  const auto ids = tokenizer->encode(text, false);
  EXPECT_GT(ids.size(), text.size() / 8);
  EXPECT_EQ(tokenizer->decode(ids), text);
}

TEST(TokenizerBpe, EncodesOnManyThreadsAtOnce) {
  TESSERA_REQUIRE_SHARED(path, vocab_path("falcon"));
  auto tokenizer = load(path);
  ASSERT_TRUE(tokenizer);
  std::string text;
  for (const std::string& s : read_inputs(path + ".inp")) text += s + "\n";
  const auto expected = tokenizer->encode(text, false);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) mismatches += tokenizer->encode(text, false) != expected;
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// ---- hand-built vocabularies: the algorithm's rules in isolation ----------------------------

/// The 256 byte-level characters (token id = byte), then `extra` tokens (byte-level text).
std::vector<std::string> byte_level_tokens(const std::vector<std::string>& extra) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(tok::byte_to_utf8(static_cast<uint8_t>(b)));
  tokens.insert(tokens.end(), extra.begin(), extra.end());
  return tokens;
}

std::unique_ptr<Tokenizer> tiny_bpe(const std::vector<std::string>& extra,
                                    std::vector<std::string> merges, std::string pre = "gpt-2",
                                    std::vector<int32_t> types = {}) {
  auto vocab =
      tok::Vocab::from_lists("gpt2", byte_level_tokens(extra), {}, std::move(types), {},
                             tok::default_flags("gpt2"), {std::move(merges), std::move(pre), {}, {}});
  EXPECT_TRUE(vocab.is_ok()) << vocab.status().message();
  if (!vocab) return nullptr;
  auto tokenizer = Tokenizer::from_vocab(std::move(vocab).value());
  EXPECT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
  return tokenizer ? std::move(tokenizer).value() : nullptr;
}

constexpr TokenId kExtra = 256;  // id of the first extra token
TokenId byte_id(char c) { return static_cast<uint8_t>(c); }

TEST(TokenizerBpeRules, LowestRankMergesFirst) {
  auto t = tiny_bpe({"ab", "bc"}, {"b c", "a b"});
  EXPECT_EQ(t->encode("abc", false), (std::vector<TokenId>{byte_id('a'), kExtra + 1}));
  auto u = tiny_bpe({"ab", "bc"}, {"a b", "b c"});
  EXPECT_EQ(u->encode("abc", false), (std::vector<TokenId>{kExtra, byte_id('c')}));
}

TEST(TokenizerBpeRules, TiesMergeLeftmostFirst) {
  auto t = tiny_bpe({"aa"}, {"a a"});
  EXPECT_EQ(t->encode("aaa", false), (std::vector<TokenId>{kExtra, byte_id('a')}));
  EXPECT_EQ(t->encode("aaaa", false), (std::vector<TokenId>{kExtra, kExtra}));
}

TEST(TokenizerBpeRules, MergesThroughTextsThatAreNoTokens) {
  // "ab" is no token, but the merge "ab c" reaches the token "abc".
  auto t = tiny_bpe({"abc"}, {"a b", "ab c"});
  EXPECT_EQ(t->encode("abc", false), std::vector<TokenId>{kExtra});
  // A final symbol that is no token falls back to its bytes' tokens.
  auto u = tiny_bpe({}, {"a b"});
  EXPECT_EQ(u->encode("abx", false),
            (std::vector<TokenId>{byte_id('a'), byte_id('b'), byte_id('x')}));
}

TEST(TokenizerBpeRules, RepeatedPairKeepsItsFirstRank) {
  auto t = tiny_bpe({"ab", "bc"}, {"a b", "b c", "a b"});
  EXPECT_EQ(t->encode("abc", false), (std::vector<TokenId>{kExtra, byte_id('c')}));
}

TEST(TokenizerBpeRules, SpacesAreByteLevelCharacters) {
  // ' ' is U+0120 'Ġ' in byte-level text.
  auto t = tiny_bpe({"\xC4\xA0w"}, {"\xC4\xA0 w"});
  EXPECT_EQ(t->encode("a w", false), (std::vector<TokenId>{byte_id('a'), kExtra}));
  EXPECT_EQ(t->decode({kExtra}), " w");
  EXPECT_EQ(t->token_to_piece(byte_id(' ')), " ");
  EXPECT_EQ(t->token_to_piece(0x0A), "\n");
}

TEST(TokenizerBpeRules, Llama3TakesWholePreTokensThatAreTokens) {
  // "hello" is a token no merge reaches: llama3 (ignore_merges) takes it whole.
  auto llama3 = tiny_bpe({"hello"}, {}, "llama3");
  EXPECT_EQ(llama3->encode("hello", false), std::vector<TokenId>{kExtra});
  auto gpt2 = tiny_bpe({"hello"}, {}, "gpt-2");
  EXPECT_EQ(gpt2->encode("hello", false).size(), 5u);
}

TEST(TokenizerBpeRules, InvalidUtf8KeepsItsBytes) {
  auto t = tiny_bpe({"ab"}, {"a b"});
  for (const std::string s : {"\xFF\xFE"
                              "ab",
                              "ab\xE2\x82", "\x80 ab \xC3", "a\xF0\x9F\xA6"}) {
    const auto ids = t->encode(s, false);
    EXPECT_EQ(t->decode(ids), s);
  }
  // Invalid bytes split as U+FFFD would (a symbol): "ab" still merges.
  EXPECT_EQ(t->encode("\xFF"
                      "ab",
                      false),
            (std::vector<TokenId>{0xFF, kExtra}));
}

TEST(TokenizerBpeRules, UserDefinedAlwaysControlOnlyWithParseSpecial) {
  // types: 256 bytes normal, then a user-defined and a control token.
  std::vector<int32_t> types(258, 1);
  types[256] = 4;
  types[257] = 3;
  auto t = tiny_bpe({"<tool>", "<ctl>"}, {}, "gpt-2", types);
  EXPECT_EQ(t->encode("a<tool>b", false, false),
            (std::vector<TokenId>{byte_id('a'), kExtra, byte_id('b')}));
  EXPECT_EQ(t->encode("a<ctl>b", false, false).size(), 7u);
  EXPECT_EQ(t->encode("a<ctl>b", false, true),
            (std::vector<TokenId>{byte_id('a'), kExtra + 1, byte_id('b')}));
  EXPECT_EQ(t->decode({kExtra}), "<tool>");
  EXPECT_EQ(t->decode({kExtra + 1}), "");
}

TEST(TokenizerBpeRules, NoMergesIsAnError) {
  auto vocab = tok::Vocab::from_lists("gpt2", byte_level_tokens({}), {}, {}, {}, {});
  ASSERT_TRUE(vocab.is_ok());
  auto t = Tokenizer::from_vocab(std::move(vocab).value());
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find("tokenizer.ggml.merges"), std::string::npos);
  // An empty list is fine: character-level BPE.
  EXPECT_TRUE(tiny_bpe({}, {}) != nullptr);
}

// ---- GGUF: tokenizer.ggml.pre selects the pre-tokenizer --------------------------------------

gguf::Writer small_bpe_writer(const std::string& pre) {
  gguf::Writer w;
  w.set("tokenizer.ggml.model", "gpt2");
  if (!pre.empty()) w.set("tokenizer.ggml.pre", pre);
  w.set("tokenizer.ggml.tokens",
        gguf::Value::array(byte_level_tokens({"12", "123", "1234", "45", "456"})));
  w.set("tokenizer.ggml.merges",
        gguf::Value::array(std::vector<std::string>{"1 2", "12 3", "123 4", "4 5", "45 6"}));
  return w;
}

std::unique_ptr<Tokenizer> from_writer(const gguf::Writer& w) {
  auto file = gguf::File::from_bytes(w.to_bytes(), "test.gguf");
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file) return nullptr;
  auto t = Tokenizer::from_gguf(**file);
  EXPECT_TRUE(t.is_ok()) << t.status().message();
  return t ? std::move(t).value() : nullptr;
}

TEST(TokenizerBpeGguf, LlamaBpeUsesTheLlama3Regex) {
  auto t = from_writer(small_bpe_writer("llama-bpe"));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->pre_tokenizer(), "llama3");
  EXPECT_TRUE(t->add_bos_token());  // llama3 implies BOS, as in llama.cpp
  // Digits by three: "123" "456" "7".
  EXPECT_EQ(t->encode("1234567", false),
            (std::vector<TokenId>{kExtra + 1, kExtra + 4, byte_id('7')}));

  auto g = from_writer(small_bpe_writer("gpt-2"));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->pre_tokenizer(), "gpt-2");
  EXPECT_FALSE(g->add_bos_token());
  // One pre-token: "1234" then the rest one by one.
  EXPECT_EQ(g->encode("1234567", false),
            (std::vector<TokenId>{kExtra + 2, byte_id('5'), byte_id('6'), byte_id('7')}));
}

TEST(TokenizerBpeGguf, UnknownOrMissingPreUsesTheDefaultWithAWarning) {
  std::vector<std::string> warnings;
  set_log_sink([&](LogLevel level, const std::string& message) {
    if (level >= LogLevel::Warn) warnings.push_back(message);
  });
  auto t = from_writer(small_bpe_writer("mystery-pre"));
  auto m = from_writer(small_bpe_writer(""));
  set_log_sink({});
  ASSERT_TRUE(t && m);
  EXPECT_EQ(t->pre_tokenizer(), "default");
  EXPECT_EQ(m->pre_tokenizer(), "default");
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("mystery-pre"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("missing"), std::string::npos) << warnings[1];
  // The default splits digit runs by three too.
  EXPECT_EQ(t->encode("1234567", false),
            (std::vector<TokenId>{kExtra + 1, kExtra + 4, byte_id('7')}));
}

TEST(TokenizerBpeGguf, SpecialIdsAndFlagsFromKeys) {
  gguf::Writer w = small_bpe_writer("gpt-2");
  w.set("tokenizer.ggml.bos_token_id", uint32_t{1});
  w.set("tokenizer.ggml.eos_token_id", uint32_t{2});
  w.set("tokenizer.ggml.eot_token_id", uint32_t{3});
  w.set("tokenizer.ggml.fim_pre_token_id", uint32_t{4});
  w.set("tokenizer.ggml.add_bos_token", true);
  auto t = from_writer(w);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->bos(), 1);
  EXPECT_EQ(t->eos(), 2);
  EXPECT_EQ(t->eot(), 3);
  EXPECT_EQ(t->fim_pre(), 4);
  EXPECT_TRUE(t->is_eog(2));
  EXPECT_TRUE(t->is_eog(3));
  EXPECT_FALSE(t->is_eog(1));
  EXPECT_EQ(t->encode("12", true), (std::vector<TokenId>{1, kExtra}));

  // Without keys: llama.cpp's "gpt2" defaults (BOS = EOS = 11), no BOS added.
  auto d = from_writer(small_bpe_writer("gpt-2"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->bos(), 11);
  EXPECT_EQ(d->eos(), 11);
  EXPECT_EQ(d->encode("12", true), std::vector<TokenId>{kExtra});

  gguf::Writer bad;
  bad.set("tokenizer.ggml.model", "gpt2");
  bad.set("tokenizer.ggml.tokens", gguf::Value::array(byte_level_tokens({})));
  auto file = gguf::File::from_bytes(bad.to_bytes(), "bad.gguf");
  ASSERT_TRUE(file.is_ok());
  auto e = Tokenizer::from_gguf(**file);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("tokenizer.ggml.merges"), std::string::npos);
}

// ---- StreamDecoder ---------------------------------------------------------------------------

bool valid_utf8(const std::string& s) { return tok::is_valid_utf8(s); }

TEST(StreamDecoder, HoldsBackSplitCharacters) {
  auto t = tiny_bpe({}, {});
  ASSERT_TRUE(t);
  StreamDecoder d(*t);
  // U+1F999 (F0 9F A6 99), one byte token at a time.
  EXPECT_EQ(d.push(0xF0), "");
  EXPECT_EQ(d.push(0x9F), "");
  EXPECT_EQ(d.push(0xA6), "");
  EXPECT_EQ(d.push(0x99), "\xF0\x9F\xA6\x99");
  // "a" then 日 (E6 97 A5) split 1+2, then "b".
  EXPECT_EQ(d.push('a'), "a");
  EXPECT_EQ(d.push(0xE6), "");
  EXPECT_EQ(d.push(0x97), "");
  EXPECT_EQ(d.push(0xA5), "\xE6\x97\xA5");
  EXPECT_EQ(d.push('b'), "b");
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamDecoder, InvalidBytesBecomeReplacementCharacters) {
  auto t = tiny_bpe({}, {});
  ASSERT_TRUE(t);
  StreamDecoder d(*t);
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(d.push(0x80), fffd);  // a continuation byte cannot start a character
  EXPECT_EQ(d.push(0xFF), fffd);
  EXPECT_EQ(d.push(0xE6), "");
  EXPECT_EQ(d.push(0x97), "");
  EXPECT_EQ(d.push('a'), fffd + "a");  // E6 97 never completed: one U+FFFD
  EXPECT_EQ(d.push(0xF0), "");
  EXPECT_EQ(d.push(0x9F), "");
  EXPECT_EQ(d.flush(), fffd);  // the stream ended inside a character
  EXPECT_EQ(d.flush(), "");
  EXPECT_EQ(d.push(0xED), "");
  EXPECT_EQ(d.push(0xA0), fffd + fffd);  // ED A0: a surrogate, never valid
}

TEST(StreamDecoder, RealVocabularies) {
  const std::string text =
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\xA6\x99 ok "
      "\xF0\x9F\x98\xB6\xE2\x80\x8D\xF0\x9F\x8C\xAB\xEF\xB8\x8F caf\xC3\xA9";
  for (const char* name : {"vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-falcon.gguf",
                           "vocab/ggml-vocab-starcoder.gguf", "vocab/ggml-vocab-llama-spm.gguf"}) {
    const std::string path = test::shared_file(name);
    if (path.empty()) continue;
    auto t = load(path);
    ASSERT_TRUE(t);
    const auto ids = t->encode(text, false);
    StreamDecoder d(*t);
    std::string streamed;
    size_t held = 0;
    for (TokenId id : ids) {
      const std::string chunk = d.push(id);
      EXPECT_TRUE(valid_utf8(chunk)) << name;
      held += chunk.empty();
      streamed += chunk;
    }
    streamed += d.flush();
    std::string pieces;
    for (TokenId id : ids) pieces += t->token_to_piece(id);
    EXPECT_EQ(streamed, pieces) << name;
    EXPECT_GT(held, 0u) << name << ": some character should span tokens";
  }
}

}  // namespace
}  // namespace tessera
