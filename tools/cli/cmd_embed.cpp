// `tessera embed`: the embedding of a text (the model's final hidden state after the
// output norm, or an encoder's last layer output, pooled over the tokens) as one JSON
// object.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "tessera/batch.h"
#include "tessera/context.h"
#include "tessera/embedding.h"
#include "tessera/model.h"
#include "tessera/tokenizer.h"

namespace tessera::cli {
namespace {

struct EmbedOptions {
  PlacementOptions placement;  // --layers, --mpi, --mpi-layers
  CacheTypeOptions cache_types;  // -ctk, -ctv
  RopeScalingParams rope;      // --rope-scaling, --rope-scale, --rope-freq-*, --yarn-*
  std::string model;
  std::string prompt;
  std::string query;  // with a reranker: score the pair (query, prompt)
  std::string pooling;  // "": the file's pooling_type (mean, cls, last, rank), else mean
  bool normalize = false;
  int threads = default_threads();
};

/// --pooling when given, else the file's pooling_type when it is one of ours, else mean.
std::string pooling_choice(const EmbedOptions& o, const ModelInfo& info) {
  if (!o.pooling.empty()) return o.pooling;
  for (const char* p : {"mean", "cls", "last", "rank"}) {
    if (info.pooling == p) return info.pooling;
  }
  return "mean";
}

int run_embed(const EmbedOptions& o) {
  ModelParams mp;
  apply_placement(o.placement, mp);
  Result<std::unique_ptr<Model>> model = load_model_or_default(o.model, mp);
  if (!model) return fail(model.status().message());
  Result<Pooling> pooling = parse_pooling(pooling_choice(o, (*model)->info()));
  if (!pooling) return fail("embed: " + pooling.status().message());
  if (*pooling == Pooling::Rank && !(*model)->info().rank_head) {
    return fail("embed: pooling 'rank' needs a reranker (a model with a classification head, cls.weight)");
  }
  const Tokenizer* tok = (*model)->tokenizer();
  if (!tok) return fail(model_file_name(o.model) + ": the model has no usable tokenizer, so it cannot take text");
  if (!o.query.empty() && *pooling != Pooling::Rank) {
    return fail("embed: --query scores a (query, document) pair with a reranker: it needs pooling rank");
  }
  const std::vector<TokenId> tokens =
      o.query.empty() ? tok->encode(o.prompt, tok->add_bos_token()) : rerank_tokens(*tok, o.query, o.prompt);
  if (tokens.empty()) return fail("embed: the text is empty and the model adds no BOS token");
  if (const int64_t n_train = (*model)->info().n_ctx_train; n_train > 0 && int64_t(tokens.size()) > n_train &&
                                                              !o.rope.overrides()) {
    std::fprintf(stderr, "tessera: warning: %zu tokens exceed the model's training context of %lld\n", tokens.size(),
                 static_cast<long long>(n_train));  // as run warns
  }

  ContextParams cp;
  cp.n_threads = o.threads;
  cp.n_ctx = int64_t(tokens.size());
  cp.n_batch = int64_t(tokens.size());  // one forward pass
  cp.embeddings = true;
  if (Status st = apply_cache_types(o.cache_types, cp.type_k, cp.type_v); !st) return usage_error("embed: " + st.message());
  cp.rope = o.rope;
  Result<std::unique_ptr<Context>> ctx = Context::create(**model, cp);
  if (!ctx) return fail(ctx.status().message());
  Batch batch;
  batch.add_sequence(tokens, 0, 0, /*all_outputs=*/true);
  if (Status s = (*ctx)->decode(batch); !s) return fail(s.message());

  const int64_t n_embd = (*ctx)->n_embd();
  std::vector<float> rows;
  rows.reserve(tokens.size() * size_t(n_embd));
  for (int64_t i = 0; i < batch.size(); ++i) {
    const std::span<const float> e = (*ctx)->embeddings_at(i);
    rows.insert(rows.end(), e.begin(), e.end());
  }
  std::vector<float> embedding = pool_embeddings(rows, n_embd, *pooling);
  if (*pooling == Pooling::Rank) embedding = (*model)->classify(embedding);
  if (o.normalize) normalize_l2(embedding);

  nlohmann::json out;
  out["model"] = model_file_name(o.model);
  out["n_embd"] = n_embd;
  out["n_tokens"] = tokens.size();
  out["pooling"] = std::string(pooling_name(*pooling));
  out["normalized"] = o.normalize;
  out["embedding"] = embedding;
  if (*pooling == Pooling::Rank) out["score"] = embedding.at(0);
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

Command add_embed(CLI::App& app) {
  auto o = std::make_shared<EmbedOptions>();
  CLI::App* cmd = app.add_subcommand(
      "embed", "Print the embedding of a text as JSON: the final hidden state (after the output "
               "norm; an encoder's last layer) of its tokens, BOS ([CLS], [SEP]) included, pooled into one vector");
  cmd->add_option("-m,--model", o->model, model_option_help())->check(CLI::ExistingFile);
  add_placement_options(cmd, o->placement);
  add_cache_type_options(cmd, o->cache_types);
  add_rope_options(cmd, o->rope);
  cmd->add_option("-p,--prompt", o->prompt, "text to embed (tokenized with the model's tokenizer, BOS added)")
      ->required();
  cmd->add_option("--pooling", o->pooling,
                  "mean: average of the tokens; last: the last token; cls: the first token (BOS); rank: a "
                  "reranker's score (its classification head on the first token); "
                  "default: the model file's pooling_type, else mean")
      ->check(CLI::IsMember({"mean", "last", "cls", "rank"}));
  cmd->add_option("--query", o->query,
                  "with a reranker: score how well the prompt (a document) answers this query, the pair read as "
                  "[CLS] query [SEP] [SEP] document [SEP] (as llama-server's /v1/rerank)");
  cmd->add_flag("--normalize", o->normalize, "scale the vector to unit Euclidean norm");
  cmd->add_option("-t,--threads", o->threads, "CPU threads")->check(NumberRange(1, 512));
  return {cmd, [o] { return run_embed(*o); }};
}

}  // namespace tessera::cli
