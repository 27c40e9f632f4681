// The handlers of every route (http_server.cpp maps paths to them and wraps them with
// authentication, error handling and logging). Each may throw ApiError.
#pragma once

#include <nlohmann/json.hpp>

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace tessera::server {

struct ServerContext;

using Handler = void (*)(ServerContext&, const httplib::Request&, httplib::Response&);

// OpenAI (openai_endpoints.cpp)
void handle_chat_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_embeddings(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_models(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
/// GET /v1/models/{id}: the model, or 404 for another id.
void handle_model(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

// llama.cpp's (llama_endpoints.cpp)
void handle_completion(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_tokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_detokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_apply_template(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_props(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_slots(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

// Service (service_endpoints.cpp)
void handle_health(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_metrics(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

/// The --lora adapters, in llama.cpp's shape: [{"id", "path", "scale"}] (/props, /v1/models).
nlohmann::json adapters_json(const ServerContext& ctx);
/// Writes `body` as the JSON response with `status`.
void send_json(httplib::Response& res, const nlohmann::json& body, int status = 200);
/// Seconds since the epoch (the `created` field).
int64_t unix_time();

}  // namespace tessera::server
