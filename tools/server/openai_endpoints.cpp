// POST /v1/chat/completions, /v1/completions; GET /v1/models.
#include <chrono>

#include "server/connection_watch.h"
#include "server/endpoints.h"
#include "server/errors.h"
#include "server/openai_responses.h"
#include "server/request_decode.h"
#include "server/server_context.h"

namespace tessera::server {

using nlohmann::json;

void send_json(HttpResponse& res, const json& body, int status) {
  res.status = status;
  res.set_content(dump_json(body), "application/json; charset=utf-8");
}

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

/// Shared by the two OpenAI text endpoints: decode, submit, answer or stream.
void run_openai(ServerContext& ctx, const HttpRequest& req, HttpResponse& res, Dialect dialect) {
  ctx.require_ready();
  const json body = parse_body(req.body);
  ctx.check_model(Fields(body));
  const bool chat = dialect == Dialect::Chat;
  // The chat template renders messages and tools with the client's key order.
  const nlohmann::ordered_json ordered = chat ? nlohmann::ordered_json::parse(req.body) : nlohmann::ordered_json();
  const Job job = decode_job(body, dialect, ctx, chat ? &ordered : nullptr);
  const ResponseMeta meta{ctx.make_id(chat ? "chatcmpl-" : "cmpl-"), unix_time(), ctx.model_name,
                          build_fingerprint(), job.truncated(), chat ? job.dropped_messages : -1};
  auto run = std::make_shared<JobRun>(ctx, job);
  const bool logprobs = job.request.logprobs;
  if (job.stream) {
    auto fmt = chat ? chat_stream_formatter(meta, logprobs, job.include_usage, ctx.tokenizer(), job.reply)
                    : completion_stream_formatter(meta, logprobs, job.include_usage, ctx.tokenizer());
    stream_response(req, res, ctx, run, fmt);
    return;
  }
  ConnectionWatch watch(req);
  const JobOutput out = collect(*run, ctx, watch);
  send_json(res, chat ? chat_response(meta, out, logprobs, run->timed_out(), ctx.tokenizer(), job.reply)
                      : completion_response(meta, out, logprobs, run->timed_out(), ctx.tokenizer()));
}

}  // namespace

void handle_chat_completions(ServerContext& ctx, const HttpRequest& req, HttpResponse& res) {
  run_openai(ctx, req, res, Dialect::Chat);
}

void handle_completions(ServerContext& ctx, const HttpRequest& req, HttpResponse& res) {
  run_openai(ctx, req, res, Dialect::Completion);
}

namespace {

json model_json(const ServerContext& ctx) {
  json model = {{"id", ctx.model_name}, {"object", "model"}, {"created", unix_time()}, {"owned_by", "tessera"}};
  const ModelInfo& info = ctx.model->info();
  model["meta"] = {{"n_vocab", info.n_vocab}, {"n_ctx_train", info.n_ctx_train}, {"n_embd", info.n_embd},
                   {"n_params", info.n_params}, {"size", info.weight_bytes},
                   {"lora_adapters", adapters_json(ctx)}};
  return model;
}

}  // namespace

void handle_models(ServerContext& ctx, const HttpRequest&, HttpResponse& res) {
  ctx.require_ready();
  send_json(res, {{"object", "list"}, {"data", json::array({model_json(ctx)})}});
}

void handle_model(ServerContext& ctx, const HttpRequest& req, HttpResponse& res) {
  ctx.require_ready();
  const std::string prefix = req.path.rfind("/v1/", 0) == 0 ? "/v1/models/" : "/models/";
  ctx.check_model_name(req.path.substr(prefix.size()));  // the transport decoded the path
  send_json(res, model_json(ctx));
}

}  // namespace tessera::server
