// The tokenizer trainer: parameters and errors, determinism, what it learns, the layout of
// the vocabulary, and round trips through a GGUF file read back by our Tokenizer.
#include "tokenizer/train_vocab.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>

#include "tessera/gguf.h"
#include "tessera/tokenizer.h"
#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"

namespace tessera {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";

/// A text of `n_words` words in lines of up to 12: a few frequent words, many rarer ones
/// made of syllables, some punctuation. Deterministic (raw mt19937 output).
std::string sample_text(size_t n_words, uint32_t seed) {
  static const char* const kFrequent[] = {"the", "and", "of", "lord", "unto", "shall", "people"};
  static const char* const kSyllables[] = {"ka", "ri", "to", "men", "sa", "lo", "ver", "un", "di"};
  std::mt19937 rng(seed);
  std::string text;
  for (size_t i = 0; i < n_words; ++i) {
    const uint32_t r = rng();
    if (r % 2 == 0) {
      text += kFrequent[(r >> 8) % std::size(kFrequent)];
    } else {
      for (uint32_t s = 0; s < 1 + (r >> 4) % 3; ++s) text += kSyllables[(r >> (8 + 4 * s)) % 9];
    }
    if ((r >> 20) % 7 == 0) text += ',';
    text += (i % 12 == 11) ? "\n" : " ";
  }
  return text;
}

TrainedVocab train_ok(std::string_view text, int64_t vocab_size) {
  VocabTrainParams p;
  p.vocab_size = vocab_size;
  Result<TrainedVocab> v = train_vocab(text, p);
  EXPECT_TRUE(v.is_ok()) << v.status().message();
  return v ? std::move(v).value() : TrainedVocab{};
}

std::unique_ptr<Tokenizer> load(const TrainedVocab& v) {
  gguf::Writer w;
  const Status written = write_vocab(w, v);
  EXPECT_TRUE(written.is_ok()) << written.message();
  auto file = gguf::File::from_bytes(w.to_bytes(), "trained.gguf");
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file) return nullptr;
  auto tokenizer = Tokenizer::from_gguf(**file);
  EXPECT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
  return tokenizer ? std::move(tokenizer).value() : nullptr;
}

TokenId id_of(const TrainedVocab& v, std::string_view text) {
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.tokens[i] == text) return static_cast<TokenId>(i);
  }
  return -1;
}

/// Whether the text of token `id`, encoded alone, is that one token. A piece without "▁"
/// is encoded after a newline: it then follows the tokens "▁" and <0x0A>.
bool encodes_alone(const Tokenizer& t, TokenId id) {
  const std::string text = tok::unescape_spaces(t.token_text(id));
  if (text.starts_with(' ')) return t.encode(text.substr(1), false) == std::vector<TokenId>{id};
  const std::vector<TokenId> ids = t.encode("\n" + text, false);
  return ids.size() == 3 && ids[2] == id;
}

void expect_error(std::string_view text, const VocabTrainParams& p,
                  const std::vector<std::string>& needles) {
  Result<TrainedVocab> v = train_vocab(text, p);
  ASSERT_FALSE(v.is_ok());
  for (const std::string& needle : needles) {
    EXPECT_NE(v.status().message().find(needle), std::string::npos) << v.status().message();
  }
}

TEST(TrainVocab, RejectsBadParametersWithClearMessages) {
  const std::string text = sample_text(2000, 1);
  VocabTrainParams p;
  p.vocab_size = 100;
  expect_error(text, p, {"vocab_size 100", "256 byte", "275"});
  p.vocab_size = kMinTrainedVocab - 1;
  expect_error(text, p, {"vocab_size 274", "275"});
  p.vocab_size = kMaxTrainedVocab + 1;
  expect_error(text, p, {"out of range"});
  p = {};
  p.character_coverage = 0.0;
  expect_error(text, p, {"character_coverage"});
  p = {};
  p.max_piece_chars = 1;
  expect_error(text, p, {"max_piece_chars"});
  expect_error("", VocabTrainParams{}, {"empty"});
  // A text too small for the size asked: the message says how large it may be.
  expect_error("to be or not to be", VocabTrainParams{}, {"at most", "vocab_size 4096"});
  expect_error("\n\t\n\xFF\xFE", VocabTrainParams{}, {"at most"});
}

TEST(TrainVocab, HasExactlyTheSizeAskedAndLlamasLayout) {
  const std::string text = sample_text(20000, 2);
  for (int64_t size : {kMinTrainedVocab, int64_t{300}, int64_t{512}}) {
    const TrainedVocab v = train_ok(text, size);
    ASSERT_EQ(static_cast<int64_t>(v.tokens.size()), size);
    ASSERT_EQ(v.scores.size(), v.tokens.size());
    ASSERT_EQ(v.types.size(), v.tokens.size());
    EXPECT_EQ(v.n_merged + v.n_chars + 259, size);
    EXPECT_EQ(v.tokens[0], "<unk>");
    EXPECT_EQ(v.tokens[1], "<s>");
    EXPECT_EQ(v.tokens[2], "</s>");
    EXPECT_EQ((std::vector<int32_t>(v.types.begin(), v.types.begin() + 3)),
              (std::vector<int32_t>{2, 3, 3}));
    EXPECT_EQ(v.tokens[3], "<0x00>");
    EXPECT_EQ(v.tokens[3 + 0x0A], "<0x0A>");
    EXPECT_EQ(v.tokens[258], "<0xFF>");
    for (size_t i = 3; i < 259; ++i) EXPECT_EQ(v.types[i], 6) << i;
    for (size_t i = 259; i < v.tokens.size(); ++i) {
      EXPECT_EQ(v.types[i], 1) << i;
      if (i > 259) {
        EXPECT_LT(v.scores[i], v.scores[i - 1]) << i;  // -rank, then below
      }
    }
    EXPECT_EQ(v.scores[259], 0.0f);
    // Learned pieces first, single characters last.
    EXPECT_GT(tok::unescape_spaces(v.tokens[259]).size(), 1u);
  }
}

TEST(TrainVocab, IsDeterministicAndIndependentOfWordOrder) {
  const std::string text = sample_text(20000, 3);
  const TrainedVocab a = train_ok(text, 600);
  const TrainedVocab b = train_ok(text, 600);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.scores, b.scores);
  EXPECT_EQ(a.types, b.types);
  // The same lines in reverse order hold the same words: the same vocabulary. Each line
  // starts with a space so that the first line's words do not change with its place.
  std::vector<std::string> lines;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    std::string& line = lines.emplace_back(1, ' ');
    line.append(text, pos, end - pos);
    line += '\n';
    pos = end + 1;
  }
  std::string forward, backward;
  for (const std::string& line : lines) forward += line;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) backward += *it;
  EXPECT_EQ(train_ok(forward, 600).tokens, train_ok(backward, 600).tokens);
}

TEST(TrainVocab, FrequentWordsBecomeSingleTokens) {
  const std::string text = sample_text(20000, 4);
  const TrainedVocab v = train_ok(text, 400);
  auto tokenizer = load(v);
  ASSERT_TRUE(tokenizer);
  for (const char* word : {"the", "and", "of", "lord", "unto", "shall", "people"}) {
    const TokenId id = id_of(v, std::string(kSpace) + word);
    ASSERT_NE(id, -1) << word;
    EXPECT_EQ(tokenizer->encode(word, false), std::vector<TokenId>{id}) << word;
    EXPECT_EQ(tokenizer->encode(std::string("x ") + word, false).back(), id) << word;
  }
  // Every learned piece is what its own text encodes to (BPE does not promise it in
  // general; it holds here and on the KJV).
  int64_t alone = 0;
  for (int64_t i = 0; i < v.n_merged; ++i) alone += encodes_alone(*tokenizer, TokenId(259 + i));
  EXPECT_EQ(alone, v.n_merged);
}

TEST(TrainVocab, PiecesAreWellFormed) {
  std::string text = sample_text(20000, 5);
  text +=
      "\ttabbed\tfields\r\n   indented  twice\n\x7F\x01 caf\xC3\xA9 na\xC3\xAFve \xF0\x9F\x99\x82";
  VocabTrainParams p;
  p.vocab_size = 600;
  p.max_piece_chars = 6;
  Result<TrainedVocab> v = train_vocab(text, p);
  ASSERT_TRUE(v.is_ok()) << v.status().message();
  std::set<std::string> seen;
  for (size_t i = 259; i < v->tokens.size(); ++i) {
    const std::string& piece = v->tokens[i];
    EXPECT_TRUE(seen.insert(piece).second) << "repeated piece " << piece;  // llama.cpp asserts it
    EXPECT_TRUE(tok::is_valid_utf8(piece)) << i;
    EXPECT_EQ(piece.find(kSpace, 1), std::string::npos) << piece;
    size_t chars = 0;
    for (size_t pos = 0; pos < piece.size(); pos += tok::scan_utf8(piece, pos).len) {
      const auto c = static_cast<uint8_t>(piece[pos]);
      EXPECT_TRUE(c > 0x20 && c != 0x7F) << "whitespace or control in piece " << i;
      ++chars;
    }
    EXPECT_LE(chars, 6u) << piece;
  }
  EXPECT_EQ(id_of(*v, "\t"), -1);
  EXPECT_EQ(id_of(*v, "\n"), -1);
}

TEST(TrainVocab, RoundTripsThroughAGgufFile) {
  const std::string text = sample_text(20000, 6);
  const TrainedVocab v = train_ok(text, 512);
  gguf::Writer w;
  ASSERT_TRUE(write_vocab(w, v).is_ok());
  const auto path = std::filesystem::temp_directory_path() /
                    ("tessera_train_vocab_" + std::to_string(::getpid()) + ".gguf");
  ASSERT_TRUE(w.write(path.string()).is_ok());
  auto file = gguf::File::open(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  auto loaded = Tokenizer::from_gguf(**file);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  const Tokenizer& t = **loaded;
  EXPECT_EQ(t.model_name(), "llama");
  ASSERT_EQ(t.n_vocab(), 512);
  EXPECT_EQ(t.unk(), 0);
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.eos(), 2);
  EXPECT_TRUE(t.add_bos_token());
  EXPECT_FALSE(t.add_eos_token());
  for (TokenId id = 0; id < t.n_vocab(); ++id) {
    EXPECT_EQ(t.token_text(id), v.tokens[static_cast<size_t>(id)]);
    EXPECT_EQ(static_cast<int32_t>(t.token_type(id)), v.types[static_cast<size_t>(id)]) << id;
  }
  const std::string samples[] = {
      text.substr(0, 3000),
      "the lord shall",
      " leading space, trailing space ",
      "tabs\tand\nnew\n\nlines\r\n",
      "emoji \xF0\x9F\x99\x82\xF0\x9F\x8E\x89 and accents caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87",
      // (As in llama.cpp, an invalid lead byte swallows the bytes it announces, and a space
      // among them stays U+2581: such bytes are kept away from spaces here.)
      "invalid \xFF"
      "abc\xFE"
      "defg \x80 bytes \xC3(x truncated \xE2\x82",
      "\x01\x02\x7F controls <s> </s> <unk> <0x41>",
      std::string("nul\0byte", 8),
  };
  for (const std::string& s : samples) {
    const std::vector<TokenId> ids = t.encode(s, /*add_special=*/true);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.front(), 1);
    EXPECT_EQ(t.decode(ids), s);
  }
  EXPECT_EQ(t.encode("\n", false), (std::vector<TokenId>{id_of(v, kSpace), 3 + 0x0A}));
}

TEST(TrainVocab, RandomBytesTrainAndRoundTrip) {
  // Without spaces and literal U+2581, which SPM cannot give back inside invalid sequences.
  std::mt19937 rng(7);
  std::string bytes(200000, '\0');
  for (char& c : bytes) {
    do c = static_cast<char>(rng() & 0xFF);
    while (c == ' ' || c == '\xE2');
  }
  const TrainedVocab v = train_ok(bytes, 400);
  auto tokenizer = load(v);
  ASSERT_TRUE(tokenizer);
  for (size_t i = 259; i < v.tokens.size(); ++i) EXPECT_TRUE(tok::is_valid_utf8(v.tokens[i])) << i;
  EXPECT_EQ(tokenizer->decode(tokenizer->encode(bytes, false)), bytes);
}

TEST(TrainVocab, NeverLearnsTheTextsOfFixedTokensOrRoles) {
  // Frequent enough to be merged first, were they not refused. A literal U+2581 is a space.
  std::string text;
  for (int i = 0; i < 3000; ++i) {
    text +=
        "<s>\n</s>\n<unk>\n<0x41>\n<|endoftext|>\n<PAD>\n<|im_end|>\n<EOT>\n<|channel|>\n"
        "\xE2\x96\x81<PRE>\n";
  }
  text += sample_text(20000, 11);
  const TrainedVocab v = train_ok(text, 600);
  auto tokenizer = load(v);
  ASSERT_TRUE(tokenizer);
  std::set<std::string> seen;
  for (TokenId id = 0; id < tokenizer->n_vocab(); ++id) {
    EXPECT_TRUE(seen.insert(v.tokens[static_cast<size_t>(id)]).second)
        << v.tokens[static_cast<size_t>(id)];
    // The loader kept every token's type: no learned piece was taken for a role.
    EXPECT_EQ(static_cast<int32_t>(tokenizer->token_type(id)), v.types[static_cast<size_t>(id)])
        << v.tokens[static_cast<size_t>(id)];
  }
  for (const char* role :
       {"<|endoftext|>", "<PAD>", "<EOT>", "<|im_end|>", "<|channel|>", "\xE2\x96\x81<PRE>"}) {
    EXPECT_EQ(id_of(v, role), -1) << role;
  }
  EXPECT_NE(id_of(v, "<|endoftext"), -1);  // what could be learned was
  // No fixed token is built by merges either: "<s>" stays text (not BOS), "<0x41>" too.
  const std::string head = text.substr(0, 500);
  for (TokenId id : tokenizer->encode(head, false)) EXPECT_TRUE(id >= 259 || id == 3 + 0x0A) << id;
  EXPECT_EQ(tokenizer->decode(tokenizer->encode(head, false)), tok::unescape_spaces(head));
}

TEST(TrainVocab, RareCharactersFallBackToBytes) {
  std::string text = sample_text(20000, 8);
  text += " \xD0\xB6";  // one Cyrillic zhe among ~150000 characters: below the coverage
  const TrainedVocab v = train_ok(text, 400);
  EXPECT_EQ(id_of(v, "\xD0\xB6"), -1);
  EXPECT_EQ(id_of(v, "\xE2\x96\x81\xD0\xB6"), -1);
  auto tokenizer = load(v);
  ASSERT_TRUE(tokenizer);
  EXPECT_EQ(tokenizer->encode("\xD0\xB6", false),
            (std::vector<TokenId>{id_of(v, kSpace), 3 + 0xD0, 3 + 0xB6}));
  // With full coverage it is a piece.
  VocabTrainParams p;
  p.vocab_size = 400;
  p.character_coverage = 1.0;
  Result<TrainedVocab> full = train_vocab(text, p);
  ASSERT_TRUE(full.is_ok()) << full.status().message();
  EXPECT_NE(id_of(*full, "\xD0\xB6"), -1);
}

TEST(TrainVocab, ReportsProgress) {
  const std::string text = sample_text(5000, 9);
  VocabTrainParams p;
  p.vocab_size = 320;
  int64_t calls = 0, last = 0, target = 0;
  Result<TrainedVocab> v = train_vocab(text, p, [&](int64_t learned, int64_t total) {
    EXPECT_EQ(learned, last + 1);
    last = learned;
    target = total;
    ++calls;
  });
  ASSERT_TRUE(v.is_ok()) << v.status().message();
  EXPECT_EQ(last, target);
  EXPECT_EQ(calls, v->n_merged);
}

TEST(TrainVocab, WriteVocabChecksItsInput) {
  TrainedVocab v = train_ok(sample_text(5000, 10), 300);
  v.scores.pop_back();
  gguf::Writer w;
  EXPECT_NE(write_vocab(w, v).message().find("must match"), std::string::npos);
  v.scores.push_back(-1.0f);
  v.eos = 300;
  EXPECT_NE(write_vocab(w, v).message().find("out of range"), std::string::npos);
}

std::string read_command(const char* command) {
  std::string out;
  FILE* pipe = ::popen(command, "r");
  if (pipe == nullptr) return out;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  ::pclose(pipe);
  return out;
}

size_t count_words(std::string_view text) {
  size_t words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    words += !space && !in_word;
    in_word = !space;
  }
  return words;
}

TEST(TrainVocab, KingJamesBible) {
  if (std::system("command -v bible >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "the `bible` command is absent (it prints the KJV)";
  }
  const std::string text = read_command("bible gen1:1-rev22:21 2>/dev/null");
  ASSERT_GT(text.size(), 4000000u);
  const size_t words = count_words(text);
  for (int64_t size : {2048, 4096}) {
    VocabTrainParams p;
    p.vocab_size = size;
    const auto start = std::chrono::steady_clock::now();
    Result<TrainedVocab> v = train_vocab(text, p);
    const double train_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(v.is_ok()) << v.status().message();
    ASSERT_EQ(static_cast<int64_t>(v->tokens.size()), size);
    auto tokenizer = load(*v);
    ASSERT_TRUE(tokenizer);
    const auto enc_start = std::chrono::steady_clock::now();
    const std::vector<TokenId> ids = tokenizer->encode(text, false);
    const double encode_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - enc_start).count();
    EXPECT_EQ(tokenizer->decode(ids), text);
    int64_t alone = 0;
    for (int64_t i = 0; i < v->n_merged; ++i) alone += encodes_alone(*tokenizer, TokenId(259 + i));
    std::printf(
        "[ kjv      ] vocab %lld: trained in %.2f s (%lld pieces, %lld characters); "
        "%zu tokens for %zu words (%.3f tokens/word, %zu bytes), encoded in %.2f s; "
        "%lld/%lld pieces encode alone\n",
        static_cast<long long>(size), train_s, static_cast<long long>(v->n_merged),
        static_cast<long long>(v->n_chars), ids.size(), words,
        static_cast<double>(ids.size()) / static_cast<double>(words), text.size(), encode_s,
        static_cast<long long>(alone), static_cast<long long>(v->n_merged));
  }
}

}  // namespace
}  // namespace tessera
