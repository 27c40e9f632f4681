// `tessera tokenize`: the token ids (and pieces) of a text under a GGUF file's vocabulary
// (without -m, the built-in model's).
// Reads only the tokenizer metadata, so vocabulary-only files (no weights) work too.
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "tessera/gguf.h"
#include "tessera/tokenizer.h"

namespace tessera::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string prompt;
  std::string file;
  bool no_bos = false;
  bool parse_special = false;
  bool ids_only = false;
  bool pieces = false;
  bool jsonl = false;
};

/// Length of the well-formed UTF-8 sequence at s[i], or 0 when there is none.
size_t utf8_char_len(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return len;
}

/// A piece between single quotes: control bytes, quotes and backslashes escaped, bytes
/// that are not part of a UTF-8 character as \xNN (a piece may hold half a character).
std::string quote(const std::string& piece) {
  std::string out = "'";
  for (size_t i = 0; i < piece.size();) {
    const auto c = static_cast<unsigned char>(piece[i]);
    if (c >= 0x80) {
      if (const size_t len = utf8_char_len(piece, i); len > 0) {
        out.append(piece, i, len);
        i += len;
        continue;
      }
    }
    char buf[8];
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20 || c >= 0x7F) {
          std::snprintf(buf, sizeof(buf), "\\x%02X", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  return out + "'";
}

// The vocabulary of the -m file (only its keys are read), or of the built-in model.
Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path) {
  if (path.empty()) {
    Result<std::unique_ptr<Model>> model = Model::load_default();
    if (!model) return model.status();
    return Tokenizer::from_gguf((*model)->file());
  }
  Result<std::unique_ptr<gguf::File>> file = gguf::File::open(path);
  if (!file) return file.status();
  return Tokenizer::from_gguf(**file);
}

/// What the summary line names: the tokenizer model and its pre-tokenizer.
std::string kind_of(const Tokenizer& t) {
  std::string kind(t.model_name());
  if (!t.pre_tokenizer().empty()) kind += ", pre-tokenizer '" + std::string(t.pre_tokenizer()) + "'";
  return kind;
}

/// --jsonl: every line of `text` is a JSON string; one JSON array of its ids is printed per
/// line. Many texts share one load of the vocabulary (a 256k-token one takes a while to
/// load), and texts with newlines pass intact.
int tokenize_lines(const Tokenizer& t, const std::string& text, const TokenizeOptions& o) {
  std::istringstream lines(text);
  std::string line;
  size_t texts = 0, tokens = 0;
  for (size_t number = 1; std::getline(lines, line); ++number) {
    if (line.empty() || line == "\r") continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_string()) {
      return fail("tokenize: line " + std::to_string(number) + " of the input is not a JSON string");
    }
    const std::vector<TokenId> ids = t.encode(j.get<std::string>(), !o.no_bos, o.parse_special);
    std::printf("%s\n", nlohmann::json(ids).dump().c_str());
    ++texts;
    tokens += ids.size();
  }
  std::fflush(stdout);
  std::fprintf(stderr, "tessera: %zu texts -> %zu tokens (%s)\n", texts, tokens, kind_of(t).c_str());
  return 0;
}

int run_tokenize(const TokenizeOptions& o) {
  std::string text = o.prompt;
  if (!o.file.empty()) {
    std::ifstream in(o.file, std::ios::binary);
    if (!in) return fail("tokenize: cannot read '" + o.file + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  Result<std::unique_ptr<Tokenizer>> tok = load_tokenizer(o.model);
  if (!tok) return fail(tok.status().message());
  const Tokenizer& t = **tok;
  if (o.jsonl) return tokenize_lines(t, text, o);

  const std::vector<TokenId> ids = t.encode(text, /*add_special=*/!o.no_bos, o.parse_special);
  if (o.ids_only) {
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
    std::printf("\n");
  } else if (o.pieces) {
    for (TokenId id : ids) std::printf("%d %s\n", id, quote(t.token_to_piece(id, true)).c_str());
  } else {
    for (size_t i = 0; i < ids.size(); ++i) {
      std::printf("%s%d %s", i ? ", " : "", ids[i], quote(t.token_to_piece(ids[i], true)).c_str());
    }
    std::printf("\n");
  }
  std::fflush(stdout);
  std::fprintf(stderr, "tessera: %zu bytes -> %zu tokens (%s)\n", text.size(), ids.size(),
               kind_of(t).c_str());
  return 0;
}

}  // namespace

Command add_tokenize(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids and pieces of a text");
  cmd->add_option("-m,--model", o->model,
                  "GGUF file with a vocabulary, weights not needed (default: the built-in " +
                      Model::default_model_name() + ")")
      ->check(CLI::ExistingFile);
  auto* prompt = cmd->add_option("-p,--prompt", o->prompt, "text to tokenize");
  auto* file = cmd->add_option("-f,--file", o->file, "file whose bytes to tokenize")
                   ->check(CLI::ExistingFile);
  prompt->excludes(file);
  cmd->add_flag("--no-bos", o->no_bos, "do not add the BOS (or EOS) token the vocabulary asks for");
  cmd->add_flag("--parse-special", o->parse_special,
                "texts of control tokens (e.g. <|endoftext|>) become those tokens");
  auto* ids =
      cmd->add_flag("--ids", o->ids_only, "print only the ids, space-separated, on one line");
  auto* pieces = cmd->add_flag("--pieces", o->pieces, "print one token per line: id 'piece'");
  ids->excludes(pieces);
  cmd->add_flag("--jsonl", o->jsonl,
                "the text is one JSON string per line; print one JSON array of ids per line")
      ->excludes(pieces);
  cmd->callback([cmd] {
    if (cmd->count("--prompt") + cmd->count("--file") == 0) {
      throw CLI::RequiredError("-p,--prompt or -f,--file");
    }
  });
  return {cmd, [o] { return run_tokenize(*o); }};
}

}  // namespace tessera::cli
