// Reading the tokenizer test vectors of ../shared/vocab: `.inp` files (test strings
// separated by the line "__ggml_vocab_test__") and `.out` files (expected ids, one line
// per string).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::test {

/// The whole file as bytes ("" when it cannot be read).
std::string read_text(const std::string& path);
/// The test strings of a .inp file: the text between "\n__ggml_vocab_test__\n" separators.
std::vector<std::string> read_inputs(const std::string& path);
/// The expected ids of a .out file, one vector per line.
std::vector<std::vector<int32_t>> read_outputs(const std::string& path);
/// About `bytes` of English-like words, punctuation and newlines (deterministic).
std::string english_text(size_t bytes);

}  // namespace tessera::test
