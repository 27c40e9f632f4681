#include "server/http_server.h"

#include <strings.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "server/endpoints.h"
#include "server/errors.h"
#include "server/http_transport.h"
#include "server/request_limits.h"
#include "server/request_log.h"
#include "server/server_context.h"
#include "server/webui_assets.h"

namespace tessera::server {
namespace {

struct Route {
  const char* path;  // a path ending in '*' matches every longer path with that start
  const char* method;  // GET routes also answer HEAD
  Handler handler;
  bool needs_key;
  bool waits;  // waits on the engine or works in proportion to the body: runs on a worker
};

constexpr Route kRoutes[] = {
    {"/health", "GET", handle_health, false, false},
    {"/v1/health", "GET", handle_health, false, false},
    {"/v1/models", "GET", handle_models, true, false},
    {"/models", "GET", handle_models, true, false},
    {"/v1/models/*", "GET", handle_model, true, false},
    {"/models/*", "GET", handle_model, true, false},
    {"/v1/chat/completions", "POST", handle_chat_completions, true, true},
    {"/chat/completions", "POST", handle_chat_completions, true, true},
    {"/v1/completions", "POST", handle_completions, true, true},
    {"/v1/embeddings", "POST", handle_embeddings, true, true},
    {"/embeddings", "POST", handle_llama_embeddings, true, true},
    {"/embedding", "POST", handle_llama_embeddings, true, true},
    {"/v1/rerank", "POST", handle_rerank, true, true},
    {"/rerank", "POST", handle_rerank, true, true},
    {"/v1/reranking", "POST", handle_rerank, true, true},
    {"/reranking", "POST", handle_rerank, true, true},
    {"/completion", "POST", handle_completion, true, true},
    {"/completions", "POST", handle_completion, true, true},
    {"/infill", "POST", handle_infill, true, true},
    {"/tokenize", "POST", handle_tokenize, true, true},
    {"/detokenize", "POST", handle_detokenize, true, true},
    {"/apply-template", "POST", handle_apply_template, true, true},
    {"/props", "GET", handle_props, true, false},
    {"/slots", "GET", handle_slots, true, false},
    {"/slots/*", "POST", handle_slot_action, true, true},
    {"/metrics", "GET", handle_metrics, true, false},
    {"/lora-adapters", "GET", handle_get_lora_adapters, true, false},
    {"/lora-adapters", "POST", handle_post_lora_adapters, true, false},
};

void send_error(HttpResponse& res, const ApiError& e) {
  if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer");
  send_json(res, error_json(e), e.status);
}

/// The key a request presents: "Authorization: Bearer KEY", else "X-Api-Key: KEY".
std::string presented_key(const HttpRequest& req) {
  const std::string auth = req.get_header_value("Authorization");
  if (auth.size() > 7 && strncasecmp(auth.c_str(), "Bearer ", 7) == 0) return auth.substr(7);
  return req.get_header_value("X-Api-Key");
}

const WebAsset* find_asset(const std::string& path) {
  const std::string wanted = path == "/" ? "/index.html" : path;
  for (const WebAsset& a : web_assets()) {
    if (a.path == wanted) return &a;
  }
  return nullptr;
}

bool path_matches(const Route& r, const std::string& path) {
  const std::string_view pattern(r.path);
  if (!pattern.ends_with('*')) return path == pattern;
  const std::string_view start = pattern.substr(0, pattern.size() - 1);
  return path.size() > start.size() && std::string_view(path).starts_with(start);
}

bool is_get(const std::string& method) { return method == "GET" || method == "HEAD"; }

/// The route of a path and method, else null (`any`: a route of the path, any method).
const Route* find_route(const HttpRequest& req, const Route** any) {
  const Route* route = nullptr;
  *any = nullptr;
  for (const Route& r : kRoutes) {
    if (!path_matches(r, req.path)) continue;
    if (!*any) *any = &r;
    if (req.method == r.method || (is_get(req.method) && std::strcmp(r.method, "GET") == 0)) route = &r;
  }
  if (route) *any = route;
  return route;
}

void answer_preflight(const Route& route, HttpResponse& res) {
  res.status = 204;
  res.set_header("Access-Control-Allow-Methods", std::string(route.method) + ", OPTIONS");
  res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key");
  res.set_header("Access-Control-Max-Age", "86400");
}

void run_handler(ServerContext& ctx, const Route& route, const HttpRequest& req, HttpResponse& res) {
  try {
    route.handler(ctx, req, res);
  } catch (const ApiError& e) {
    send_error(res, e);
  } catch (const std::exception& e) {
    send_error(res, internal_error(std::string("internal error: ") + e.what()));
  } catch (...) {
    send_error(res, internal_error("internal error"));
  }
}

/// Routing, method check, preflight, key check, then the handler.
void dispatch(ServerContext& ctx, const HttpRequest& req, HttpResponse& res) {
  const Route* any = nullptr;
  const Route* route = find_route(req, &any);
  if (!any) {
    const WebAsset* asset = ctx.options.webui && is_get(req.method) ? find_asset(req.path) : nullptr;
    if (asset) {
      res.status = 200;
      res.set_content(std::string(asset->body), std::string(asset->mime));
      request_log().endpoint = "webui";
      return;
    }
    send_error(res, not_found("no such endpoint: " + req.method + " " + req.path));
    return;
  }
  request_log().endpoint = any->path;
  if (!route) {
    if (req.method == "OPTIONS" && !ctx.options.cors_origin.empty()) return answer_preflight(*any, res);
    res.set_header("Allow", std::string(any->method) + (std::strcmp(any->method, "GET") == 0 ? ", HEAD" : ""));
    send_error(res, ApiError(405, "method " + req.method + " is not allowed on " + req.path + " (use " +
                                      any->method + ")",
                             "invalid_request_error", {}, "method_not_allowed"));
    return;
  }
  if (route->needs_key && !ctx.options.api_keys.empty() && !api_key_matches(presented_key(req), ctx.options.api_keys)) {
    send_error(res, ApiError(401, "missing or invalid API key: send 'Authorization: Bearer KEY'",
                             "authentication_error", {}, "invalid_api_key"));
    return;
  }
  run_handler(ctx, *route, req, res);
}

void add_cors(const ServerOptions& o, HttpResponse& res) {
  if (o.cors_origin.empty()) return;
  res.set_header("Access-Control-Allow-Origin", o.cors_origin);
  if (o.cors_origin != "*") res.set_header("Vary", "Origin");
}

/// What the transport refuses itself, in the JSON shape of every other error.
void refuse(const ServerOptions& o, int status, const std::string& message, HttpResponse& res) {
  const char* code = status == 413   ? "payload_too_large"
                     : status == 408 ? "request_timeout"
                     : status == 431 ? "headers_too_large"
                     : status == 503 ? "server_busy"
                                     : "malformed_request";
  send_error(res, ApiError(status, message, status >= 500 ? "unavailable_error" : "invalid_request_error", {}, code));
  add_cors(o, res);
}

void log_request(ServerContext& ctx, const HttpRequest& req, const HttpResponse& res) {
  RequestLog& log = request_log();
  const double ms =
      log.start.time_since_epoch().count() == 0
          ? 0.0
          : std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - log.start).count();
  std::string line = "tessera serve: " + req.method + " " + req.path + " " + std::to_string(res.status);
  if (log.has_tokens) {
    line += " prompt=" + std::to_string(log.prompt_tokens) + " cached=" + std::to_string(log.cached_tokens) +
            " generated=" + std::to_string(log.generated_tokens);
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, " %.1f ms", ms);
  line += buf;
  if (!log.note.empty()) line += " (" + log.note + ")";
  std::fprintf(stderr, "%s\n", line.c_str());
  ctx.metrics.count_request(log.endpoint, res.status);
  log = RequestLog{};
}

TransportLimits transport_limits(const ServerOptions& o) {
  TransportLimits l;
  l.max_body_bytes = o.max_body_bytes;
  l.max_connections = o.max_connections;
  l.max_connections_per_client = o.max_connections_per_client;
  const auto ms = [](double s) { return std::chrono::milliseconds(int64_t(s * 1000)); };
  l.idle_timeout = ms(o.idle_timeout_s);
  l.header_timeout = ms(o.header_timeout_s);
  l.body_timeout = ms(o.body_timeout_s);
  l.write_timeout = ms(limits::kWriteTimeoutS);
  l.max_header_bytes = limits::kMaxHeaderBytes;
  l.max_header_fields = limits::kMaxHeaderFields;
  // Every request the engine can hold (running and queued) has a worker, plus a few for
  // tokenize and the like; more wait for one (bounded), then get 503.
  l.workers = size_t(std::clamp(o.n_parallel + o.max_queue + 8, 8, 512));
  l.worker_queue = l.workers * 2;
  return l;
}

}  // namespace

bool api_key_matches(const std::string& given, const std::vector<std::string>& keys) {
  unsigned match = 0;
  for (const std::string& key : keys) {
    size_t diff = given.size() ^ key.size();
    const size_t n = std::max(given.size(), key.size());
    for (size_t i = 0; i < n; ++i) {
      const unsigned char a = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
      const unsigned char b = i < key.size() ? static_cast<unsigned char>(key[i]) : 0;
      diff |= size_t(a ^ b);
    }
    match |= unsigned(diff == 0);
  }
  return match != 0;
}

HttpServer::HttpServer(ServerContext& ctx) : ctx_(ctx) {
  TransportHandlers h;
  h.quick = [](const HttpRequest& req) {
    const Route* any = nullptr;
    const Route* route = find_route(req, &any);
    return !route || !route->waits;
  };
  h.handle = [this](const HttpRequest& req, HttpResponse& res) {
    request_log() = RequestLog{};
    request_log().start = std::chrono::steady_clock::now();
    dispatch(ctx_, req, res);
    add_cors(ctx_.options, res);
  };
  h.refuse = [this](int status, const std::string& message, HttpResponse& res) {
    refuse(ctx_.options, status, message, res);
  };
  h.done = [this](const HttpRequest& req, const HttpResponse& res) { log_request(ctx_, req, res); };
  transport_ = std::make_unique<HttpTransport>(transport_limits(ctx.options), std::move(h));
}

HttpServer::~HttpServer() = default;

Result<int> HttpServer::bind(const std::string& host, int port) { return transport_->bind(host, port); }

void HttpServer::listen() { transport_->run(); }

void HttpServer::stop() { transport_->stop(); }

}  // namespace tessera::server
