// read_wordpiece_vocab (hf_vocab.h): BERT's vocab.txt, one WordPiece token a line (id =
// line number), in the phantom-space form the reference converter writes for model
// "bert": a word-start token gets "▁" before it, a continuation drops its "##", and a
// bracketed token ([CLS], [unused0]) stays as it is. The special-token types are set by
// add_hf_vocab from tokenizer_config.json.
#include <fstream>

#include "convert/hf_vocab.h"

namespace tessera::convert {

Result<HfVocab> read_wordpiece_vocab(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::error("convert: " + file.string() + ": cannot be read");
  HfVocab v;
  v.model = "bert";
  v.pre = "default";
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      return Status::error("convert: " + file.string() + ": line " +
                           std::to_string(v.tokens.size() + 1) + " is empty");
    }
    if (line.front() == '[' && line.back() == ']') {
      v.tokens.push_back(line);
    } else if (line.starts_with("##") && line.size() > 2) {
      v.tokens.push_back(line.substr(2));
    } else {
      v.tokens.push_back("\xE2\x96\x81" + line);
    }
    v.types.push_back(kNormal);
  }
  if (v.tokens.empty()) return Status::error("convert: " + file.string() + ": has no tokens");
  return v;
}

}  // namespace tessera::convert
