// Jinja templates, rendered as Python's jinja2 renders them for Hugging Face transformers'
// apply_chat_template: an immutable sandbox, trim_blocks and lstrip_blocks on, loop
// controls (break/continue), no autoescape; `tojson` is json.dumps (ensure_ascii off,
// ", " and ": " separators); the globals raise_exception(msg) and strftime_now(fmt).
// This is how tessera renders a model's own chat template (tokenizer.chat_template).
//
// What it covers: statements if/elif/else, for (loop.*, else, recursive, inline if),
// break/continue, set (block set, tuple unpacking, namespace attributes), macro/call,
// filter blocks, with, raw, generation; expressions with Python's operators, literals,
// slicing, filters and tests; str/dict/list methods templates call (strip, split,
// startswith, get, items, ...); Python's str()/repr() of values; Undefined as jinja2's
// default Undefined, Markup from `safe`/`escape` (a str added to one is escaped, as
// markupsafe does). Not covered: extends/include/import/block (templates of one file need
// none), autoescape. Integers are 64-bit: a literal or JSON number past int64 is a float
// (Python keeps it exact); str.upper()/lower() map one code point to one (no "ß" -> "SS").
//
// Limits: a render stops with an error past 16 MiB of output, 20 M steps (statements,
// loop iterations, items filtered) or 200 nested calls; a parse past 200 nested blocks or
// expressions. Errors read "LINE:COLUMN: Kind: message" with jinja2's exception kind
// (TemplateSyntaxError, UndefinedError, TypeError, TemplateError for raise_exception...).
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tessera/status.h"

namespace tessera::jinja {


struct RenderOptions {
  /// What strftime_now() formats; absent: the current local time.
  std::optional<std::tm> now;
  size_t max_output = size_t{1} << 24;
  int64_t max_steps = 20'000'000;
};

/// A parsed template: immutable, shareable between threads.
class Template {
 public:
  /// Parses `source`. Errors: syntax errors with their line and column.
  static Result<Template> parse(std::string_view source);

  /// Renders with `context_json` (a JSON object: its members are the template's variables;
  /// key order is kept, as Python keeps it). Errors: context that is not a JSON object,
  /// and whatever the template raises or does wrong, with its line and column.
  Result<std::string> render(std::string_view context_json, const RenderOptions& options = {}) const;

 private:
  struct Parsed;
  explicit Template(std::shared_ptr<const Parsed> parsed) : parsed_(std::move(parsed)) {}
  std::shared_ptr<const Parsed> parsed_;
};

/// An ISO-8601 time ("2024-07-26T10:30:00", a trailing "Z" or offset ignored) as a tm.
Result<std::tm> parse_iso_time(std::string_view text);

}  // namespace tessera::jinja
