// POST /slots/{id}?action=save|restore|erase: llama-server's slot actions over the engine's
// prefix cache (Engine::slot_action; what a slot holds is explained in tessera/serving.h).
// Save and restore name a file in --slot-save-path; as llama-server, every action is
// refused (501) without that flag, and --no-slots (GET /slots) does not touch them.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "server/endpoints.h"
#include "server/errors.h"
#include "server/json_fields.h"
#include "server/server_context.h"

namespace tessera::server {
namespace {

using serving::SlotActionKind;
using serving::SlotActionResult;

// How long an action waits for a busy slot: the request timeout when one is set, else a
// minute (llama-server waits without a bound; a bound keeps a worker from waiting forever
// on a slot that a long generation holds).
constexpr double kDefaultSlotWaitS = 60;

/// The value of `key` in a query string ("" when absent).
std::string query_value(const std::string& query, std::string_view key) {
  size_t at = 0;
  while (at <= query.size()) {
    size_t end = query.find('&', at);
    if (end == std::string::npos) end = query.size();
    const std::string_view part(query.data() + at, end - at);
    const size_t eq = part.find('=');
    if (part.substr(0, eq) == key) return eq == std::string_view::npos ? "" : percent_decode(part.substr(eq + 1));
    at = end + 1;
  }
  return {};
}

/// The slot id of "/slots/{id}": a decimal number in [0, np).
int slot_id(const ServerContext& ctx, const std::string& path) {
  const std::string text = path.substr(std::string_view("/slots/").size());
  const int n = ctx.engine->params().n_parallel;
  int id = -1;
  const bool digits = !text.empty() && text.size() <= 4 && text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) id = std::stoi(text);
  if (id < 0 || id >= n) {
    throw bad_field("id_slot", "Invalid slot ID '" + text + "': slots are 0 .. " + std::to_string(n - 1));
  }
  return id;
}

/// llama-server's fs_validate_filename, reduced to what a file name in one directory
/// needs: not empty, at most 255 bytes, no NUL, no path separator, not "." or "..".
void check_filename(const std::string& name) {
  std::string why;
  if (name.empty()) {
    why = "it is empty";
  } else if (name.size() > 255) {
    why = "it is longer than 255 bytes";
  } else if (name.find('\0') != std::string::npos) {
    why = "it holds a NUL byte";
  } else if (name.find_first_of("/\\") != std::string::npos) {
    why = "it holds a path separator (a file name inside --slot-save-path only)";
  } else if (name.find("..") != std::string::npos || name == ".") {
    why = "it holds '..' or is '.'";
  }
  if (!why.empty()) throw bad_field("filename", "Invalid filename: " + why);
}

std::string file_of(const ServerContext& ctx, const HttpRequest& req) {
  const json body = parse_body(req.body);
  const std::optional<std::string> name = Fields(body).string("filename");
  if (!name) throw bad_field("filename", "filename: required (a file name in --slot-save-path)");
  check_filename(*name);
  std::string dir = ctx.options.slot_save_path;
  if (!dir.ends_with('/')) dir += '/';
  return dir + *name;
}

void throw_error(const SlotActionResult& r) {
  using Error = SlotActionResult::Error;
  switch (r.error) {
    case Error::Invalid:
      throw bad_request(r.message, "invalid_slot_file");
    case Error::NotFound:
      throw not_found(r.message, "file_not_found");
    case Error::Busy:
      throw unavailable(r.message, "slot_busy");
    case Error::ShuttingDown:
      throw unavailable(r.message, "shutting_down");
    case Error::Failed:
      throw internal_error(r.message);
    case Error::None:
      return;
  }
}

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

void handle_slot_action(ServerContext& ctx, const HttpRequest& req, HttpResponse& res) {
  if (ctx.options.slot_save_path.empty()) {
    throw not_supported("This server does not support slots action. Start it with --slot-save-path DIR");
  }
  ctx.require_ready();
  const int id = slot_id(ctx, req.path);
  const std::string action = query_value(req.query, "action");
  SlotActionKind kind;
  if (action == "save") {
    kind = SlotActionKind::Save;
  } else if (action == "restore") {
    kind = SlotActionKind::Restore;
  } else if (action == "erase") {
    kind = SlotActionKind::Erase;
  } else {
    throw bad_field("action", "Invalid action '" + action + "': one of save, restore, erase");
  }
  const std::string path = kind == SlotActionKind::Erase ? std::string() : file_of(ctx, req);
  const double wait_s = ctx.options.timeout_s > 0 ? ctx.options.timeout_s : kDefaultSlotWaitS;
  const auto wait = std::chrono::milliseconds(int64_t(wait_s * 1000));
  const SlotActionResult r = ctx.engine->slot_action(kind, id, path, wait);
  throw_error(r);
  json out = {{"id_slot", id}};
  if (kind == SlotActionKind::Save) {
    out.update({{"filename", base_name(path)}, {"n_saved", r.n_tokens}, {"n_written", r.n_bytes},
                {"timings", {{"save_ms", r.ms}}}});
  } else if (kind == SlotActionKind::Restore) {
    out.update({{"filename", base_name(path)}, {"n_restored", r.n_tokens}, {"n_read", r.n_bytes},
                {"timings", {{"restore_ms", r.ms}}}});
  } else {
    out["n_erased"] = r.n_tokens;
  }
  send_json(res, out);
}

}  // namespace tessera::server
