// `tessera template`: renders a Jinja chat template over a JSON context, as
// transformers' apply_chat_template renders it (the engine of tessera/jinja.h). For
// people debugging a model's template, and for tests: the render on stdout and exit 0,
// or the template's error (line:column: kind: message) on stderr and exit 1.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "tessera/gguf.h"
#include "tessera/jinja.h"

namespace tessera::cli {
namespace {

struct TemplateOptions {
  std::string file;
  std::string model;
  std::string name;
  std::string context;
  std::string now;
};

Result<std::string> read_file(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(std::string("cannot read the ") + what + " '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int run_template(const TemplateOptions& o) {
  auto fail = [](const std::string& msg) {
    std::fprintf(stderr, "tessera template: %s\n", msg.c_str());
    return kExitError;
  };
  std::string source;
  if (!o.file.empty()) {
    Result<std::string> text = read_file(o.file, "template");
    if (!text) return fail(text.status().message());
    source = *text;
  } else {
    Result<std::unique_ptr<gguf::File>> file = gguf::File::open(o.model);
    if (!file) return fail(file.status().message());
    const std::string key = o.name.empty() ? "tokenizer.chat_template" : "tokenizer.chat_template." + o.name;
    Result<std::string> text = (*file)->get_string(key);
    if (!text) return fail(o.model + " has no " + key);
    source = *text;
  }
  std::string context = "{}";
  if (!o.context.empty()) {
    Result<std::string> text = read_file(o.context, "context");
    if (!text) return fail(text.status().message());
    context = *text;
  }
  jinja::RenderOptions options;
  if (!o.now.empty()) {
    Result<std::tm> now = jinja::parse_iso_time(o.now);
    if (!now) return fail("--now: " + now.status().message());
    options.now = *now;
  }
  Result<jinja::Template> tpl = jinja::Template::parse(source);
  if (!tpl) return fail((o.file.empty() ? o.model : o.file) + ":" + tpl.status().message());
  Result<std::string> out = tpl->render(context, options);
  if (!out) return fail((o.file.empty() ? o.model : o.file) + ":" + out.status().message());
  std::fwrite(out->data(), 1, out->size(), stdout);
  return 0;
}

}  // namespace

Command add_template(CLI::App& app) {
  auto o = std::make_shared<TemplateOptions>();
  CLI::App* sub = app.add_subcommand(
      "template", "render a Jinja chat template over a JSON context (as transformers' apply_chat_template does)");
  auto* file = sub->add_option("-f,--file", o->file, "the template (Jinja text)")->check(CLI::ExistingFile);
  auto* model = sub->add_option("-m,--model", o->model, "take the template from this GGUF file instead")
                    ->check(CLI::ExistingFile);
  file->excludes(model);
  sub->add_option("--name", o->name, "with -m: the named template (tokenizer.chat_template.NAME, e.g. tool_use)")
      ->needs(model);
  sub->add_option("-c,--context", o->context,
                  "JSON object of the template's variables (messages, add_generation_prompt, bos_token, tools...); "
                  "default {}")
      ->check(CLI::ExistingFile);
  sub->add_option("--now", o->now, "the time strftime_now() formats, ISO-8601 (default: now)");
  sub->footer("Prints the render to stdout (exit 0), or the template's error with its line and column (exit 1).");
  return {sub, [o, file, model]() {
            if (file->count() == 0 && model->count() == 0) {
              std::fprintf(stderr, "tessera template: give the template with -f FILE or -m MODEL.gguf\n");
              return kExitUsage;
            }
            return run_template(*o);
          }};
}

}  // namespace tessera::cli
