#include "tessera/embedding.h"

#include <cmath>
#include <string>

#include "core/check.h"

namespace tessera {

Result<Pooling> parse_pooling(std::string_view name) {
  if (name == "mean") return Pooling::Mean;
  if (name == "last") return Pooling::Last;
  if (name == "cls") return Pooling::Cls;
  if (name == "rank") return Pooling::Rank;
  return Status::error("pooling '" + std::string(name) + "' is not one of mean, last, cls, rank");
}

std::string_view pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Mean: return "mean";
    case Pooling::Last: return "last";
    case Pooling::Cls: return "cls";
    case Pooling::Rank: return "rank";
  }
  return "?";
}

std::vector<float> pool_embeddings(std::span<const float> rows, int64_t n_embd, Pooling pooling) {
  TESSERA_CHECK(n_embd > 0 && !rows.empty() && rows.size() % size_t(n_embd) == 0);
  const size_t d = size_t(n_embd);
  const size_t n_tokens = rows.size() / d;
  if (pooling == Pooling::Cls || pooling == Pooling::Rank) return std::vector<float>(rows.begin(), rows.begin() + std::ptrdiff_t(d));
  if (pooling == Pooling::Last) return std::vector<float>(rows.end() - std::ptrdiff_t(d), rows.end());
  std::vector<double> sum(d, 0.0);
  for (size_t t = 0; t < n_tokens; ++t) {
    for (size_t j = 0; j < d; ++j) sum[j] += rows[t * d + j];
  }
  std::vector<float> out(d);
  for (size_t j = 0; j < d; ++j) out[j] = float(sum[j] / double(n_tokens));
  return out;
}

std::vector<TokenId> rerank_tokens(const Tokenizer& tok, std::string_view query, std::string_view document) {
  std::vector<TokenId> out;
  const auto special = [&](TokenId id) {
    if (id >= 0) out.push_back(id);
  };
  const auto text = [&](std::string_view s) {
    const std::vector<TokenId> ids = tok.encode(s, /*add_special=*/false, /*parse_special=*/true);
    out.insert(out.end(), ids.begin(), ids.end());
  };
  const TokenId eos = tok.eos() >= 0 ? tok.eos() : tok.sep();  // BERT vocabularies have no EOS
  special(tok.bos());
  text(query);
  special(eos);
  special(tok.sep());
  text(document);
  special(eos);
  return out;
}

void normalize_l2(std::span<float> v) {
  double sq = 0;
  for (float x : v) sq += double(x) * x;
  if (sq == 0) return;
  const double inv = 1.0 / std::sqrt(sq);
  for (float& x : v) x = float(x * inv);
}

}  // namespace tessera
