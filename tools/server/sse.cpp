#include "server/sse.h"

#include "server/connection_watch.h"
#include "server/errors.h"
#include "server/request_log.h"
#include "server/server_context.h"

namespace tessera::server {
namespace {

/// What ends a stream early, as the error frame says it; "" when the event is fine.
std::string stream_problem(const serving::Event& e, bool timed_out, const ServerContext& ctx) {
  if (e.kind == serving::Event::Kind::Error) return e.message.empty() ? "generation failed" : e.message;
  if (e.kind == serving::Event::Kind::ChoiceDone && !finish_name(e.finish, timed_out)) {
    return ctx.shutting_down() ? "the server shut down during the request"
                               : std::string("generation ended: ") + serving::finish_reason_name(e.finish);
  }
  return {};
}

/// After a cancel: waits (bounded) for the engine to end the job, so that its usage is final.
void drain(JobRun& run) {
  for (int i = 0; i < 20 && !run.done(); ++i) (void)run.poll(std::chrono::milliseconds(50));
}

/// Writes the frames of `events`; false when the stream must end (`ended`: it ended
/// normally with an error frame, else the client went away).
bool write_events(StreamSink& sink, ServerContext& ctx, JobRun& run, SseFormatter& fmt,
                  const std::vector<serving::Event>& events, bool& ended) {
  for (const serving::Event& e : events) {
    const std::string problem = stream_problem(e, run.timed_out(), ctx);
    if (!problem.empty()) {
      run.cancel();
      const ApiError err = ctx.shutting_down() ? unavailable(problem, "shutting_down") : internal_error(problem);
      add_log_note(problem);
      const std::string frame = sse_frame(error_json(err));
      ended = sink.write(frame);
      return false;
    }
    const std::string frames = fmt.event(e, run.timed_out());
    if (!frames.empty() && !sink.write(frames)) {
      ended = false;
      return false;
    }
  }
  return true;
}

/// Runs the whole stream from the handler's worker, starting with the events that came
/// before the headers; false when the client went away.
bool pump(StreamSink& sink, ServerContext& ctx, JobRun& run, SseFormatter& fmt,
          std::vector<serving::Event> events) {
  int polls_after_cancel = 0;
  bool ended = true;
  for (;;) {
    if (!write_events(sink, ctx, run, fmt, events, ended)) break;
    if (run.done() || polls_after_cancel >= 200) {
      if (run.timed_out()) add_log_note("timeout");
      const std::string tail = fmt.end(run.usage());
      return tail.empty() || sink.write(tail);
    }
    if (!sink.is_writable()) {
      ended = false;
      break;
    }
    events = run.poll(std::chrono::milliseconds(20));
    if (run.timed_out() || ctx.shutting_down()) ++polls_after_cancel;
  }
  if (!ended) add_log_note("client disconnected");
  run.cancel();
  drain(run);
  return ended;
}

/// Waits for the first events of a job (it may wait in the queue): the headers go out
/// only then, so that a client sees the response start with the generation, and a job
/// that fails or is shut down before its first token still gets a proper status.
std::vector<serving::Event> first_events(const HttpRequest& req, ServerContext& ctx, JobRun& run) {
  ConnectionWatch watch(req);
  std::vector<serving::Event> events;
  int polls_after_cancel = 0;
  while (events.empty() && !run.done() && polls_after_cancel < 200) {
    events = run.poll(std::chrono::milliseconds(20));
    if (events.empty() && watch.closed()) {
      run.cancel();
      drain(run);
      add_log_note("client disconnected");
      throw ApiError(499, "the client closed the connection", "client_closed_request");
    }
    if (run.timed_out() || ctx.shutting_down()) ++polls_after_cancel;
  }
  for (const serving::Event& e : events) {
    if (e.kind == serving::Event::Kind::Token) break;
    const std::string problem = stream_problem(e, run.timed_out(), ctx);
    if (!problem.empty()) {
      run.cancel();
      throw ctx.shutting_down() ? unavailable(problem, "shutting_down") : internal_error(problem);
    }
  }
  return events;
}

}  // namespace

std::string sse_frame(const nlohmann::json& j) { return "data: " + dump_json(j) + "\n\n"; }

void stream_response(const HttpRequest& req, HttpResponse& res, ServerContext& ctx,
                     std::shared_ptr<JobRun> run, std::shared_ptr<SseFormatter> fmt) {
  auto first = std::make_shared<std::vector<serving::Event>>(first_events(req, ctx, *run));
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_stream(
      "text/event-stream",
      [&ctx, run, fmt, first](StreamSink& sink) {
        const bool ok = pump(sink, ctx, *run, *fmt, std::move(*first));
        record_usage(ctx, run->usage());
        return ok;
      },
      [run] { run->cancel(); });
}

}  // namespace tessera::server
