#include "server/server_context.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "server/errors.h"
#include "server/json_fields.h"
#include "server/request_log.h"

namespace tessera::server {

RequestLog& request_log() {
  thread_local RequestLog log;
  return log;
}

void ServerContext::require_ready() const {
  switch (state.load(std::memory_order_acquire)) {
    case ServerState::Ready: return;
    case ServerState::Loading: throw unavailable("the model is still loading", "loading_model");
    case ServerState::ShuttingDown: throw unavailable("the server is shutting down", "shutting_down");
  }
}

void ServerContext::check_model(const Fields& body) const {
  const std::optional<std::string> name = body.string("model");  // a non-string is a 400 either way
  if (options.strict_model && name && !name->empty()) check_model_name(*name);
}

void ServerContext::check_model_name(const std::string& name) const {
  if (name == model_name || name == model_file || name == options.model) return;
  ApiError e = not_found("the model '" + name + "' does not exist: this server serves '" + model_name + "'",
                         "model_not_found");
  e.param = "model";
  throw e;
}

int64_t ServerContext::seq_ctx() const {
  if (engine) return engine->params().n_ctx_per_seq;
  return std::min<int64_t>(model->info().n_ctx_train, 4096);
}

namespace {

std::string compute_fingerprint() {
  const std::string base = std::string("tessera-") + kTesseraVersion;
  std::ifstream exe("/proc/self/exe", std::ios::binary);
  if (!exe) return base;
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  std::vector<char> buf(1 << 16);
  while (exe.read(buf.data(), std::streamsize(buf.size())) || exe.gcount() > 0) {
    for (std::streamsize i = 0; i < exe.gcount(); ++i) h = (h ^ uint8_t(buf[size_t(i)])) * 0x100000001b3ull;
  }
  char hex[20];
  std::snprintf(hex, sizeof hex, "%012llx", static_cast<unsigned long long>(h & 0xffffffffffffull));
  return base + "-" + hex;
}

}  // namespace

const std::string& build_fingerprint() {
  static const std::string fp = compute_fingerprint();
  return fp;
}

std::string ServerContext::make_id(const char* prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%016llx%06llx", prefix, static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(next_id.fetch_add(1) & 0xffffff));
  return buf;
}

}  // namespace tessera::server
