// What every handler shares: the options, the model and engine (once loaded), the chat
// template, the metrics. Before `state` reads Ready, only `options` and `metrics` may be
// used; after, `model`, `engine` and `chat_template` never change (the loader sets them
// and then stores Ready with release order).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "server/metrics.h"
#include "server/request_registry.h"
#include "server/server_options.h"
#include "tessera/chat.h"
#include "tessera/model.h"
#include "tessera/serving.h"
#include "tessera/tokenizer.h"

namespace tessera::server {

class Fields;

enum class ServerState { Loading, Ready, ShuttingDown };

/// tessera's version, as /props and the fingerprint give it.
inline constexpr const char* kTesseraVersion = "0.1.0";

/// OpenAI's `system_fingerprint`: "tessera-<version>-<12 hex digits>", the digits a hash
/// of this executable's bytes (/proc/self/exe), so one build always answers the same and
/// another build differently ("tessera-<version>" alone if the file cannot be read).
/// Computed once; run_server calls it at start-up.
const std::string& build_fingerprint();

struct ServerContext {
  explicit ServerContext(const ServerOptions& o) : options(o) {}

  const ServerOptions& options;
  std::atomic<ServerState> state{ServerState::Loading};
  std::unique_ptr<Model> model;
  std::unique_ptr<Model> draft_model;  // -md: speculative decoding's (outlives the engine)
  std::unique_ptr<serving::Engine> engine;
  std::optional<ChatTemplate> chat_template;
  std::string model_file;  // the model's file name
  std::string model_name;  // --alias, else model_file
  Metrics metrics;
  RequestRegistry requests;  // the running jobs' requests, for /slots
  std::atomic<uint64_t> next_id{1};

  bool ready() const { return state.load(std::memory_order_acquire) == ServerState::Ready; }
  bool shutting_down() const { return state.load(std::memory_order_acquire) == ServerState::ShuttingDown; }
  /// A 503 ApiError unless the model is loaded and the server is not shutting down.
  void require_ready() const;
  const Tokenizer& tokenizer() const { return *model->tokenizer(); }
  /// Cells of one sequence (prompt plus output): the engine's; without an engine (the
  /// fuzz harness decodes requests only) the model's training context, at most 4096.
  int64_t seq_ctx() const;
  /// With --strict-model: a 404 when the body's `model` is given and is neither the
  /// alias, the file name nor the path the server was started with. Without it the field
  /// is ignored (as llama-server does: single-model clients send any name).
  void check_model(const Fields& body) const;
  /// Throws 404 model_not_found unless `name` is the alias, the file name or the path.
  void check_model_name(const std::string& name) const;
  /// A fresh id with `prefix` ("chatcmpl-", "cmpl-", ...).
  std::string make_id(const char* prefix);
};

}  // namespace tessera::server
