// GET /health and GET /metrics.
#include "server/endpoints.h"
#include "server/errors.h"
#include "server/server_context.h"

namespace tessera::server {

void handle_health(ServerContext& ctx, const HttpRequest&, HttpResponse& res) {
  switch (ctx.state.load(std::memory_order_acquire)) {
    case ServerState::Ready: send_json(res, {{"status", "ok"}}); return;
    case ServerState::Loading: {
      nlohmann::json body = error_json(unavailable("the model is still loading", "loading_model"));
      body["status"] = "loading model";
      send_json(res, body, 503);
      return;
    }
    case ServerState::ShuttingDown: {
      nlohmann::json body = error_json(unavailable("the server is shutting down", "shutting_down"));
      body["status"] = "shutting down";
      send_json(res, body, 503);
      return;
    }
  }
}

void handle_metrics(ServerContext& ctx, const HttpRequest&, HttpResponse& res) {
  if (!ctx.options.metrics) throw not_supported("metrics are off: start the server with --metrics");
  serving::EngineStats stats;
  const bool ready = ctx.ready();
  if (ready) stats = ctx.engine->stats();
  res.status = 200;
  res.set_content(ctx.metrics.render(ready ? &stats : nullptr), "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace tessera::server
