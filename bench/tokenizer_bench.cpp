// Tokenizer throughput (MB/s of input text): encode and decode of 1 MB of English-like
// text for the SentencePiece and byte-level BPE vocabularies of ../shared/vocab (skipped
// when absent; $TESSERA_SHARED overrides the folder).
//   build/tessera_bench_kernels --benchmark_filter=tokenize
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tessera/gguf.h"
#include "tessera/tokenizer.h"

namespace tessera {
namespace {

std::string shared_dir() {
  if (const char* env = std::getenv("TESSERA_SHARED")) return env;
  // bench/ sits in the checkout; shared/ sits beside the checkout.
  return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "shared")
      .string();
}

std::unique_ptr<Tokenizer> load_vocab(const std::string& name, std::string* error) {
  const std::string path = shared_dir() + "/vocab/ggml-vocab-" + name + ".gguf";
  auto file = gguf::File::open(path);
  if (!file) {
    *error = "vocabulary absent: " + path;
    return nullptr;
  }
  auto tokenizer = Tokenizer::from_gguf(**file);
  if (!tokenizer) {
    *error = tokenizer.status().message();
    return nullptr;
  }
  return std::move(tokenizer).value();
}

/// About `bytes` of English-like prose: common words, capitals, punctuation, numbers,
/// contractions and line breaks, drawn with a fixed seed.
std::string english_text(size_t bytes) {
  static const char* const kWords[] = {
      "the",     "of",      "and",        "to",          "in",          "a",
      "is",      "that",    "for",        "it",          "as",          "was",
      "with",    "be",      "by",         "on",          "not",         "he",
      "this",    "are",     "or",         "his",         "from",        "at",
      "which",   "but",     "have",       "an",          "had",         "they",
      "you",     "were",    "their",      "one",         "all",         "we",
      "can",     "her",     "has",        "there",       "been",        "if",
      "more",    "when",    "will",       "would",       "who",         "so",
      "no",      "model",   "tokenizer",  "inference",   "language",    "engine",
      "quickly", "between", "government", "information", "development", "understanding",
      "however", "through", "important",  "it's",        "don't",       "we're",
      "I'll",    "they've", "2024",       "1,000",       "3.14",        "42",
      "(see",    "below)"};
  static const char* const kPunct[] = {" ", " ", " ", " ", " ", " ", ", ", ". ", ".\n", "; ", "! "};
  std::mt19937 rng(1234);
  std::string text;
  text.reserve(bytes + 64);
  bool capital = true;
  while (text.size() < bytes) {
    std::string word = kWords[rng() % std::size(kWords)];
    if (capital && word[0] >= 'a' && word[0] <= 'z') word[0] = static_cast<char>(word[0] - 32);
    text += word;
    const std::string punct = kPunct[rng() % std::size(kPunct)];
    text += punct;
    capital = punct.find('.') != std::string::npos || punct.find('!') != std::string::npos;
  }
  return text;
}

void bench_encode(benchmark::State& state, const char* vocab) {
  std::string error;
  auto tokenizer = load_vocab(vocab, &error);
  if (!tokenizer) {
    state.SkipWithError(error.c_str());
    return;
  }
  const std::string text = english_text(size_t{1} << 20);
  size_t n_tokens = 0;
  for (auto _ : state) {
    const auto ids = tokenizer->encode(text, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
}

void bench_decode(benchmark::State& state, const char* vocab) {
  std::string error;
  auto tokenizer = load_vocab(vocab, &error);
  if (!tokenizer) {
    state.SkipWithError(error.c_str());
    return;
  }
  const std::string text = english_text(size_t{1} << 20);
  const auto ids = tokenizer->encode(text, false);
  for (auto _ : state) {
    const std::string out = tokenizer->decode(ids);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

BENCHMARK_CAPTURE(bench_encode, tokenize_spm_llama, "llama-spm")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_encode, tokenize_bpe_gpt2, "gpt-2")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_encode, tokenize_bpe_falcon, "falcon")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_encode, tokenize_bpe_starcoder, "starcoder")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_decode, detokenize_spm_llama, "llama-spm")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_decode, detokenize_bpe_gpt2, "gpt-2")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera
