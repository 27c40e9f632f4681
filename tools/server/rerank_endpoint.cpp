// POST /v1/rerank (and /rerank, /reranking, /v1/reranking, as llama-server routes them):
// scores each document against a query with a reranker model (a BERT file with a
// classification head, pooling_type rank). Each pair is one embedding request through
// the engine, read as llama-server reads it ([CLS] query [SEP] [SEP] document [SEP]), its
// score the head's first output.
//
// Two request shapes, as llama-server takes them: Jina's / Cohere's {query, documents,
// top_n, return_documents}, answered {model, object, usage, results: [{index,
// relevance_score, document?}]}; and TEI's {query, texts, return_text}, answered with a
// bare array [{index, score, text?}]. Both list the results by descending score (Jina's,
// Cohere's and TEI's services do; so does llama-server since it took `top_n`), `index`
// naming the document; top_n keeps the best n.
#include <algorithm>
#include <numeric>

#include "server/connection_watch.h"
#include "server/endpoints.h"
#include "server/errors.h"
#include "server/generation.h"
#include "server/request_decode.h"
#include "server/request_limits.h"
#include "server/server_context.h"
#include "tessera/embedding.h"

namespace tessera::server {

using nlohmann::json;

namespace {

/// The documents' texts: `documents` (strings, or Cohere's {"text": ...} objects) or TEI's
/// `texts` (strings).
std::vector<std::string> documents(const Fields& body, bool tei) {
  const std::string key = tei ? "texts" : "documents";
  const json* list = body.array(key);
  if (list == nullptr || list->empty()) throw bad_field(key, "'" + key + "' must be a non-empty array of strings");
  if (list->size() > limits::kMaxEmbeddingInputs) {
    throw bad_field(key, "'" + key + "' lists more than " + std::to_string(limits::kMaxEmbeddingInputs) +
                             " documents (the server's limit kMaxEmbeddingInputs)");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const json& d = (*list)[i];
    const json* text = d.is_object() && !tei && d.contains("text") ? &d.at("text") : &d;
    if (!text->is_string()) {
      const std::string param = key + "[" + std::to_string(i) + "]";
      throw bad_field(param, "'" + param + "' must be a string" + (tei ? "" : " or an object with a string 'text'") +
                                 ", not " + type_words(d));
    }
    out.push_back(text->get<std::string>());
  }
  return out;
}

}  // namespace

void handle_rerank(ServerContext& ctx, const HttpRequest& req, HttpResponse& res) {
  ctx.require_ready();
  if (!ctx.model->info().rank_head) {
    throw not_supported("this server's model is not a reranker: reranking needs a model with a classification "
                        "head (cls.weight; a BERT reranker file, pooling_type rank)");
  }
  const json body_json = parse_body(req.body);
  const Fields body(body_json);
  ctx.check_model(body);
  const bool tei = body.has("texts") && !body.has("documents");
  const std::optional<std::string> query = body.string("query");
  if (!query) throw bad_field("query", "'query' (a string) is required");
  const std::vector<std::string> docs = documents(body, tei);
  const int64_t top_n = body.integer("top_n", 1, std::numeric_limits<int32_t>::max()).value_or(int64_t(docs.size()));
  const bool with_text = body.boolean(tei ? "return_text" : "return_documents").value_or(false);

  Job job;
  for (const std::string& d : docs) job.prompts.push_back(rerank_tokens(ctx.tokenizer(), *query, d));
  job.request.embedding = true;
  job.request.max_tokens = 0;
  job.request.pooling = Pooling::Rank;
  job.request.normalize = false;
  JobRun run(ctx, job);
  ConnectionWatch watch(req);
  const JobOutput out = collect(run, ctx, watch);

  std::vector<float> score(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) score[i] = run.embedding(i).at(0);
  std::vector<size_t> order(docs.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] > score[b]; });
  order.resize(std::min<size_t>(order.size(), size_t(top_n)));

  json results = json::array();
  for (size_t i : order) {
    json r = {{"index", i}, {tei ? "score" : "relevance_score", score[i]}};
    if (with_text && tei) r["text"] = docs[i];
    if (with_text && !tei) r["document"] = {{"text", docs[i]}};
    results.push_back(std::move(r));
  }
  if (tei) return send_json(res, results);
  const int64_t n_tokens = out.usage.prompt_tokens;
  send_json(res, {{"model", ctx.model_name},
                  {"object", "list"},
                  {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}},
                  {"results", results}});
}

}  // namespace tessera::server
