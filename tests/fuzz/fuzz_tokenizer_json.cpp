// Fuzzes the tokenizer part of `tessera convert`: the first byte picks the file the rest
// becomes (tokenizer.json, tokenizer.model, vocab.txt, or tokenizer_config.json beside a
// small valid tokenizer.json), and add_hf_vocab reads the folder. A refusal must carry a
// message; an accepted folder's keys are written, read back, and when the tokenizer loads
// it encodes and decodes a text: nothing in the files may lead a read out of bounds.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "convert/hf_vocab.h"
#include "fuzz/fuzz_support.h"
#include "tessera/gguf.h"
#include "tessera/tokenizer.h"

using namespace tessera;
namespace fs = std::filesystem;

namespace {

constexpr const char* kFiles[] = {"tokenizer.json", "tokenizer.model", "vocab.txt",
                                  "tokenizer_config.json"};

// The tokenizer.json beside a fuzzed tokenizer_config.json.
constexpr const char* kSmallTokenizer =
    R"({"added_tokens": [{"id": 5, "content": "<|end|>", "special": true}],)"
    R"( "pre_tokenizer": {"type": "ByteLevel", "use_regex": true},)"
    R"( "model": {"type": "BPE", "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "he": 4, "<|end|>": 5},)"
    R"( "merges": ["h e", ["l", "o"]]}})";

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const fs::path dir = fuzz::temp_path("hf_vocab");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const char* file = kFiles[data[0] % 4];
  fuzz::write_file((dir / file).string(), data + 1, size - 1);
  if (data[0] % 4 == 3) std::ofstream(dir / "tokenizer.json") << kSmallTokenizer;
  gguf::Writer w;
  w.set("general.architecture", "llama");
  const Status s = convert::add_hf_vocab(dir, "llama", w);
  if (!s) {
    if (s.message().empty()) fuzz::property_failed("a refused tokenizer file has no message");
    return 0;
  }
  const std::string out = (dir / "out.gguf").string();
  if (!w.write(out)) fuzz::property_failed("the keys of an accepted tokenizer cannot be written");
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open(out);
  if (!f) fuzz::property_failed("the written tokenizer keys do not read back");
  Result<std::unique_ptr<Tokenizer>> t = Tokenizer::from_gguf(**f);
  if (t) {
    const std::vector<TokenId> ids = (*t)->encode("hello <|end|> world", true, true);
    volatile size_t sink = (*t)->decode(ids).size();
    (void)sink;
  }
  return 0;
}
