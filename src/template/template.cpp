// tessera::jinja::Template: lex, parse, render, with errors turned into Status.
#include <nlohmann/json.hpp>

#include "template/error.h"
#include "template/interpreter.h"
#include "template/json_value.h"
#include "template/lexer.h"
#include "template/parser.h"
#include "tessera/jinja.h"

namespace tessera::jinja {

struct Template::Parsed {
  jinja::Body body;
};

namespace {

constexpr int kMaxNesting = 200;

Status as_status(const TemplateError& e) {
  std::string where;
  if (e.line > 0) where = std::to_string(e.line) + ":" + std::to_string(e.column) + ": ";
  return Status::error(where + e.kind + ": " + e.what());
}

}  // namespace

Result<Template> Template::parse(std::string_view source) {
  try {
    auto parsed = std::make_shared<Parsed>();
    parsed->body = jinja::parse(lex(source, LexOptions{}), kMaxNesting);
    return Template(std::move(parsed));
  } catch (const TemplateError& e) {
    return as_status(e);
  }
}

Result<std::string> Template::render(std::string_view context_json, const RenderOptions& options) const {
  nlohmann::ordered_json context;
  int depth = 0;  // bounded nesting before the recursive JSON parser runs
  for (char c : context_json) {
    depth += (c == '[' || c == '{') - (c == ']' || c == '}');
    if (depth > 512) return Status::error("template context: nested deeper than 512");
  }
  try {
    context = nlohmann::ordered_json::parse(context_json);
  } catch (const nlohmann::json::exception& e) {
    return Status::error(std::string("template context: not JSON: ") + e.what());
  }
  if (!context.is_object()) return Status::error("template context: must be a JSON object");
  std::tm now{};
  if (options.now) {
    now = *options.now;
  } else {
    const std::time_t t = std::time(nullptr);
    localtime_r(&t, &now);
  }
  Limits limits;
  limits.max_output = options.max_output;
  limits.max_steps = options.max_steps;
  limits.max_depth = kMaxNesting;
  Interpreter interp(limits, now);
  try {
    const Value ctx = from_json(context);
    return interp.render(parsed_->body, ctx.dict);
  } catch (const TemplateError& e) {
    return as_status(e);
  }
}

Result<std::tm> parse_iso_time(std::string_view text) {
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  double s = 0;
  const std::string str(text);
  const int n = std::sscanf(str.c_str(), "%d-%d-%dT%d:%d:%lf", &y, &mo, &d, &h, &mi, &s);
  if (n < 3 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s >= 61)
    return Status::error("not an ISO-8601 time (YYYY-MM-DDTHH:MM:SS): '" + str + "'");
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = int(s);
  std::tm copy = tm;
  timegm(&copy);  // fills tm_wday and tm_yday
  tm.tm_wday = copy.tm_wday;
  tm.tm_yday = copy.tm_yday;
  return tm;
}

}  // namespace tessera::jinja
