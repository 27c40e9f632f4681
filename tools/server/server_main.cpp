// `tessera serve` from start to exit: bind (and say where), load the model while /health
// answers 503, serve, and on SIGINT / SIGTERM stop accepting, cancel what is in flight
// (Engine::shutdown), wait for the workers, exit 0.
//
// Signals: SIGINT and SIGTERM are blocked in every thread (the mask is set before any
// thread starts) and taken by one watcher thread with sigtimedwait. SIGPIPE is ignored:
// a client that goes away must not kill the server (writes then fail with EPIPE).
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "server/http_server.h"
#include "server/server_context.h"
#include "server/server_options.h"

namespace tessera::server {
namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "tessera: %s\n", message.c_str());
  return 1;
}

/// The stop request: set by the signal watcher, awaited by the main thread.
struct StopSignal {
  std::mutex mu;
  std::condition_variable cv;
  bool requested = false;
  std::atomic<bool> quit{false};  // the watcher should end without a signal

  void request() {
    std::lock_guard<std::mutex> lock(mu);
    requested = true;
    cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return requested; });
  }
};

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

/// Waits for SIGINT / SIGTERM; then new requests get 503, the listener closes, and the
/// main thread is woken.
void watch_signals(ServerContext& ctx, HttpServer& http, StopSignal& stop) {
  const sigset_t set = stop_signals();
  const timespec tick = {0, 100 * 1000 * 1000};
  while (!stop.quit.load()) {
    const int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig != SIGINT && sig != SIGTERM) continue;
    std::fprintf(stderr, "tessera serve: %s: shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    ctx.state.store(ServerState::ShuttingDown, std::memory_order_release);
    http.stop();
    stop.request();
    return;
  }
}

/// Loads the model, its template and the engine into `ctx`, then marks it Ready.
Status load(ServerContext& ctx, const serving::EngineParams& params) {
  const ServerOptions& o = ctx.options;
  ModelParams mp;
  mp.adapters = o.adapters;
  mp.layers = o.layers;
  mp.mpi = o.mpi;
  mp.mpi_layers = o.mpi_layers;
  mp.n_gpu_layers = o.n_gpu_layers;
  mp.device = o.device;
  Result<std::unique_ptr<Model>> model = o.model.empty() ? Model::load_default(mp) : Model::load(o.model, mp);
  if (!model) return model.status();
  if (!(*model)->tokenizer()) return Status::error(o.model + ": the model has no usable tokenizer, so it cannot serve text");
  Result<ChatTemplate> tmpl = choose_chat_template(**model, o.chat_template, o.chat_template_file);
  if (!tmpl) return tmpl.status();
  serving::EngineParams with_draft = params;
  if (!o.model_draft.empty()) {
    Result<std::unique_ptr<Model>> draft = Model::load(o.model_draft);
    if (!draft) return draft.status();
    const Tokenizer* td = (*draft)->tokenizer();
    if (!td) return Status::error(o.model_draft + ": the draft model has no usable tokenizer");
    if (Status s = check_draft_vocab(*(*model)->tokenizer(), *td); !s) return s.with_context(o.model_draft);
    ctx.draft_model = std::move(*draft);
    with_draft.draft_model = ctx.draft_model.get();
  }
  Result<std::unique_ptr<serving::Engine>> engine = serving::Engine::create(**model, with_draft);
  if (!engine) return engine.status();
  ctx.model = std::move(*model);
  ctx.chat_template = *tmpl;
  ctx.engine = std::move(*engine);
  ctx.engine->start();
  ServerState expected = ServerState::Loading;
  ctx.state.compare_exchange_strong(expected, ServerState::Ready, std::memory_order_acq_rel);
  return Status::ok();
}

/// Raises the soft limit on open files towards `wanted` (each connection is one); warns
/// when the hard limit is lower, since connections past it are refused by accept.
void raise_file_limit(rlim_t wanted) {
  rlimit l = {};
  if (getrlimit(RLIMIT_NOFILE, &l) != 0 || l.rlim_cur >= wanted) return;
  l.rlim_cur = l.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, l.rlim_max);
  if (setrlimit(RLIMIT_NOFILE, &l) != 0 || l.rlim_cur < wanted) {
    std::fprintf(stderr, "tessera serve: warning: at most %llu open files (ulimit -n), fewer than --max-connections\n",
                 static_cast<unsigned long long>(l.rlim_cur));
  }
}

std::string url_host(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

/// Stops the listener and waits for the HTTP thread (stop() is repeated: a stop that
/// came before the listener started would otherwise be missed).
void stop_http(HttpServer& http, std::thread& thread, std::atomic<bool>& finished) {
  for (int i = 0; !finished.load() && i < 6000; ++i) {
    http.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (thread.joinable()) thread.join();
}

}  // namespace

Result<serving::EngineParams> engine_params(const ServerOptions& o) {
  serving::EngineParams p;
  p.n_parallel = o.n_parallel;
  p.batch_budget = o.batch_budget;
  p.max_queue = o.max_queue;
  p.prefix_cache = o.prefix_cache;
  p.n_threads = o.threads;
  p.embeddings = o.embeddings;  // an encoder model turns them on (Engine::create)
  p.lookup = o.lookup;           // the draft model is set once it is loaded
  p.speculative = o.speculative;
  p.type_k = o.type_k;
  p.type_v = o.type_v;
  p.rope = o.rope;
  if (o.ctx > 0 && o.ctx_per_seq > 0) {
    if (o.ctx < int64_t(o.n_parallel) * o.ctx_per_seq) {
      return Status::error("-c " + std::to_string(o.ctx) + " is less than --parallel " + std::to_string(o.n_parallel) +
                           " x --ctx-per-seq " + std::to_string(o.ctx_per_seq) + " = " +
                           std::to_string(int64_t(o.n_parallel) * o.ctx_per_seq) + " cells");
    }
    p.n_ctx = o.ctx;
    p.n_ctx_per_seq = o.ctx_per_seq;
  } else if (o.ctx > 0) {
    p.n_ctx_per_seq = o.ctx / o.n_parallel;
    if (p.n_ctx_per_seq < 1) {
      return Status::error("-c " + std::to_string(o.ctx) + " gives less than one cell to each of the " +
                           std::to_string(o.n_parallel) + " sequences (--parallel)");
    }
    p.n_ctx = o.ctx;
  } else {
    p.n_ctx_per_seq = o.ctx_per_seq;  // 0: the engine's default
  }
  return p;
}

Result<std::vector<std::string>> read_api_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::error("cannot read the API key file '" + path + "'");
  std::vector<std::string> keys;
  for (std::string line; std::getline(in, line);) {
    const size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    const size_t e = line.find_last_not_of(" \t\r");
    keys.push_back(line.substr(b, e - b + 1));
  }
  if (keys.empty()) return Status::error("the API key file '" + path + "' holds no key");
  return keys;
}

int run_server(const ServerOptions& o) {
  Result<serving::EngineParams> params = engine_params(o);
  if (!params) return fail(params.status().message());
  std::signal(SIGPIPE, SIG_IGN);
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts: all inherit it

  raise_file_limit(rlim_t(o.max_connections) + 64);  // + the model, logs, the engine's own
  build_fingerprint();  // once, before any handler needs it
  ServerContext ctx(o);
  ctx.model_file = o.model.empty() ? Model::default_model_name() : std::filesystem::path(o.model).filename().string();
  ctx.model_name = o.alias.empty() ? ctx.model_file : o.alias;
  HttpServer http(ctx);
  Result<int> bound = http.bind(o.host, o.port);
  if (!bound) return fail("cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " + bound.status().message());
  const int port = *bound;
  std::fprintf(stderr, "tessera serve: listening on http://%s:%d\n", url_host(o.host).c_str(), port);
  std::fflush(stderr);

  std::atomic<bool> http_finished{false};
  std::thread http_thread([&] {
    http.listen();
    http_finished.store(true);
  });
  StopSignal stop;
  std::thread watcher([&] { watch_signals(ctx, http, stop); });

  const Status loaded = load(ctx, *params);
  if (!loaded) {
    stop.quit.store(true);
    watcher.join();
    ctx.state.store(ServerState::ShuttingDown);
    stop_http(http, http_thread, http_finished);
    return fail(loaded.message());
  }
  if (ctx.ready()) {
    std::fprintf(stderr, "tessera serve: model %s loaded, %d slots\n", ctx.model_name.c_str(), o.n_parallel);
  }
  stop.wait();
  watcher.join();
  ctx.engine->shutdown(/*cancel_running=*/true);
  stop_http(http, http_thread, http_finished);
  std::fprintf(stderr, "tessera serve: stopped\n");
  return 0;
}

}  // namespace tessera::server
