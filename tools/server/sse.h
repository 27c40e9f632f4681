// Server-sent events: a streaming response writes one `data: {json}\n\n` frame per
// event, produced by a formatter per API, on the request's worker thread.
//
// The stream stops early when the client goes away (StreamSink::is_writable turns false or
// a write fails): the job is cancelled, so its cells are freed at the engine's next step.
#pragma once

#include <memory>
#include <string>

#include "server/generation.h"

#include "server/http_message.h"

namespace tessera::server {

struct ServerContext;

/// Turns a job's events into frames.
class SseFormatter {
 public:
  virtual ~SseFormatter() = default;
  /// The frames of one event ("" when it shows nothing).
  virtual std::string event(const serving::Event& e, bool timed_out) = 0;
  /// The frames after the last event (a usage chunk, `data: [DONE]`).
  virtual std::string end(const serving::Usage& usage) = 0;
};

/// "data: <json>\n\n".
std::string sse_frame(const nlohmann::json& j);

/// Makes `res` a text/event-stream of `run` through `fmt`. Waits for the job's first
/// events before the headers go out (a job waiting in the queue has sent nothing yet);
/// throws an ApiError when it fails or the client leaves before that. Later, an engine
/// error or the server shutting down is sent as a frame {"error": {...}} that ends it.
void stream_response(const HttpRequest& req, HttpResponse& res, ServerContext& ctx,
                     std::shared_ptr<JobRun> run, std::shared_ptr<SseFormatter> fmt);

}  // namespace tessera::server
