// The handlers of every route (http_server.cpp maps paths to them and wraps them with
// authentication, error handling and logging). Each may throw ApiError.
#pragma once

#include <nlohmann/json.hpp>

#include "server/http_message.h"

namespace tessera::server {

struct ServerContext;

using Handler = void (*)(ServerContext&, const HttpRequest&, HttpResponse&);

// OpenAI (openai_endpoints.cpp)
void handle_chat_completions(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
void handle_completions(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
/// POST /v1/embeddings (embedding_endpoints.cpp): pooled vectors only.
void handle_embeddings(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
void handle_models(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
/// GET /v1/models/{id}: the model, or 404 for another id.
void handle_model(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);

// llama.cpp's (llama_endpoints.cpp)
void handle_completion(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
/// POST /infill: a fill-in-the-middle completion (infill_prompt.h), in /completion's shape.
void handle_infill(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
void handle_tokenize(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
void handle_detokenize(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
void handle_apply_template(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
void handle_props(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
void handle_slots(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
/// POST /slots/{id}?action=save|restore|erase (slot_endpoints.cpp).
void handle_slot_action(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
/// POST /embeddings, /embedding (embedding_endpoints.cpp): llama-server's shape,
/// [{index, embedding: [[...]]}]: one row pooled, or one per token with pooling "none".
void handle_llama_embeddings(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
/// POST /v1/rerank, /rerank, /v1/reranking, /reranking (rerank_endpoint.cpp): a reranker's
/// scores of documents against a query, in Jina's or TEI's shape.
void handle_rerank(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);

// Service (service_endpoints.cpp)
void handle_health(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
void handle_metrics(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);

// LoRA adapters (lora_endpoints.cpp)
/// GET /lora-adapters: adapters_json().
void handle_get_lora_adapters(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
/// POST /lora-adapters, a body [{"id", "scale"}]: the default scales of later requests
/// (adapters not listed: 0); answers {"success": true}.
void handle_post_lora_adapters(ServerContext& ctx, const HttpRequest& req, HttpResponse& res);
/// The --lora adapters with their current default scales, in llama.cpp's shape:
/// [{"id", "path", "scale"}] (/lora-adapters, /props, /v1/models).
nlohmann::json adapters_json(const ServerContext& ctx);
/// Writes `body` as the JSON response with `status`.
void send_json(HttpResponse& res, const nlohmann::json& body, int status = 200);
/// Seconds since the epoch (the `created` field).
int64_t unix_time();

}  // namespace tessera::server
