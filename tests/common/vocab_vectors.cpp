#include "common/vocab_vectors.h"

#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

namespace tessera::test {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The test strings of a .inp file: the text between "\n__ggml_vocab_test__\n" separators.
std::vector<std::string> read_inputs(const std::string& path) {
  const std::string text = read_text(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  for (size_t pos = 0; pos < text.size();) {
    const size_t next = text.find(sep, pos);
    if (next == std::string::npos) {
      inputs.push_back(text.substr(pos));
      break;
    }
    inputs.push_back(text.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return inputs;
}

/// The expected ids of a .out file, one line per test string.
std::vector<std::vector<int32_t>> read_outputs(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<int32_t>> outputs;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::vector<int32_t> ids;
    for (int32_t id; ls >> id;) ids.push_back(id);
    outputs.push_back(std::move(ids));
  }
  return outputs;
}

std::string english_text(size_t bytes) {
  const char* words[] = {"the",        "quick", "brown", "fox",       "jumps",
                         "over",       "lazy",  "dog,",  "inference", "engine.",
                         "Tokenizers", "are",   "fun\n", "(really)",  "42"};
  std::mt19937 rng(7);
  std::string text;
  while (text.size() < bytes) {
    text += words[rng() % std::size(words)];
    text += ' ';
  }
  return text;
}

}  // namespace tessera::test
