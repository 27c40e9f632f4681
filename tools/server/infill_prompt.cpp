#include "server/infill_prompt.h"

#include <algorithm>
#include <string>

#include "server/errors.h"

namespace tessera::server {
namespace {

void append(std::vector<TokenId>& out, const std::vector<TokenId>& more) { out.insert(out.end(), more.begin(), more.end()); }

std::vector<TokenId> plain(const Tokenizer& tok, const std::string& text) {
  return tok.encode(text, /*add_special=*/false, /*parse_special=*/false);
}

/// The texts of the layout, each cut on its own.
struct Parts {
  std::vector<TokenId> extra;   // everything before [BOS]
  size_t n_repo_line = 0;       // extra's first tokens: the repository line
  bool has_files = false;       // `input_extra` gave files
  std::vector<TokenId> before;  // the prefix, then the typed `prompt`
  std::vector<TokenId> suffix;
  bool truncated = false;       // some of the request's text was left out

  void keep_last(std::vector<TokenId>& v, size_t n) {
    if (v.size() <= n) return;
    v.erase(v.begin(), v.end() - std::ptrdiff_t(n));
    truncated = true;
  }
  void keep_first(std::vector<TokenId>& v, size_t n) {
    if (v.size() <= n) return;
    v.resize(n);
    truncated = true;
  }
  /// The repository line and the file separators are the layout's, not the request's
  /// text: only a cut that reaches the files counts as truncating the request.
  void keep_last_extra(size_t n) {
    if (extra.size() <= n) return;
    const size_t dropped = extra.size() - n;
    extra.erase(extra.begin(), extra.begin() + std::ptrdiff_t(dropped));
    truncated = truncated || (has_files && dropped > n_repo_line);
    n_repo_line -= std::min(n_repo_line, dropped);
  }
};

/// The repository line, the `input_extra` files and the current file's separator.
void extra_context(const Fields& body, const Tokenizer& tok, Parts& p) {
  std::vector<TokenId>& out = p.extra;
  if (tok.fim_rep() >= 0) {
    out.push_back(tok.fim_rep());
    append(out, plain(tok, "myproject\n"));
  }
  p.n_repo_line = out.size();
  const json* extra = body.array("input_extra");
  p.has_files = extra && !extra->empty();
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
}

size_t at_least_0(int64_t n) { return n > 0 ? size_t(n) : 0; }

/// format_infill's cuts, sized by the batch (prefix : suffix = 3 : 1) and by what the
/// context has left beside a batch and twice the server's n_predict (for the extra).
Parts take_as_llama_server(const Fields& body, const Tokenizer& tok, const InfillBudget& b) {
  Parts p;
  extra_context(body, tok, p);
  p.before = plain(tok, body.string("input_prefix").value_or(""));
  const std::vector<TokenId> typed = plain(tok, body.string("prompt").value_or(""));
  p.suffix = plain(tok, body.string("input_suffix").value_or(""));
  p.keep_last(p.before, at_least_0(3 * (b.n_batch / 4)));
  p.keep_first(p.suffix, at_least_0(b.n_batch / 4 - (2 + int64_t(typed.size()))));
  p.keep_last_extra(at_least_0(b.n_ctx - b.n_batch - 2 * int64_t(b.n_predict)));
  append(p.before, typed);
  return p;
}

/// A prompt that still leaves no cell to generate is cut to half the context (`n_fixed`:
/// its FIM tokens and BOS, never cut): the extra context goes first, from its start; then
/// the start of the prefix and the end of the suffix, 3 : 1 (what one does not need, the
/// other may use).
void fit_half_context(Parts& p, size_t n_fixed, int64_t n_ctx) {
  const size_t total = p.extra.size() + p.before.size() + p.suffix.size() + n_fixed;
  if (int64_t(total) < n_ctx) return;
  const size_t target = std::max(at_least_0(n_ctx / 2), n_fixed);
  if (int64_t(target) >= n_ctx) {
    throw ApiError(400,
                   "a sequence's context of " + std::to_string(n_ctx) + " tokens cannot hold the " +
                       std::to_string(n_fixed) + " fill-in-the-middle tokens and room to generate",
                   "invalid_request_error", "input_prefix", "context_length_exceeded");
  }
  const size_t room = target - n_fixed;
  const size_t text = p.before.size() + p.suffix.size();
  p.keep_last_extra(room > text ? room - text : 0);
  if (text <= room) return;
  size_t suffix_keep = std::min(p.suffix.size(), room / 4);
  const size_t before_keep = std::min(p.before.size(), room - suffix_keep);
  suffix_keep = std::min(p.suffix.size(), room - before_keep);
  p.keep_last(p.before, before_keep);
  p.keep_first(p.suffix, suffix_keep);
}

}  // namespace

InfillPrompt infill_prompt(const Fields& body, const Tokenizer& tok, const InfillBudget& budget) {
  if (tok.fim_pre() < 0 || tok.fim_suf() < 0 || tok.fim_mid() < 0) {
    throw bad_request("this model's vocabulary has no fill-in-the-middle tokens (prefix, suffix and middle): "
                      "/infill needs them",
                      "fim_not_supported");
  }
  Parts p = take_as_llama_server(body, tok, budget);
  const bool bos = tok.add_bos_token();
  fit_half_context(p, bos ? 4 : 3, budget.n_ctx);
  InfillPrompt out;
  out.tokens = std::move(p.extra);
  if (bos) out.tokens.push_back(tok.bos());
  out.tokens.push_back(tok.fim_pre());
  append(out.tokens, p.before);
  out.tokens.push_back(tok.fim_suf());
  append(out.tokens, p.suffix);
  out.tokens.push_back(tok.fim_mid());
  out.truncated = p.truncated;
  return out;
}

}  // namespace tessera::server
