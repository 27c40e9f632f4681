#include "tessera/tokenizer.h"

#include <algorithm>
#include <utility>

#include "tessera/gguf.h"
#include "tokenizer/algorithm.h"
#include "tokenizer/bpe.h"
#include "tokenizer/spm.h"
#include "tokenizer/vocab.h"
#include "tokenizer/wpm.h"

namespace tessera {
namespace {

/// A stretch of the input: raw text (token == kNoToken) or one special token.
struct Fragment {
  size_t offset;
  size_t len;
  TokenId token;
};

/// Cuts the texts of special tokens out of `text`, longest token first, each token's
/// occurrences left to right, as llama.cpp does. Control and unknown tokens are cut only
/// with `parse_special`; user-defined tokens always.
std::vector<Fragment> split_special(std::string_view text, const tok::Vocab& vocab,
                                    bool parse_special) {
  std::vector<Fragment> fragments{{0, text.size(), tok::kNoToken}};
  std::vector<Fragment> next;
  for (TokenId id : vocab.special_tokens()) {
    const tok::TokenData& special = vocab.token(id);
    if (!parse_special && special.type != TokenType::UserDefined) continue;
    const std::string_view needle = special.text;
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.token != tok::kNoToken) {
        next.push_back(f);
        continue;
      }
      const std::string_view raw = text.substr(0, f.offset + f.len);
      size_t pos = f.offset;
      for (size_t hit; (hit = raw.find(needle, pos)) != std::string_view::npos;) {
        if (hit > pos) next.push_back({pos, hit - pos, tok::kNoToken});
        next.push_back({hit, needle.size(), id});
        pos = hit + needle.size();
      }
      if (pos < raw.size()) next.push_back({pos, raw.size() - pos, tok::kNoToken});
    }
    fragments.swap(next);
  }
  return fragments;
}

/// The algorithm for `vocab`'s model, or an error that names an unsupported model.
Result<std::unique_ptr<const tok::Algorithm>> make_algorithm(const tok::Vocab& vocab) {
  const std::string& model = vocab.model();
  if (model == "llama") return std::unique_ptr<const tok::Algorithm>(new tok::SpmAlgorithm(vocab));
  if (model == "gpt2") {
    Result<std::unique_ptr<tok::BpeAlgorithm>> bpe = tok::BpeAlgorithm::create(vocab);
    if (!bpe) return bpe.status();
    return std::unique_ptr<const tok::Algorithm>(std::move(bpe).value());
  }
  if (model == "bert") {
    const tok::SpecialIds& ids = vocab.special();
    for (auto [id, what] : {std::pair{ids.bos, "a [CLS] (BOS) token"}, std::pair{ids.sep, "a [SEP] token"},
                            std::pair{ids.unk, "an unknown token"}}) {
      if (id == tok::kNoToken) return Status::error(std::string("a \"bert\" (WordPiece) vocabulary needs ") + what);
    }
    return std::unique_ptr<const tok::Algorithm>(new tok::WpmAlgorithm(vocab));
  }
  return Status::error("unsupported tokenizer.ggml.model \"" + model +
                       "\" (supported: \"llama\", \"gpt2\", \"bert\")");
}

const std::string& empty_string() {
  static const std::string empty;
  return empty;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<const tok::Vocab> vocab,
                     std::unique_ptr<const tok::Algorithm> algo)
    : vocab_(std::move(vocab)), algo_(std::move(algo)) {}

Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const gguf::File& file) {
  Result<tok::Vocab> vocab = tok::Vocab::from_gguf(file);
  if (!vocab) return vocab.status();
  return create(std::move(vocab).value(), "tokenizer: " + file.path());
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_vocab(tok::Vocab vocab) {
  return create(std::move(vocab), "tokenizer");
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::create(tok::Vocab vocab, const std::string& context) {
  auto owned = std::make_unique<const tok::Vocab>(std::move(vocab));
  Result<std::unique_ptr<const tok::Algorithm>> algo = make_algorithm(*owned);
  if (!algo) return algo.status().with_context(context);
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(owned), std::move(algo).value()));
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  const tok::SpecialIds& ids = vocab_->special();
  const tok::VocabFlags& flags = vocab_->flags();
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  const bool framed = algo_->frames_input();  // [CLS] ... [SEP] (WordPiece)
  if (add_special && (framed || flags.add_bos) && ids.bos != tok::kNoToken) out.push_back(ids.bos);
  if (!text.empty()) {
    bool after_special = true;  // the first run counts as following a special token
    for (const Fragment& f : split_special(text, *vocab_, parse_special)) {
      if (f.token != tok::kNoToken) {
        out.push_back(f.token);
        after_special = true;
      } else {
        algo_->encode_text(text.substr(f.offset, f.len), after_special, out);
        after_special = false;
      }
    }
  }
  if (add_special && framed) {
    out.push_back(ids.sep);
  } else if (add_special && flags.add_eos && ids.eos != tok::kNoToken) {
    out.push_back(ids.eos);
  }
  return out;
}

std::string Tokenizer::token_to_piece(TokenId id, bool render_special) const {
  if (!vocab_->contains(id)) return std::string();
  return algo_->piece(id, render_special);
}

std::string Tokenizer::decode(const std::vector<TokenId>& ids) const {
  std::string out;
  bool strip_space = vocab_->flags().add_space_prefix;
  for (TokenId id : ids) {
    std::string piece = token_to_piece(id);
    if (piece.empty()) continue;
    if (strip_space && piece[0] == ' ' && vocab_->token(id).type == TokenType::Normal) {
      piece.erase(0, 1);
    }
    strip_space = false;
    out += piece;
  }
  return out;
}

int32_t Tokenizer::n_vocab() const { return vocab_->size(); }
TokenId Tokenizer::bos() const { return vocab_->special().bos; }
TokenId Tokenizer::eos() const { return vocab_->special().eos; }
TokenId Tokenizer::unk() const { return vocab_->special().unk; }
TokenId Tokenizer::sep() const { return vocab_->special().sep; }
bool Tokenizer::add_bos_token() const { return vocab_->flags().add_bos; }
bool Tokenizer::add_eos_token() const { return vocab_->flags().add_eos; }

bool Tokenizer::is_eog(TokenId id) const {
  const std::vector<TokenId>& eog = vocab_->eog_ids();
  return std::binary_search(eog.begin(), eog.end(), id);
}

TokenId Tokenizer::eot() const { return vocab_->special().eot; }
TokenId Tokenizer::fim_pre() const { return vocab_->special().fim_pre; }
TokenId Tokenizer::fim_suf() const { return vocab_->special().fim_suf; }
TokenId Tokenizer::fim_mid() const { return vocab_->special().fim_mid; }
TokenId Tokenizer::fim_rep() const { return vocab_->special().fim_rep; }
TokenId Tokenizer::fim_sep() const { return vocab_->special().fim_sep; }
std::string_view Tokenizer::pre_tokenizer() const { return algo_->pre_tokenizer_name(); }

TokenType Tokenizer::token_type(TokenId id) const {
  return vocab_->contains(id) ? vocab_->token(id).type : TokenType::Undefined;
}

const std::string& Tokenizer::token_text(TokenId id) const {
  return vocab_->contains(id) ? vocab_->token(id).text : empty_string();
}

std::string_view Tokenizer::model_name() const { return vocab_->model(); }

}  // namespace tessera
