// `tessera parallel`: simulated clients decoded together with continuous batching.
// Every step is one batch holding, for each client slot, either the whole prompt of a
// request that just took the slot or the last token sampled for it; a finished request
// frees its slot (its sequence is removed from the cache) for the next one.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "tessera/batch.h"
#include "tessera/context.h"
#include "tessera/model.h"
#include "tessera/sampler.h"
#include "tessera/tokenizer.h"

namespace tessera::cli {
namespace {

constexpr const char* kBuiltinPrompts[] = {
    "Once upon a time",
    "The little dog ran",
    "Lily wanted to play with her friend",
    "One day, a big red ball",
    "Tom and his mom went to the park",
    "There was a small bird in a tree",
    "The sun was hot and the cat",
    "A girl named Sue found a box",
};

struct ParallelOptions {
  PlacementOptions placement;  // --layers, --mpi, --mpi-layers
  CacheTypeOptions cache_types;  // -ctk, -ctv
  RopeScalingParams rope;      // --rope-scaling, --rope-scale, --rope-freq-*, --yarn-*
  std::string model;
  std::string prompt_file;
  int clients = 4;
  int requests = 0;  // 0: as many as clients
  int n_predict = 32;
  int threads = default_threads();
  uint64_t seed = 0;
  float temperature = 0.0f;
  int64_t ctx = 0;
  bool json = false;
};

struct Request {
  std::string prompt;
  std::vector<TokenId> prompt_tokens;
  std::vector<TokenId> generated;
  int client = -1;
  int64_t n_shifts = 0;
};

/// A client: one sequence of the context and the request it is serving.
struct Slot {
  SeqId seq = 0;
  int64_t request = -1;     // -1: idle
  Pos next_pos = 0;         // where the pending token goes
  TokenId pending = -1;     // sampled, not yet decoded
  int64_t batch_index = -1; // the token whose logits this slot samples from next
  std::unique_ptr<SamplerChain> sampler;
};

struct Totals {
  int64_t steps = 0;
  int64_t prompt_tokens = 0;
  int64_t generated = 0;
  double seconds = 0;
};

Result<std::vector<std::string>> load_prompts(const std::string& file) {
  std::vector<std::string> prompts;
  if (file.empty()) return std::vector<std::string>(std::begin(kBuiltinPrompts), std::end(kBuiltinPrompts));
  std::ifstream in(file);
  if (!in) return Status::error("parallel: cannot read prompt file '" + file + "'");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) prompts.push_back(line);
  }
  if (prompts.empty()) return Status::error("parallel: prompt file '" + file + "' has no non-empty line");
  return prompts;
}

/// The continuous-batching loop over one context.
class Server {
 public:
  Server(const ParallelOptions& o, Context& ctx, const Tokenizer& tok, std::vector<Request>& requests,
         int64_t budget)
      : o_(o), ctx_(ctx), tok_(tok), requests_(requests), budget_(budget) {
    slots_.resize(size_t(o.clients));
    for (size_t i = 0; i < slots_.size(); ++i) slots_[i].seq = SeqId(i);
  }

  Result<Totals> run();

 private:
  Status fill_batch(Batch& batch);
  Status make_room(Slot& s);
  Status after_decode();
  void finish(Slot& s);

  const ParallelOptions& o_;
  Context& ctx_;
  const Tokenizer& tok_;
  std::vector<Request>& requests_;
  int64_t budget_;  // cells one sequence may use
  std::vector<Slot> slots_;
  size_t next_request_ = 0;
  Totals totals_;
};

// A slot whose sequence reached its budget keeps its prompt (at most half the budget)
// and drops half of the rest: Context::context_shift.
Status Server::make_room(Slot& s) {
  if (s.next_pos < budget_) return Status::ok();
  const Request& r = requests_[size_t(s.request)];
  const int64_t n_keep = std::min<int64_t>(int64_t(r.prompt_tokens.size()), budget_ / 2);
  Result<int64_t> dropped = ctx_.context_shift(s.seq, n_keep);
  if (!dropped) return dropped.status();
  s.next_pos -= Pos(*dropped);
  ++requests_[size_t(s.request)].n_shifts;
  return Status::ok();
}

Status Server::fill_batch(Batch& batch) {
  for (Slot& s : slots_) {
    if (s.request < 0 && next_request_ < requests_.size()) {
      s.request = int64_t(next_request_++);
      Request& r = requests_[size_t(s.request)];
      r.client = int(s.seq);
      if (int64_t(r.prompt_tokens.size()) >= budget_ || budget_ < 4) {
        return Status::error("parallel: prompt " + std::to_string(s.request) + " has " +
                             std::to_string(r.prompt_tokens.size()) + " tokens; a client's context holds " +
                             std::to_string(budget_) + " (raise --ctx-size)");
      }
      SamplerParams sp;
      sp.temperature = o_.temperature;
      sp.seed = o_.seed + uint64_t(s.request);  // per request: independent of scheduling
      Result<SamplerChain> chain = SamplerChain::create(sp, int32_t(ctx_.n_vocab()));
      if (!chain) return chain.status();
      s.sampler = std::make_unique<SamplerChain>(std::move(*chain));
      batch.add_sequence(r.prompt_tokens, 0, s.seq);
      s.next_pos = Pos(r.prompt_tokens.size());
      totals_.prompt_tokens += int64_t(r.prompt_tokens.size());
    } else if (s.request >= 0) {
      TESSERA_RETURN_IF_ERROR(make_room(s));
      batch.add(s.pending, s.next_pos++, s.seq, true);
    } else {
      continue;
    }
    s.batch_index = batch.size() - 1;
  }
  return Status::ok();
}

void Server::finish(Slot& s) {
  (void)ctx_.seq_rm(s.seq, -1, -1);  // the sequence id is valid: cannot fail
  s.request = -1;
  s.batch_index = -1;
}

Status Server::after_decode() {
  for (Slot& s : slots_) {
    if (s.request < 0) continue;
    Request& r = requests_[size_t(s.request)];
    Result<TokenId> sampled = s.sampler->sample(ctx_.logits_at(s.batch_index));
    if (!sampled) return sampled.status();
    const TokenId next = *sampled;
    TESSERA_RETURN_IF_ERROR(s.sampler->accept(next));
    if (tok_.is_eog(next)) {
      finish(s);
      continue;
    }
    r.generated.push_back(next);
    ++totals_.generated;
    if (int(r.generated.size()) >= o_.n_predict) {
      finish(s);
    } else {
      s.pending = next;
    }
  }
  return Status::ok();
}

Result<Totals> Server::run() {
  const auto t0 = std::chrono::steady_clock::now();
  Batch batch;
  for (;;) {
    batch.clear();
    TESSERA_RETURN_IF_ERROR(fill_batch(batch));
    if (batch.empty()) break;
    TESSERA_RETURN_IF_ERROR(ctx_.decode(batch));
    ++totals_.steps;
    TESSERA_RETURN_IF_ERROR(after_decode());
  }
  totals_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return totals_;
}

/// The text that the generated tokens add after the prompt: decoded as a continuation (a
/// stream), so the first token's leading space stays (Tokenizer::decode would strip it as
/// the start of a text).
std::string continuation_text(const Tokenizer& tok, const std::vector<TokenId>& generated) {
  StreamDecoder decoder(tok);
  std::string text;
  for (const TokenId id : generated) text += decoder.push(id);
  return text + decoder.flush();
}

void print_results(const ParallelOptions& o, const Tokenizer& tok, const std::vector<Request>& requests,
                   const Totals& t) {
  const double gen_tps = t.seconds > 0 ? double(t.generated) / t.seconds : 0.0;
  const double all_tps = t.seconds > 0 ? double(t.generated + t.prompt_tokens) / t.seconds : 0.0;
  if (o.json) {
    nlohmann::json out;
    out["model"] = model_file_name(o.model);
    out["clients"] = o.clients;
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < requests.size(); ++i) {
      const Request& r = requests[i];
      list.push_back({{"id", i}, {"client", r.client}, {"prompt", r.prompt}, {"n_prompt", r.prompt_tokens.size()},
                      {"tokens", r.generated}, {"text", continuation_text(tok, r.generated)}, {"context_shifts", r.n_shifts}});
    }
    out["requests"] = list;
    out["steps"] = t.steps;
    out["prompt_tokens"] = t.prompt_tokens;
    out["generated_tokens"] = t.generated;
    out["seconds"] = t.seconds;
    out["generated_per_second"] = gen_tps;
    out["tokens_per_second"] = all_tps;
    // Generated text may hold partial UTF-8 characters: replaced by U+FFFD in JSON.
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return;
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    std::printf("request %zu (client %d): %zu prompt tokens, %zu generated\n  prompt: %s\n  output: %s\n", i,
                r.client, r.prompt_tokens.size(), r.generated.size(), r.prompt.c_str(),
                continuation_text(tok, r.generated).c_str());
  }
  std::printf("%d clients, %zu requests: %lld prompt + %lld generated tokens in %lld steps, %.3f s: "
              "%.1f generated tok/s (%.1f tok/s with prompts)\n",
              o.clients, requests.size(), static_cast<long long>(t.prompt_tokens),
              static_cast<long long>(t.generated), static_cast<long long>(t.steps), t.seconds, gen_tps, all_tps);
}

int run_parallel(const ParallelOptions& o) {
  Result<std::vector<std::string>> prompts = load_prompts(o.prompt_file);
  if (!prompts) return fail(prompts.status().message());
  ModelParams mp;
  apply_placement(o.placement, mp);
  Result<std::unique_ptr<Model>> model = load_model_or_default(o.model, mp);
  if (!model) return fail(model.status().message());
  const Tokenizer* tok = (*model)->tokenizer();
  if (!tok) return fail(model_file_name(o.model) + ": the model has no usable tokenizer, so it cannot take text");

  const int n_requests = o.requests > 0 ? o.requests : o.clients;
  std::vector<Request> requests(static_cast<size_t>(n_requests));
  size_t longest = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].prompt = (*prompts)[i % prompts->size()];
    requests[i].prompt_tokens = tok->encode(requests[i].prompt, tok->add_bos_token());
    if (requests[i].prompt_tokens.empty()) return fail("parallel: prompt " + std::to_string(i) + " has no tokens");
    longest = std::max(longest, requests[i].prompt_tokens.size());
  }
  // Each client may use its share of the cache, and no more than the training context
  // (a longer generation shifts its context).
  const int64_t n_ctx_train = (*model)->info().n_ctx_train;
  const int64_t per_client = std::min<int64_t>(n_ctx_train, int64_t(longest) + o.n_predict + 1);
  ContextParams cp;
  cp.n_threads = o.threads;
  cp.n_seq_max = o.clients;
  cp.rope = o.rope;
  cp.n_ctx = o.ctx > 0 ? o.ctx : per_client * o.clients;
  const int64_t budget = std::min(per_client, cp.n_ctx / o.clients);
  if (Status st = apply_cache_types(o.cache_types, cp.type_k, cp.type_v); !st) return usage_error("parallel: " + st.message());
  Result<std::unique_ptr<Context>> ctx = Context::create(**model, cp);
  if (!ctx) return fail(ctx.status().message());

  Server server(o, **ctx, *tok, requests, budget);
  Result<Totals> totals = server.run();
  if (!totals) return fail(totals.status().message());
  print_results(o, *tok, requests, *totals);
  return 0;
}

}  // namespace

Command add_parallel(CLI::App& app) {
  auto o = std::make_shared<ParallelOptions>();
  CLI::App* cmd = app.add_subcommand(
      "parallel", "Serve simulated clients together with continuous batching (one batch per step "
                  "holds the next token of every active client) and report the throughput");
  cmd->add_option("-m,--model", o->model, model_option_help())->check(CLI::ExistingFile);
  add_placement_options(cmd, o->placement);
  add_cache_type_options(cmd, o->cache_types);
  add_rope_options(cmd, o->rope);
  cmd->add_option("--clients", o->clients, "clients decoded together (sequences of one context)")
      ->check(NumberRange(1, 64));
  cmd->add_option("--requests", o->requests,
                  "requests to serve in all (default: one per client); a finished request's "
                  "slot takes the next one")
      ->check(NumberRange(1, 1 << 20));
  cmd->add_option("-f,--file", o->prompt_file,
                  "prompts, one per line, used in turn (default: a built-in list of 8)")
      ->check(CLI::ExistingFile);
  cmd->add_option("-n,--n-predict", o->n_predict, "tokens to generate per request (stops early at end of text)")
      ->check(NumberRange(1, 1 << 20));
  cmd->add_option("-t,--threads", o->threads, "CPU threads")->check(NumberRange(1, 512));
  cmd->add_option("-c,--ctx-size", o->ctx,
                  "cache cells for all clients (default: clients x min(training context, "
                  "longest prompt + n-predict + 1)); a client reaching its share shifts its context")
      ->check(NumberRange(int64_t(1), int64_t(1) << 24));
  cmd->add_option("--temp", o->temperature, "sampling temperature; 0 (default) = greedy")
      ->check(NumberRange(0.0, 100.0));
  cmd->add_option("--seed", o->seed, "random seed (request i samples with seed + i)");
  cmd->add_flag("--json", o->json, "print one JSON object instead of text");
  return {cmd, [o] { return run_parallel(*o); }};
}

}  // namespace tessera::cli
