// Fuzzes the server's request decoding: byte 0 picks an endpoint, the rest is the JSON
// body. Generation endpoints (chat, completions, llama's completion) and embeddings run
// the body through the decoder (JSON -> the engine's request); tokenize, detokenize and
// apply-template run their whole handler. Only ApiError (a 4xx/5xx JSON answer) may
// leave; anything else would reach the client as a 500 and is a finding. The model is
// the built-in default (its tokenizer and chat template).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.h"
#include "server/endpoints.h"
#include "server/errors.h"
#include "server/http_message.h"
#include "server/request_decode.h"
#include "server/server_context.h"

using namespace tessera;
using namespace tessera::server;

namespace {

ServerContext& context() {
  static const ServerOptions options;
  static ServerContext* ctx = [] {
    auto* c = new ServerContext(options);
    ModelParams mp;
    mp.repack = false;
    Result<std::unique_ptr<Model>> m = Model::load_default(mp);
    if (!m || !(*m)->tokenizer()) fuzz::property_failed("the server harness needs the built-in model");
    c->model = std::move(*m);
    Result<ChatTemplate> t = ChatTemplate::for_model(*c->model);
    if (!t) fuzz::property_failed("no chat template");
    c->chat_template = *t;
    c->model_file = c->model_name = "default";
    c->state.store(ServerState::Ready);
    return c;
  }();
  return *ctx;
}

void run(uint8_t endpoint, std::string body) {
  ServerContext& ctx = context();
  HttpRequest req;
  HttpResponse res;
  req.body = std::move(body);
  switch (endpoint % 7) {
    case 0: decode_job(parse_body(req.body), Dialect::Chat, ctx); break;
    case 1: decode_job(parse_body(req.body), Dialect::Completion, ctx); break;
    case 2: decode_job(parse_body(req.body), Dialect::Llama, ctx); break;
    case 3: {
      const json j = parse_body(req.body);
      decode_embedding_job(Fields(j), ctx);
      break;
    }
    case 4: handle_tokenize(ctx, req, res); break;
    case 5: handle_detokenize(ctx, req, res); break;
    case 6: handle_apply_template(ctx, req, res); break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  context();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  try {
    run(data[0], std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  } catch (const ApiError& e) {
    if (e.status < 400 || std::string(e.what()).empty()) fuzz::property_failed("an ApiError without a message");
  }
  return 0;
}
