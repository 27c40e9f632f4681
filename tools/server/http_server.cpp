#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

#include "server/endpoints.h"
#include "server/errors.h"
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
};

constexpr Route kRoutes[] = {
    {"/health", "GET", handle_health, false},
    {"/v1/health", "GET", handle_health, false},
    {"/v1/models", "GET", handle_models, true},
    {"/models", "GET", handle_models, true},
    {"/v1/models/*", "GET", handle_model, true},
    {"/models/*", "GET", handle_model, true},
    {"/v1/chat/completions", "POST", handle_chat_completions, true},
    {"/chat/completions", "POST", handle_chat_completions, true},
    {"/v1/completions", "POST", handle_completions, true},
    {"/v1/embeddings", "POST", handle_embeddings, true},
    {"/completion", "POST", handle_completion, true},
    {"/tokenize", "POST", handle_tokenize, true},
    {"/detokenize", "POST", handle_detokenize, true},
    {"/apply-template", "POST", handle_apply_template, true},
    {"/props", "GET", handle_props, true},
    {"/slots", "GET", handle_slots, true},
    {"/metrics", "GET", handle_metrics, true},
};

std::atomic<bool> g_stopping{false};

void send_error(httplib::Response& res, const ApiError& e) {
  if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer");
  send_json(res, error_json(e), e.status);
}

/// The key a request presents: "Authorization: Bearer KEY", else "X-Api-Key: KEY".
std::string presented_key(const httplib::Request& req) {
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

void answer_preflight(const ServerContext& ctx, const Route& route, httplib::Response& res) {
  res.status = 204;
  res.set_header("Access-Control-Allow-Methods", std::string(route.method) + ", OPTIONS");
  res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key");
  res.set_header("Access-Control-Max-Age", "86400");
  (void)ctx;
}

void run_handler(ServerContext& ctx, const Route& route, const httplib::Request& req, httplib::Response& res) {
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
void dispatch(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const Route* route = nullptr;
  bool path_known = false;
  for (const Route& r : kRoutes) {
    if (!path_matches(r, req.path)) continue;
    path_known = true;
    if (req.method == r.method || (is_get(req.method) && std::strcmp(r.method, "GET") == 0)) route = &r;
  }
  if (!path_known) {
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
  const Route* any = route;
  for (const Route& r : kRoutes) {
    if (!any && path_matches(r, req.path)) any = &r;
  }
  request_log().endpoint = any->path;
  if (!route) {
    if (req.method == "OPTIONS" && !ctx.options.cors_origin.empty()) return answer_preflight(ctx, *any, res);
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

/// httplib's own errors (bad request line, 413, ...) in the JSON shape.
httplib::Server::HandlerResponse on_error(const httplib::Request&, httplib::Response& res) {
  if (!res.body.empty() || res.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
  const int s = res.status;
  if (s == 413) {
    send_error(res, ApiError(413, "request body too large", "invalid_request_error", {}, "payload_too_large"));
  } else {
    const char* what = s == 400 ? "malformed HTTP request" : s == 414 ? "request URI too long" : "HTTP error";
    send_error(res, ApiError(s, std::string(what) + " (status " + std::to_string(s) + ")",
                             s >= 500 ? "server_error" : "invalid_request_error"));
  }
  return httplib::Server::HandlerResponse::Handled;
}

void log_request(ServerContext& ctx, const httplib::Request& req, const httplib::Response& res) {
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

HttpServer::HttpServer(ServerContext& ctx) : ctx_(ctx), svr_(std::make_unique<httplib::Server>()) {
  const ServerOptions& o = ctx.options;
  const size_t workers = size_t(std::clamp(o.n_parallel + o.max_queue + 8, 8, 512));
  svr_->new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  svr_->set_payload_max_length(o.max_body_bytes);
  svr_->set_read_timeout(30, 0);
  svr_->set_write_timeout(30, 0);
  if (!o.cors_origin.empty()) {
    httplib::Headers h = {{"Access-Control-Allow-Origin", o.cors_origin}};
    if (o.cors_origin != "*") h.emplace("Vary", "Origin");
    svr_->set_default_headers(h);
  }
  svr_->set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    request_log() = RequestLog{};
    request_log().start = std::chrono::steady_clock::now();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  auto handler = [this](const httplib::Request& req, httplib::Response& res) { dispatch(ctx_, req, res); };
  svr_->Get(".*", handler).Post(".*", handler).Put(".*", handler).Patch(".*", handler);
  svr_->Delete(".*", handler).Options(".*", handler);
  svr_->set_error_handler(httplib::Server::HandlerWithResponse(on_error));
  svr_->set_logger([this](const httplib::Request& req, const httplib::Response& res) { log_request(ctx_, req, res); });
}

HttpServer::~HttpServer() = default;

// cpp-httplib 0.11 listens with a backlog of 5 (compiled into Debian's library), so a
// burst of clients overflows it and their connections are retried a second later. The
// socket-options hook sees the listening socket before bind; once bound, listen() again
// with a real backlog (Linux takes the new value).
constexpr int kListenBacklog = 512;

int HttpServer::bind(const std::string& host, int port) {
  int listen_fd = -1;
  svr_->set_socket_options([&listen_fd](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);  // what httplib's default does
    listen_fd = int(sock);
  });
  const int bound = port == 0 ? svr_->bind_to_any_port(host) : (svr_->bind_to_port(host, port) ? port : -1);
  if (bound >= 0 && listen_fd >= 0) ::listen(listen_fd, kListenBacklog);
  return bound;
}

void HttpServer::listen() {
  if (!g_stopping.load()) svr_->listen_after_bind();
}

void HttpServer::stop() {
  g_stopping.store(true);
  svr_->stop();
}

}  // namespace tessera::server
