// POST /v1/embeddings (OpenAI's shape: pooled vectors) and POST /embeddings, /embedding
// (llama-server's: a list of {index, embedding: [[...]]}, one row per token with
// pooling "none").
#include <cstring>

#include "server/connection_watch.h"
#include "server/endpoints.h"
#include "server/errors.h"
#include "server/generation.h"
#include "server/request_decode.h"
#include "server/server_context.h"

namespace tessera::server {

using nlohmann::json;

namespace {

std::string base64(const std::vector<float>& v) {
  static const char* kDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());  // little-endian hosts
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t w = 0;
    for (size_t k = 0; k < 3; ++k) w = (w << 8) | (k < n ? uint8_t(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kDigits[(w >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

/// A decoded embedding request, run to its end.
struct EmbeddingAnswer {
  Job job;
  std::unique_ptr<JobRun> run;
  JobOutput out;
};

void check_embeddings_on(ServerContext& ctx) {
  // An encoder model computes nothing but embeddings: no flag needed.
  const bool encoder = ctx.ready() && ctx.model->info().encoder;
  if (!ctx.options.embeddings && !encoder) {
    throw not_supported("this server does not compute embeddings: start it with --embeddings");
  }
  ctx.require_ready();
}

EmbeddingAnswer run_embeddings(ServerContext& ctx, const HttpRequest& req, const Fields& body) {
  EmbeddingAnswer a;
  a.job = decode_embedding_job(body, ctx);
  a.run = std::make_unique<JobRun>(ctx, a.job);
  ConnectionWatch watch(req);
  a.out = collect(*a.run, ctx, watch);
  return a;
}

}  // namespace

void handle_embeddings(ServerContext& ctx, const HttpRequest& req, HttpResponse& res) {
  check_embeddings_on(ctx);
  const json body_json = parse_body(req.body);
  const Fields body(body_json);
  ctx.check_model(body);
  const std::string format = body.string("encoding_format").value_or("float");
  if (format != "float" && format != "base64") {
    throw bad_field("encoding_format", "'encoding_format' must be float or base64, not \"" + format + "\"");
  }
  if (body.string("pooling").value_or(ctx.options.pooling) == "none") {
    throw bad_field("pooling", "pooling 'none' (a vector per token) is not in OpenAI's shape: use POST /embeddings, "
                               "or another pooling");
  }
  const EmbeddingAnswer a = run_embeddings(ctx, req, body);
  json data = json::array();
  for (size_t i = 0; i < a.job.prompts.size(); ++i) {
    const std::vector<float> v = a.run->embedding(i);
    data.push_back({{"object", "embedding"}, {"index", i},
                    {"embedding", format == "base64" ? json(base64(v)) : json(v)}});
  }
  send_json(res, {{"object", "list"}, {"data", data}, {"model", ctx.model_name},
                  {"usage", {{"prompt_tokens", a.out.usage.prompt_tokens}, {"total_tokens", a.out.usage.prompt_tokens}}}});
}

void handle_llama_embeddings(ServerContext& ctx, const HttpRequest& req, HttpResponse& res) {
  check_embeddings_on(ctx);
  const json body_json = parse_body(req.body);
  const Fields body(body_json);
  ctx.check_model(body);
  const EmbeddingAnswer a = run_embeddings(ctx, req, body);
  json answer = json::array();
  for (size_t i = 0; i < a.job.prompts.size(); ++i) {
    const json rows = a.job.request.token_embeddings ? json(a.run->token_embeddings(i))
                                                      : json::array({a.run->embedding(i)});
    answer.push_back({{"index", i}, {"embedding", rows}});
  }
  send_json(res, answer);
}

}  // namespace tessera::server
