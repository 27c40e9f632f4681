#include "synth_vocab.h"

#include <cstdio>
#include <set>
#include <vector>

namespace tessera::cli {
namespace {

const char* const kWords[] = {
    "the", "and", "a", "to", "of", "in", "was", "he", "she", "it", "that", "his", "her", "with",
    "for", "on", "they", "said", "you", "at", "but", "one", "time", "once", "upon", "there",
    "little", "big", "day", "dog", "cat", "girl", "boy", "happy", "saw", "play", "wanted", "friend",
    "mom", "had", "very", "so", "went", "is", "be", "not", "what", "all", "were", "we", "when",
    "your", "can", "out", "up", "about", "who", "them", "then", "make", "like", "him", "into",
    "look", "more", "write", "go", "see", "number", "no", "way", "could", "people", "my", "than",
    "first", "water", "been", "call", "now", "find", "long", "down", "get", "come", "made", "may",
    "hello", "world", "tree", "sun", "run", "ball", "home", "love", "good", "new", "old", "help"};

constexpr const char* kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's visible space

struct VocabBuilder {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  std::set<std::string> seen;

  void add(const std::string& text, float score, int32_t type) {
    if (!seen.insert(text).second) return;
    tokens.push_back(text);
    scores.push_back(score);
    types.push_back(type);
  }
};

}  // namespace

Status add_generated_vocab(gguf::Writer& w, int64_t n_vocab) {
  VocabBuilder v;
  v.add("<unk>", 0.0f, 2);
  v.add("<s>", 0.0f, 3);
  v.add("</s>", 0.0f, 3);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    v.add(name, 0.0f, 6);
  }
  // Single characters first (lowest scores), then word prefixes: longer pieces score
  // higher, so merges prefer them.
  v.add(kSpace, -1000.0f, 1);
  for (char c = 32; c < 127; ++c) {
    if (c != ' ') v.add(std::string(1, c), -1000.0f, 1);
  }
  for (const char* word : kWords) {
    const std::string piece = std::string(kSpace) + word;
    for (size_t len = 4; len <= piece.size(); ++len) {
      v.add(piece.substr(0, len), -100.0f + float(len), 1);
    }
  }
  // Then letter n-grams of growing length, with and without the space mark, until the
  // vocabulary is full (26^3 trigrams alone give over 35000 pieces).
  for (int len = 2; len <= 4 && int64_t(v.tokens.size()) < n_vocab; ++len) {
    std::string gram(size_t(len), 'a');
    while (int64_t(v.tokens.size()) < n_vocab) {
      v.add(gram, -500.0f - float(len), 1);
      v.add(std::string(kSpace) + gram, -400.0f - float(len), 1);
      int i = len - 1;  // next n-gram in lexicographic order
      while (i >= 0 && gram[size_t(i)] == 'z') gram[size_t(i--)] = 'a';
      if (i < 0) break;
      ++gram[size_t(i)];
    }
  }
  if (int64_t(v.tokens.size()) > n_vocab) v.tokens.resize(size_t(n_vocab));
  if (int64_t(v.tokens.size()) < n_vocab || n_vocab < 300) {
    return Status::error("synth: --n-vocab must be between 300 and " + std::to_string(v.tokens.size()) +
                         " for a generated vocabulary (or use --vocab-from)");
  }
  v.scores.resize(v.tokens.size());
  v.types.resize(v.tokens.size());
  w.set("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens", gguf::Value::array(std::move(v.tokens)));
  w.set("tokenizer.ggml.scores", gguf::Value::array(std::move(v.scores)));
  w.set("tokenizer.ggml.token_type", gguf::Value::array(std::move(v.types)));
  w.set("tokenizer.ggml.unknown_token_id", uint32_t(0));
  w.set("tokenizer.ggml.bos_token_id", uint32_t(1));
  w.set("tokenizer.ggml.eos_token_id", uint32_t(2));
  return Status::ok();
}

Status copy_vocab(gguf::Writer& w, const std::string& path, int64_t* n_vocab) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open(path);
  if (!f) return f.status();
  const gguf::Value* tokens = (*f)->find("tokenizer.ggml.tokens");
  if (!tokens || !tokens->as_string_array()) {
    return Status::error("synth: " + path + " has no tokenizer.ggml.tokens array");
  }
  *n_vocab = int64_t(tokens->array_size());
  for (const auto& [key, value] : (*f)->metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) w.set(key, value);
  }
  return Status::ok();
}

}  // namespace tessera::cli
