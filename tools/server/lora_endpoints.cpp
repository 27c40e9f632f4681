// LoRA adapters at run time, as llama-server has them: GET /lora-adapters lists the
// --lora adapters with their default scales, POST /lora-adapters sets those defaults for
// the requests that follow, and a generation request's `lora` field gives its own
// scales. Both lists are [{"id", "scale"}]; an adapter a list leaves out gets scale 0.
#include <cmath>
#include <limits>

#include "server/endpoints.h"
#include "server/errors.h"
#include "server/request_decode.h"
#include "server/server_context.h"

namespace tessera::server {
namespace {

std::string adapter_count(size_t n) {
  if (n == 0) return "this server has no adapters (start it with --lora FILE)";
  if (n == 1) return "this server has one adapter, id 0";
  return "this server has " + std::to_string(n) + " adapters, ids 0 to " + std::to_string(n - 1);
}

/// One entry {"id", "scale"} of a list named `param`, applied to `scales`.
void apply_entry(const json& entry, const std::string& param, std::vector<float>& scales) {
  if (!entry.is_object()) {
    throw bad_field(
        param, "'" + param + "' must be an object {\"id\", \"scale\"}, not " + type_words(entry));
  }
  const Fields f(entry, param + ".");
  const json* id_value = f.get("id");
  if (!id_value) throw bad_field(f.name("id"), "'" + f.name("id") + "' is required");
  if (!id_value->is_number_integer()) {
    throw bad_field(f.name("id"),
                    "'" + f.name("id") + "' must be an integer, not " + type_words(*id_value));
  }
  const bool in_range =
      id_value->is_number_unsigned()
          ? id_value->get<uint64_t>() < scales.size()
          : id_value->get<int64_t>() >= 0 && uint64_t(id_value->get<int64_t>()) < scales.size();
  if (!in_range) {
    throw bad_field(f.name("id"), "'" + f.name("id") + "': no adapter with id " + id_value->dump() +
                                      " (" + adapter_count(scales.size()) + ")");
  }
  // llama-server takes a missing scale as 0. JSON has no infinities, but a number beyond
  // float's range would become one.
  const double max = std::numeric_limits<float>::max();
  scales[size_t(id_value->get<int64_t>())] = float(f.number("scale", -max, max).value_or(0.0));
}

}  // namespace

std::vector<float> decode_lora_list(const json& list, const std::string& param, size_t n_adapters) {
  if (!list.is_array()) {
    throw bad_field(param, "'" + param + "' must be an array of {\"id\", \"scale\"} objects, not " +
                               type_words(list));
  }
  std::vector<float> scales(n_adapters, 0.0f);
  for (size_t i = 0; i < list.size(); ++i)
    apply_entry(list[i], param + "[" + std::to_string(i) + "]", scales);
  return scales;
}

std::optional<std::vector<float>> decode_lora_field(const Fields& body, const ServerContext& ctx) {
  const json* lora = body.get("lora");
  if (!lora) return std::nullopt;
  return decode_lora_list(*lora, "lora", ctx.model->info().adapters.size());
}

json adapters_json(const ServerContext& ctx) {
  // Before the engine exists (loading), the scales given on the command line.
  std::vector<float> scales;
  if (ctx.engine) {
    scales = ctx.engine->adapter_scales();
  } else {
    for (const AdapterSpec& a : ctx.options.adapters) scales.push_back(a.scale);
  }
  json list = json::array();
  for (size_t i = 0; i < ctx.options.adapters.size() && i < scales.size(); ++i) {
    list.push_back({{"id", i}, {"path", ctx.options.adapters[i].path}, {"scale", scales[i]}});
  }
  return list;
}

void handle_get_lora_adapters(ServerContext& ctx, const HttpRequest&, HttpResponse& res) {
  ctx.require_ready();
  send_json(res, adapters_json(ctx));
}

void handle_post_lora_adapters(ServerContext& ctx, const HttpRequest& req, HttpResponse& res) {
  ctx.require_ready();
  const json body = parse_json(req.body);
  std::vector<float> scales = decode_lora_list(body, "body", ctx.model->info().adapters.size());
  if (Status s = ctx.engine->set_adapter_scales(std::move(scales)); !s)
    throw bad_request(s.message());
  send_json(res, {{"success", true}});
}

}  // namespace tessera::server
