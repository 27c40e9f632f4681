// `tessera serve`: the HTTP server (OpenAI-compatible and llama.cpp-compatible APIs, a web
// chat page) over the serving engine. The flags fill a ServerOptions; tools/server/ does
// the rest (docs/server.md).
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>

#include "commands.h"
#include "server/server_options.h"

namespace tessera::cli {
namespace {

struct ServeFlags {
  server::ServerOptions o;
  std::string api_key_file;
  std::vector<std::string> lora;  // --lora FILE[:SCALE]
  PlacementOptions placement;     // -ngl, --device, --layers, --mpi, --mpi-layers
  CacheTypeOptions cache_types;   // -ctk, -ctv
  bool no_webui = false;
  bool no_prefix_cache = false;
  bool jinja_accepted = false;  // --jinja: nothing to change
  int32_t n_predict = -1;               // -n, copied into o.n_predict when given
  CLI::Option* n_predict_flag = nullptr;
  SpeculativeOptions speculative;       // -md, --lookup, --draft-*
};

int run_serve(ServeFlags& f) {
  Result<std::vector<AdapterSpec>> adapters = adapter_specs(f.lora);
  if (!adapters) return fail(adapters.status().message());
  f.o.adapters = std::move(*adapters);
  f.o.layers = f.placement.layers;
  f.o.mpi = f.placement.mpi;
  f.o.mpi_layers = f.placement.mpi_layers;
  f.o.n_gpu_layers = f.placement.n_gpu_layers;
  f.o.device = f.placement.device;
  if (Status st = apply_cache_types(f.cache_types, f.o.type_k, f.o.type_v); !st) return usage_error("serve: " + st.message());
  if (!f.api_key_file.empty()) {
    Result<std::vector<std::string>> keys = server::read_api_key_file(f.api_key_file);
    if (!keys) return fail(keys.status().message());
    f.o.api_keys.insert(f.o.api_keys.end(), keys->begin(), keys->end());
  }
  for (const std::string& k : f.o.api_keys) {
    if (k.empty()) return fail("--api-key: a key must not be empty");
  }
  if (f.n_predict_flag->count() > 0) f.o.n_predict = f.n_predict;
  f.o.model_draft = f.speculative.model_draft;
  f.o.lookup = f.speculative.lookup;
  f.o.speculative = f.speculative.params;
  f.o.webui = !f.no_webui;
  f.o.prefix_cache = !f.no_prefix_cache;
  if (!f.o.slot_save_path.empty() && !std::filesystem::is_directory(f.o.slot_save_path)) {
    return fail("--slot-save-path: '" + f.o.slot_save_path + "' is not an existing directory");
  }
  return server::run_server(f.o);
}

void add_network_flags(CLI::App* cmd, ServeFlags& f) {
  cmd->add_option("--host", f.o.host, "address to listen on (loopback by default; 0.0.0.0 exposes the server)")
      ->capture_default_str();
  cmd->add_option("--port", f.o.port, "TCP port; 0 picks a free one (the 'listening on' line says which)")
      ->capture_default_str()
      ->check(NumberRange(0, 65535));
  cmd->add_option("--api-key", f.o.api_keys,
                  "require this key ('Authorization: Bearer KEY' or 'X-Api-Key: KEY') on every endpoint but "
                  "/health and the web page; repeat for several keys")
      ->allow_extra_args(false);
  cmd->add_option("--api-key-file", f.api_key_file, "file of API keys, one a line ('#' starts a comment line)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--cors", f.o.cors_origin,
                  "allow browsers on ORIGIN (or *) to call the API: CORS headers and OPTIONS preflight answers");
  cmd->add_option("--max-body", f.o.max_body_bytes, "largest request body in bytes; larger ones get 413")
      ->capture_default_str()
      ->check(NumberRange(size_t(1024), size_t(1) << 30));
  cmd->add_option("--max-connections", f.o.max_connections,
                  "connections open at once; more are answered 503 and closed")
      ->capture_default_str()
      ->check(NumberRange(1, 1 << 20));
  cmd->add_option("--max-connections-per-client", f.o.max_connections_per_client,
                  "connections open at once from one client address (0: no limit)")
      ->capture_default_str()
      ->check(NumberRange(0, 1 << 20));
  cmd->add_option("--idle-timeout", f.o.idle_timeout_s, "seconds a connection may wait for its next request")
      ->capture_default_str()
      ->check(NumberRange(0.01, 86400.0));
  cmd->add_option("--header-timeout", f.o.header_timeout_s,
                  "seconds from a request's first byte to the end of its headers (then 408)")
      ->capture_default_str()
      ->check(NumberRange(0.01, 86400.0));
  cmd->add_option("--body-timeout", f.o.body_timeout_s, "seconds for a request's body to arrive (then 408)")
      ->capture_default_str()
      ->check(NumberRange(0.01, 86400.0));
  cmd->add_flag("--no-webui", f.no_webui, "do not serve the web chat page (GET / answers 404)");
  cmd->add_flag("--metrics", f.o.metrics, "serve Prometheus metrics at GET /metrics (without: 501)");
}

/// llama-server's sampling flags: defaults of requests that leave the field out or null.
void add_sampling_flags(CLI::App* cmd, ServeFlags& f) {
  SamplerParams& s = f.o.sampling;
  const std::string unset = " of requests that do not set ";
  cmd->add_option("--temp", s.temperature, "temperature" + unset + "'temperature' (0: greedy)")
      ->capture_default_str()
      ->check(NumberRange(0.0, 100.0));
  cmd->add_option("--top-k", s.top_k, "top-k" + unset + "'top_k' (0 or -1: all tokens)")
      ->capture_default_str()
      ->check(NumberRange(-1, std::numeric_limits<int32_t>::max()));
  cmd->add_option("--top-p", s.top_p, "top-p" + unset + "'top_p' (1: off)")
      ->capture_default_str()
      ->check(NumberRange(0.0, 1.0));
  cmd->add_option("--min-p", s.min_p, "min-p" + unset + "'min_p' (0: off)")
      ->capture_default_str()
      ->check(NumberRange(0.0, 1.0));
  cmd->add_option("--repeat-penalty", s.repeat_penalty, "repeat penalty" + unset + "'repeat_penalty' (1: off)")
      ->capture_default_str()
      ->check(NumberRange(0.01, 100.0));
  cmd->add_option("--seed", f.o.seed,
                  "seed" + unset + "'seed' (choice i draws with seed + i; -1: a random seed per request)")
      ->capture_default_str()
      ->check(NumberRange(int64_t(-1), std::numeric_limits<int64_t>::max()));
  f.n_predict_flag = cmd->add_option("-n,--n-predict", f.n_predict,
                                     "tokens per choice" + unset + "'max_tokens' / 'n_predict' (-1: until the "
                                     "sequence is full; without -n: 16 for /v1/completions, -1 elsewhere)")
                         ->check(NumberRange(-1, std::numeric_limits<int32_t>::max()));
}

void add_engine_flags(CLI::App* cmd, ServeFlags& f) {
  cmd->add_option("-m,--model", f.o.model, model_option_help())->check(CLI::ExistingFile);
  add_lora_option(cmd, f.lora);
  add_placement_options(cmd, f.placement);
  add_cache_type_options(cmd, f.cache_types);
  add_rope_options(cmd, f.o.rope);
  cmd->add_option("--parallel", f.o.n_parallel, "(also -np) sequences decoded together (slots); a request "
                                               "with n choices takes n")
      ->capture_default_str()
      ->check(NumberRange(1, 32));
  cmd->add_option("-c,--ctx-size", f.o.ctx,
                  "KV cache cells in all; alone it gives each slot c / np cells; with --ctx-per-seq it must be "
                  "at least np x ctx-per-seq (the rest holds cached prefixes)")
      ->check(NumberRange(int64_t(0), int64_t(1) << 24));
  cmd->add_option("--ctx-per-seq", f.o.ctx_per_seq,
                  "cells one request may use, prompt and output (default: from -c, else the model's training "
                  "context, at most 4096)")
      ->check(NumberRange(int64_t(0), int64_t(1) << 24));
  cmd->add_option("-b,--batch-budget", f.o.batch_budget, "tokens decoded per step (generating tokens + prompt chunks)")
      ->capture_default_str()
      ->check(NumberRange(int64_t(1), int64_t(1) << 20));
  cmd->add_option("-t,--threads", f.o.threads, "CPU threads")->check(NumberRange(1, 512));
  cmd->add_option("--max-queue", f.o.max_queue, "requests that may wait for a slot; more get 429")
      ->capture_default_str()
      ->check(NumberRange(0, 1 << 16));
  cmd->add_option("--timeout", f.o.timeout_s,
                  "seconds a request may take; then it is cancelled and answered with what it has, "
                  "finish_reason \"length\" (0: no limit)")
      ->capture_default_str()
      ->check(NumberRange(0.0, 1e7));
  cmd->add_option("--alias", f.o.alias, "the model's name in responses and /v1/models (default: the file name)");
  cmd->add_flag("--strict-model", f.o.strict_model,
                "answer 404 model_not_found to a request whose 'model' is not the alias, the file name or the "
                "path (without it the field is ignored, as llama-server does)");
  auto* family = cmd->add_option("--chat-template", f.o.chat_template,
                                 "built-in chat template family instead of the model's own Jinja template "
                                 "(see 'tessera chat --help' for names)");
  cmd->add_option("--chat-template-file", f.o.chat_template_file,
                  "Jinja chat template (as in tokenizer_config.json) instead of the model's own")
      ->check(CLI::ExistingFile)
      ->excludes(family);
  cmd->add_option("--reasoning-format", f.o.reasoning_format,
                  "where a thinking model's <think>...</think> goes: deepseek (message.reasoning_content; "
                  "auto is the same) or none (left in the content); a request's reasoning_format overrides it")
      ->check(CLI::IsMember({"none", "deepseek", "auto"}))
      ->capture_default_str();
  cmd->add_flag("--jinja", f.jinja_accepted,
                "accepted (llama-server's --jinja): the model's own Jinja template is the default already");
  cmd->add_flag("--embeddings", f.o.embeddings, "answer POST /v1/embeddings (without: 501)");
  cmd->add_flag("--no-prefix-cache", f.no_prefix_cache,
                "do not keep finished requests' cells to reuse as prompt prefixes");
}

/// llama-server's flags for its own endpoints (/embeddings, /slots, ...).
void add_llama_server_flags(CLI::App* cmd, ServeFlags& f) {
  cmd->add_option("--pooling", f.o.pooling,
                  "embedding pooling of requests that do not set 'pooling': mean, cls, last, rank (a reranker's "
                  "score), or none (a vector per token, POST /embeddings only); default: the model file's "
                  "pooling_type, else mean")
      ->check(CLI::IsMember({"none", "mean", "cls", "last", "rank"}));
  // llama-server needs --reranking to serve /v1/rerank; here the model decides (a reranker
  // file is served there, another answers 501), so the flag is accepted and changes nothing.
  cmd->add_flag("--reranking,--rerank")->description("accepted for llama-server's command lines: POST /v1/rerank is served "
                                        "whenever the model is a reranker (else it answers 501)");
  cmd->add_flag("--slots,!--no-slots", f.o.slots, "serve GET /slots (the default; --no-slots: 501)");
  cmd->add_option("--slot-save-path", f.o.slot_save_path,
                  "directory (existing) of the files of POST /slots/{id}?action=save|restore; without it "
                  "the slot actions answer 501");
}

}  // namespace

Command add_serve(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  f->o.threads = default_threads();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Serve a model over HTTP: OpenAI's /v1/chat/completions, /v1/completions, /v1/embeddings,\n"
      "/v1/models; llama.cpp's /completion, /tokenize, /detokenize, /apply-template, /props,\n"
      "/slots; /health, /metrics and a web chat page at /. Requests are decoded together\n"
      "(continuous batching) with a shared prefix cache. Once the socket is bound it prints\n"
      "'tessera serve: listening on http://HOST:PORT' to stderr, then loads the model (/health\n"
      "answers 503 until it is ready). One log line per request on stderr. SIGINT or SIGTERM\n"
      "stop it: in-flight requests are cancelled, the exit status is 0. See docs/server.md.");
  add_engine_flags(cmd, *f);
  add_sampling_flags(cmd, *f);
  add_network_flags(cmd, *f);
  add_llama_server_flags(cmd, *f);
  add_speculative_options(cmd, f->speculative);
  return {cmd, [f] { return run_serve(*f); }};
}

}  // namespace tessera::cli
