// What `tessera serve` was asked to do (tools/cli/cmd_serve.cpp fills it from the flags).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/request_limits.h"
#include "tessera/model.h"
#include "tessera/serving.h"
#include "tessera/status.h"

namespace tessera::server {

struct ServerOptions {
  std::string model;  // GGUF file
  std::vector<AdapterSpec> adapters;  // --lora, applied at load
  std::string layers;                 // --layers (ModelParams::layers)
  bool mpi = false;                   // --mpi: the model split across MPI ranks
  std::vector<int64_t> mpi_layers;    // --mpi-layers
  int n_gpu_layers = 0;               // -ngl (ModelParams::n_gpu_layers)
  int device = 0;                     // --device
  DType type_k = DType::F16;          // -ctk/--cache-type-k
  DType type_v = DType::F16;          // -ctv/--cache-type-v
  std::string host = "127.0.0.1";
  int port = 8080;    // 0: any free port
  int n_parallel = 4;
  int64_t ctx = 0;          // -c: cells of the whole cache (0: n_parallel x ctx_per_seq)
  int64_t ctx_per_seq = 0;  // --ctx-per-seq (0: from -c, or the model's, at most 4096)
  int64_t batch_budget = 512;
  int threads = 2;
  RopeScalingParams rope;  // --rope-scaling, --rope-scale, --rope-freq-*, --yarn-*
  std::vector<std::string> api_keys;  // --api-key (and the lines of --api-key-file)
  bool metrics = false;
  int max_queue = 64;
  double timeout_s = 0;  // 0: no limit
  std::string alias;     // the model's name in responses (default: the file name)
  bool strict_model = false;  // --strict-model: a request naming another model is a 404
  std::string chat_template;
  std::string chat_template_file;  // --chat-template-file
  std::string reasoning_format = "deepseek";  // --reasoning-format: none, deepseek (auto = deepseek)
  // Defaults of every request that leaves a field out (or sends null), llama-server's
  // flags: --temp, --top-k, --top-p, --min-p, --repeat-penalty set these; the rest stay
  // SamplerParams's. --seed: -1 draws a random seed per request. -n: the token limit
  // (-1: until the sequence is full); unset, each endpoint keeps its own (16 for
  // /v1/completions, -1 elsewhere).
  SamplerParams sampling;
  int64_t seed = -1;
  std::optional<int32_t> n_predict;
  bool embeddings = false;
  bool slots = true;  // GET /slots (--no-slots: 501)
  std::string slot_save_path;  // --slot-save-path: POST /slots/{id} save/restore files (empty: 501)
  std::string pooling;  // --pooling: none, mean, cls, last, rank (a request's `pooling` overrides it);
                        // "": the model file's pooling_type, else mean
  std::string cors_origin;  // empty: no CORS headers
  bool webui = true;
  bool prefix_cache = true;
  size_t max_body_bytes = limits::kDefaultMaxBodyBytes;
  int max_connections = limits::kDefaultMaxConnections;
  int max_connections_per_client = limits::kDefaultMaxConnectionsPerClient;
  double idle_timeout_s = limits::kDefaultIdleTimeoutS;      // --idle-timeout
  double header_timeout_s = limits::kDefaultHeaderTimeoutS;  // --header-timeout
  double body_timeout_s = limits::kDefaultBodyTimeoutS;      // --body-timeout
  std::string model_draft;          // -md: speculative decoding with this draft model
  bool lookup = false;              // --lookup: speculative decoding by n-gram lookup
  SpeculativeParams speculative;    // --draft-max, --draft-min, --draft-p-min
};

/// The engine's parameters for `o`: -c alone gives each sequence c / np cells; with
/// --ctx-per-seq too, c must be at least np x ctx_per_seq. Errors say which flag is wrong.
Result<serving::EngineParams> engine_params(const ServerOptions& o);

/// Reads API keys from a file: one a line; blank lines and lines starting with '#' are
/// skipped, surrounding spaces trimmed.
Result<std::vector<std::string>> read_api_key_file(const std::string& path);

/// Runs the server until SIGINT or SIGTERM; the process exit status (0 after a signal).
int run_server(const ServerOptions& options);

}  // namespace tessera::server
