#include "server/infill_prompt.h"

#include <string>

#include "server/errors.h"

namespace tessera::server {
namespace {

void append(std::vector<TokenId>& out, const std::vector<TokenId>& more) { out.insert(out.end(), more.begin(), more.end()); }

std::vector<TokenId> plain(const Tokenizer& tok, const std::string& text) {
  return tok.encode(text, /*add_special=*/false, /*parse_special=*/false);
}

/// The repository line, the `input_extra` files and the current file's separator.
std::vector<TokenId> extra_context(const Fields& body, const Tokenizer& tok) {
  std::vector<TokenId> out;
  if (tok.fim_rep() >= 0) {
    out.push_back(tok.fim_rep());
    append(out, plain(tok, "myproject\n"));
  }
  const json* extra = body.array("input_extra");
  for (size_t i = 0; extra && i < extra->size(); ++i) {
    const std::string name = body.name("input_extra") + "[" + std::to_string(i) + "]";
    if (!(*extra)[i].is_object()) throw bad_field(name, "'" + name + "' must be an object {filename, text}");
    const Fields chunk((*extra)[i], name + ".");
    const std::optional<std::string> text = chunk.string("text");
    if (!text) throw bad_field(chunk.name("text"), "'" + chunk.name("text") + "' is required");
    if (tok.fim_sep() >= 0) {
      out.push_back(tok.fim_sep());
      append(out, plain(tok, chunk.string("filename").value_or("tmp") + "\n"));
    } else {
      append(out, plain(tok, "\n\n--- snippet ---\n\n"));
    }
    append(out, plain(tok, *text));
  }
  if (tok.fim_sep() >= 0) {
    out.push_back(tok.fim_sep());
    append(out, plain(tok, "filename\n"));
  }
  return out;
}

}  // namespace

std::vector<TokenId> infill_prompt(const Fields& body, const Tokenizer& tok) {
  if (tok.fim_pre() < 0 || tok.fim_suf() < 0 || tok.fim_mid() < 0) {
    throw bad_request("this model's vocabulary has no fill-in-the-middle tokens (prefix, suffix and middle): "
                      "/infill needs them",
                      "fim_not_supported");
  }
  std::vector<TokenId> out = extra_context(body, tok);
  if (tok.add_bos_token()) out.push_back(tok.bos());
  out.push_back(tok.fim_pre());
  append(out, plain(tok, body.string("input_prefix").value_or("")));
  append(out, plain(tok, body.string("prompt").value_or("")));
  out.push_back(tok.fim_suf());
  append(out, plain(tok, body.string("input_suffix").value_or("")));
  out.push_back(tok.fim_mid());
  return out;
}

}  // namespace tessera::server
