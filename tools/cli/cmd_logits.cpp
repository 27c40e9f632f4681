// `tessera logits`: logits after a prompt and a greedy continuation with the top-5
// candidates of each step, as one JSON object in the schema of the golden files.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "tessera/context.h"
#include "tessera/model.h"
#include "tessera/sampler.h"
#include "tessera/tokenizer.h"

namespace tessera::cli {
namespace {

struct LogitsOptions {
  PlacementOptions placement;  // --layers, --mpi, --mpi-layers
  CacheTypeOptions cache_types;  // -ctk, -ctv
  RopeScalingParams rope;      // --rope-scaling, --rope-scale, --rope-freq-*, --yarn-*
  std::string model;
  std::string prompt_ids;
  std::string prompt;
  int n_predict = 16;
  int threads = default_threads();
  int64_t batch = 512;
  bool kv_f32 = false;
};

Result<std::vector<TokenId>> parse_ids(const std::string& text) {
  std::vector<TokenId> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 0 || v > INT32_MAX) {
      return Status::error("--prompt-ids: '" + item + "' is not a token id");
    }
    ids.push_back(TokenId(v));
  }
  if (ids.empty()) return Status::error("--prompt-ids: no ids given");
  return ids;
}

nlohmann::json top5(std::span<const float> logits) {
  std::vector<TokenId> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = TokenId(i);
  const size_t k = std::min<size_t>(5, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(k), ids.end(), [&](TokenId a, TokenId b) {
    return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
  });
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < k; ++i) out.push_back({ids[i], logits[size_t(ids[i])]});
  return out;
}

int run_logits(const LogitsOptions& o) {
  ModelParams mp;
  apply_placement(o.placement, mp);
  Result<std::unique_ptr<Model>> model = load_model_or_default(o.model, mp);
  if (!model) return fail(model.status().message());
  std::vector<TokenId> prompt;
  if (!o.prompt_ids.empty()) {
    Result<std::vector<TokenId>> ids = parse_ids(o.prompt_ids);
    if (!ids) return fail(ids.status().message());
    prompt = std::move(*ids);
  } else {
    const Tokenizer* tok = (*model)->tokenizer();
    if (!tok) return fail(model_file_name(o.model) + ": the model has no tokenizer; use --prompt-ids");
    prompt = tok->encode(o.prompt, tok->add_bos_token());
  }
  ContextParams cp;
  cp.n_threads = o.threads;
  cp.n_batch = o.batch;
  if (Status st = apply_cache_types(o.cache_types, cp.type_k, cp.type_v); !st) return usage_error("logits: " + st.message());
  if (o.kv_f32) cp.type_k = cp.type_v = DType::F32;
  cp.rope = o.rope;
  // Exactly what the prompt and the continuation need, even past the training context
  // (as the reference engine allows; quality beyond it is the model's business).
  cp.n_ctx = int64_t(prompt.size()) + o.n_predict;
  Result<std::unique_ptr<Context>> ctx = Context::create(**model, cp);
  if (!ctx) return fail(ctx.status().message());
  if (Status s = (*ctx)->decode(prompt); !s) return fail(s.message());

  const std::span<const float> last = (*ctx)->logits();
  nlohmann::json out;
  out["model"] = model_file_name(o.model);
  out["n_vocab"] = (*ctx)->n_vocab();
  out["prompt_ids"] = prompt;
  out["logits_last_prompt"] = std::vector<float>(last.begin(), last.end());
  nlohmann::json greedy = nlohmann::json::array();
  nlohmann::json steps = nlohmann::json::array();
  for (int i = 0; i < o.n_predict; ++i) {
    const std::span<const float> logits = (*ctx)->logits();
    const TokenId next = argmax(logits);
    greedy.push_back(next);
    steps.push_back(top5(logits));
    if (i + 1 == o.n_predict) break;
    const TokenId one[] = {next};
    if (Status s = (*ctx)->decode(one); !s) return fail(s.message());
  }
  out["greedy"] = greedy;
  out["top5_per_step"] = steps;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

Command add_logits(CLI::App& app) {
  auto o = std::make_shared<LogitsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "logits", "Print the logits after a prompt and a greedy continuation as JSON "
                "(the schema of the golden reference files)");
  cmd->add_option("-m,--model", o->model, model_option_help())->check(CLI::ExistingFile);
  add_placement_options(cmd, o->placement);
  add_cache_type_options(cmd, o->cache_types);
  add_rope_options(cmd, o->rope);
  auto* ids = cmd->add_option("--prompt-ids", o->prompt_ids, "prompt as comma-separated token ids (BOS included)");
  auto* text = cmd->add_option("-p,--prompt", o->prompt, "prompt text (tokenized with the model's tokenizer, BOS added)");
  ids->excludes(text);
  cmd->add_option("-n,--n-predict", o->n_predict, "greedy tokens to generate")->check(NumberRange(1, 1 << 20));
  cmd->add_option("-t,--threads", o->threads, "CPU threads")->check(NumberRange(1, 512));
  cmd->add_option("-b,--batch", o->batch, "prompt tokens per forward pass")->check(NumberRange(1, 1 << 20));
  cmd->add_flag("--kv-f32", o->kv_f32, "keep the KV cache in F32 (the same as -ctk f32 -ctv f32)");
  return {cmd, [o, ids, text] {
            if (ids->count() == 0 && text->count() == 0) {
              return fail("logits: give --prompt-ids or --prompt");
            }
            return run_logits(*o);
          }};
}

}  // namespace tessera::cli
