#include "fuzz/fuzz_support.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "tessera/gguf.h"
#include "tessera/log.h"

namespace tessera::fuzz {

void quiet() { set_log_level(LogLevel::Silent); }

SynthParams tiny_model_params() {
  SynthParams p;
  p.arch = "llama";
  p.n_embd = 32;
  p.n_layer = 2;
  p.n_head = 4;
  p.n_head_kv = 2;
  p.n_ff = 64;
  p.n_ctx = 128;
  p.n_vocab = 64;
  p.type = DType::F32;
  p.seed = 7;
  return p;
}

const std::vector<uint8_t>& tiny_model_bytes() {
  static const std::vector<uint8_t> bytes = [] {
    const std::string& path = temp_path("tiny-model");
    const Status s = write_random_model(tiny_model_params(), path);
    if (!s) {
      std::fprintf(stderr, "fuzz: cannot write the tiny model: %s\n", s.message().c_str());
      std::abort();
    }
    return read_file(path);
  }();
  return bytes;
}

ContextParams tiny_context_params() {
  ContextParams p;
  p.n_ctx = 64;
  p.n_batch = 64;
  p.n_threads = 1;
  return p;
}

std::string shared_dir() {
  if (const char* env = std::getenv("TESSERA_SHARED"); env && *env) return env;
  return TESSERA_SHARED_DEFAULT;
}

const std::vector<std::unique_ptr<Tokenizer>>& tokenizers() {
  static const std::vector<std::unique_ptr<Tokenizer>> list = [] {
    std::vector<std::unique_ptr<Tokenizer>> out;
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(shared_dir() + "/vocab", ec)) {
      if (e.path().extension() == ".gguf") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    // TESSERA_STRICT_DATA=1 (CI, which has the data): the shared vocabularies must be there.
    if (const char* strict = std::getenv("TESSERA_STRICT_DATA"); files.empty() && strict && std::string(strict) == "1") {
      std::fprintf(stderr, "fuzz: reference data absent: %s/vocab/*.gguf (TESSERA_STRICT_DATA=1)\n", shared_dir().c_str());
      std::abort();
    }
    for (const auto& f : files) {
      Result<std::unique_ptr<gguf::File>> file = gguf::File::open(f.string());
      if (!file) continue;
      Result<std::unique_ptr<Tokenizer>> t = Tokenizer::from_gguf(**file);
      if (t) out.push_back(std::move(*t));
    }
    ModelParams mp;
    mp.repack = false;
    if (Result<std::unique_ptr<Model>> m = Model::load_default(mp); m && (*m)->tokenizer()) {
      Result<std::unique_ptr<Tokenizer>> t = Tokenizer::from_gguf((*m)->file());
      if (t) out.push_back(std::move(*t));
    }
    if (out.empty()) {
      std::fprintf(stderr, "fuzz: no vocabulary (neither %s/vocab nor a default model)\n", shared_dir().c_str());
      std::abort();
    }
    return out;
  }();
  return list;
}

namespace {

struct TempFiles {
  std::map<std::string, std::string> paths;
  ~TempFiles() {
    for (const auto& [stem, path] : paths) std::remove(path.c_str());
  }
};

}  // namespace

const std::string& temp_path(const std::string& stem) {
  static TempFiles files;
  auto it = files.paths.find(stem);
  if (it == files.paths.end()) {
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("tessera-fuzz-" + stem + "-" + std::to_string(getpid()))).string();
    it = files.paths.emplace(stem, path).first;
  }
  return it->second;
}

void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void property_failed(const char* what) {
  std::fprintf(stderr, "fuzz: property failed: %s\n", what);
  std::abort();
}

}  // namespace tessera::fuzz
