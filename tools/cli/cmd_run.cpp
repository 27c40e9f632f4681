// `tessera run`: generate text from a prompt, printed as it is produced; the sampler
// chain and an optional grammar (GBNF text, file, or the built-in JSON grammar). Without
// a prompt on a terminal it starts a chat, as llama-cli and ollama do.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cctype>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "chat_cli.h"
#include "commands.h"
#include "tessera/context.h"
#include "tessera/grammar.h"
#include "tessera/log.h"
#include "tessera/model.h"
#include "tessera/sampler.h"
#include "tessera/tokenizer.h"

namespace tessera::cli {
namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> lora;  // --lora FILE[:SCALE]
  PlacementOptions placement;     // --layers, --mpi, --mpi-layers
  CacheTypeOptions cache_types;  // -ctk, -ctv
  RopeScalingParams rope;         // --rope-scaling, --rope-scale, --rope-freq-*, --yarn-*
  std::string prompt;
  std::string prompt_file;  // -f: the prompt from a file (its last newline dropped)
  bool escape = false;      // -e: \n, \t, \\, \", \', \xNN in the prompt
  bool display_prompt = true;
  std::vector<std::string> reverse_prompts;  // -r: stop once the output ends with one
  bool conversation = false;                 // -i / -cnv: a chat, -p its system message
  bool mmap = true;
  std::string flash_attn;  // -fa [on|off|auto]: accepted; attention is always fused here
  int n_predict = 128;     // -1: until end of text or a full context; -2: a full context
  int threads = default_threads();
  int64_t ctx = 0;
  int64_t batch = 512;
  int64_t ubatch = 0;
  int64_t seed = -1;  // -1: random, printed
  SamplerParams sampling;
  std::vector<std::string> logit_bias;  // "ID+BIAS" / "ID-BIAS"
  std::string grammar_text;
  bool has_grammar_text = false;  // --grammar given (even empty: an error then)
  std::string grammar_file;
  bool json = false;
  bool print_ids = false;
  int64_t keep = 1;             // context shift: positions kept at the start (-1: the prompt)
  bool context_shift = true;    // when the context fills: shift (else stop)
  bool ignore_eos = false;      // end-of-generation tokens get a -inf logit bias
  SpeculativeOptions speculative;  // -md / --lookup and the draft sizes
};

using Clock = std::chrono::steady_clock;

/// Whether one of `prompts` (-r) appears in `text` where its last `added` bytes could
/// have completed it.
bool reverse_prompt_came(const std::string& text, size_t added, const std::vector<std::string>& prompts) {
  for (const std::string& r : prompts) {
    const size_t from = text.size() > added + r.size() ? text.size() - added - r.size() : 0;
    if (!r.empty() && text.find(r, from) != std::string::npos) return true;
  }
  return false;
}

/// Everything on stdin (a prompt piped in, as `echo text | tessera run`).
std::string read_stdin() {
  std::ostringstream text;
  text << std::cin.rdbuf();
  return text.str();
}
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// The grammar the options ask for, or nullptr for none.
Result<std::shared_ptr<const Grammar>> load_grammar(const RunOptions& o) {
  if (o.json) return Grammar::parse(Grammar::builtin("json"), "json.gbnf");
  if (o.has_grammar_text) return Grammar::parse(o.grammar_text, "--grammar");
  if (o.grammar_file.empty()) return std::shared_ptr<const Grammar>();
  std::ifstream in(o.grammar_file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return Status::error(o.grammar_file + ": cannot read the grammar file");
  return Grammar::parse(text.str(), o.grammar_file);
}

/// The prompt with llama.cpp's escapes (-e) replaced: \n \r \t \\ \" \' \? \a \b \f \v
/// \0 and \xNN; any other backslash stays as it is.
std::string process_escapes(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '0': out += '\0'; break;
      case '\\': case '"': case '\'': case '?': out += c; break;
      case 'x':
        if (i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
          out += char(std::stoi(s.substr(i + 1, 2), nullptr, 16));
          i += 2;
          break;
        }
        [[fallthrough]];
      default:
        out += '\\';
        out += c;
    }
  }
  return out;
}

/// The sampler parameters of the options, logit biases included.
Result<SamplerParams> sampler_params(const RunOptions& o) {
  SamplerParams params = o.sampling;
  params.seed = resolve_seed(o.seed);
  for (const std::string& text : o.logit_bias) {
    Result<LogitBias> bias = parse_logit_bias(text);
    if (!bias) return bias.status();
    params.logit_bias.push_back(*bias);
  }
  return params;
}

int64_t context_size(const RunOptions& o, const Model& model, size_t n_prompt) {
  if (o.ctx != 0) return o.ctx;
  // The model's context (at most 4096), grown to hold this prompt and continuation.
  const int64_t needed = int64_t(n_prompt) + std::max(o.n_predict, 0);
  if (needed > model.info().n_ctx_train && !o.rope.overrides()) {
    std::fprintf(stderr,
                 "tessera: warning: %lld tokens exceed the model's training context of %lld\n",
                 static_cast<long long>(needed), static_cast<long long>(model.info().n_ctx_train));
  }
  return std::max(std::min<int64_t>(model.info().n_ctx_train, 4096), needed);
}

/// Speculative decoding in `run`: the draft model's context (if any), the drafter, and
/// what the summary reports.
struct Speculation {
  std::unique_ptr<Model> draft_model;
  std::unique_ptr<Context> draft_ctx;
  std::unique_ptr<Drafter> drafter;
  std::mt19937_64 rng;
  SpeculativeStats stats;
};

/// The drafter -md or --lookup asks for, with a draft context as large as the target's.
Result<std::unique_ptr<Speculation>> make_speculation(const RunOptions& o, const Model& target, const Context& c,
                                                      const SamplerParams& sampling) {
  auto sp = std::make_unique<Speculation>();
  sp->rng.seed(sampling.seed ^ kSpeculativeSeedMix);
  if (o.speculative.lookup) {
    sp->drafter = make_lookup_drafter();
    return sp;
  }
  Result<std::unique_ptr<Model>> draft = load_draft_model(o.speculative, target, o.mmap);
  if (!draft) return draft.status();
  sp->draft_model = std::move(*draft);
  ContextParams dp;
  dp.n_threads = o.threads;
  dp.n_ctx = c.n_ctx();
  dp.n_batch = o.batch;
  Result<std::unique_ptr<Context>> dctx = Context::create(*sp->draft_model, dp);
  if (!dctx) return Status::error(o.speculative.model_draft + ": " + dctx.status().message());
  sp->draft_ctx = std::move(*dctx);
  Result<std::unique_ptr<Drafter>> drafter =
      make_model_drafter(*sp->draft_ctx, 0, c.n_ctx(), o.speculative.params,
                         sampling.temperature > 0 ? &sampling : nullptr, sampling.seed + 1);
  if (!drafter) return drafter.status();
  sp->drafter = std::move(*drafter);
  return sp;
}

int run_generate(const RunOptions& o) {
  // The flags and the grammar first: their errors should not wait for the model.
  Result<SamplerParams> params = sampler_params(o);
  if (!params) return fail(params.status().message());
  Result<std::shared_ptr<const Grammar>> grammar = load_grammar(o);
  if (!grammar) return fail(grammar.status().message());

  Result<ModelParams> mp = model_params(o.lora);
  if (mp) apply_placement(o.placement, *mp);
  if (!mp) return fail(mp.status().message());
  Result<std::unique_ptr<Model>> model = load_model_or_default(o.model, *mp, o.mmap);
  if (!model) return fail(model.status().message());
  const Tokenizer* tok = (*model)->tokenizer();
  if (!tok) return fail(o.model + ": the model has no usable tokenizer, so it cannot take text");
  const std::string text = o.escape ? process_escapes(o.prompt) : o.prompt;
  const std::vector<TokenId> prompt = tok->encode(text, tok->add_bos_token());
  if (prompt.empty()) return fail("run: the prompt is empty and the model adds no BOS token");

  ContextParams cp;
  cp.n_threads = o.threads;
  cp.n_ctx = context_size(o, **model, prompt.size());
  cp.n_batch = o.batch;
  cp.n_ubatch = o.ubatch;
  if (Status st = apply_cache_types(o.cache_types, cp.type_k, cp.type_v); !st) return usage_error("run: " + st.message());
  cp.rope = o.rope;
  Result<std::unique_ptr<Context>> ctx = Context::create(**model, cp);
  if (!ctx) return fail(ctx.status().message());
  Context& c = **ctx;
  if (int64_t(prompt.size()) > c.n_ctx()) {
    return fail("run: the prompt has " + std::to_string(prompt.size()) +
                " tokens, more than the context of " + std::to_string(c.n_ctx()));
  }
  if (o.ignore_eos) {
    for (TokenId id = 0; id < TokenId(c.n_vocab()); ++id) {
      if (tok->is_eog(id)) params->logit_bias.push_back({id, -INFINITY});
    }
  }
  Result<SamplerChain> sampler =
      SamplerChain::create(*params, static_cast<int32_t>(c.n_vocab()),
                           *grammar ? make_grammar_step(*grammar, *tok) : nullptr);
  if (!sampler) return fail(sampler.status().message());
  sampler->accept_prompt(prompt);
  std::unique_ptr<Speculation> spec;
  if (o.speculative.enabled()) {
    Result<std::unique_ptr<Speculation>> made = make_speculation(o, **model, c, *params);
    if (!made) return fail(made.status().message());
    spec = std::move(*made);
  }
  report_seed(o.seed, params->seed, params->temperature > 0);

  if (!o.print_ids && o.display_prompt) std::printf("%s", text.c_str());
  std::fflush(stdout);
  const auto t_prompt = Clock::now();
  if (Status s = c.decode(prompt); !s) return fail(s.message());
  const double prompt_s = seconds_since(t_prompt);

  StreamDecoder stream(*tok);  // holds back characters split across tokens
  const auto t_gen = Clock::now();
  int generated = 0;
  const int64_t n_keep = o.keep < 0 ? int64_t(prompt.size()) : std::min<int64_t>(o.keep, int64_t(prompt.size()));
  // -n -1: until end of text (the context shifts as usual); -n -2: until the context is full.
  const auto more = [&] { return (o.n_predict < 0 || generated < o.n_predict) && !sampler->done(); };
  std::string output;  // what was printed, for -r
  // Speculative steps produce several tokens at once, already accepted by the sampler:
  // they wait here; all but the last are in the cache already.
  std::deque<TokenId> ready;
  bool ends_after_ready = false;  // a step ended on an end-of-generation token
  const auto is_eog = [tok](TokenId t) { return tok->is_eog(t); };
  int64_t step_tokens = 0;        // tokens the speculative steps produced
  while (!ready.empty() || more()) {  // a step's tokens are printed even when the grammar completed
    Result<TokenId> next = TokenId(-1);
    if (!ready.empty()) {
      next = ready.front();
      ready.pop_front();
    } else {
      next = sampler->sample(c.logits());
      if (!next) return fail(next.status().message());
      if (tok->is_eog(*next)) break;
      if (Status s = sampler->accept(*next); !s) return fail(s.message());
    }
    ++generated;
    if (o.print_ids) {
      std::printf("%s%d", generated > 1 ? " " : "", *next);
    } else {
      const std::string piece = stream.push(*next);
      std::printf("%s", piece.c_str());
      output += piece;
      if (reverse_prompt_came(output, piece.size(), o.reverse_prompts)) break;  // printed, as llama-cli does
    }
    std::fflush(stdout);
    const TokenId one[] = {*next};
    if (ready.empty() && ends_after_ready) break;
    if (more() && ready.empty()) {
      if (c.n_past() >= c.n_ctx()) {  // full: shift (keep n_keep, drop half of the rest) or stop
        if (o.n_predict == -2) break;
        if (!o.context_shift) {
          std::fprintf(stderr, "\ntessera: context of %lld tokens full; stopping (--no-context-shift)\n",
                       static_cast<long long>(c.n_ctx()));
          break;
        }
        Result<int64_t> removed = c.context_shift(0, n_keep);
        if (!removed) return fail(removed.status().message());
        log(LogLevel::Info, "context shift: kept %lld, dropped %lld positions",
            static_cast<long long>(n_keep), static_cast<long long>(*removed));
      }
      if (!spec) {
        if (Status s = c.decode(one); !s) return fail(s.message());
        continue;
      }
      // Room for the drafted tokens: the context, and -n (the step yields one more).
      int64_t max_draft = c.n_ctx() - c.n_past() - 1;
      if (o.n_predict >= 0) max_draft = std::min<int64_t>(max_draft, o.n_predict - generated - 1);
      Result<Verdict> v = speculative_step(c, 0, *next, spec->drafter.get(), o.speculative.params,
                                           int(std::max<int64_t>(max_draft, 0)), *sampler, spec->rng, is_eog,
                                           spec->stats);
      if (!v) return fail(v.status().message());
      step_tokens += int64_t(v->tokens.size()) - (v->stopped ? 1 : 0);
      ready.assign(v->tokens.begin(), v->tokens.end() - (v->stopped ? 1 : 0));
      ends_after_ready = v->stopped;
      if (ready.empty() && ends_after_ready) break;
    }
  }
  const double gen_s = seconds_since(t_gen);
  if (!o.print_ids) std::printf("%s", stream.flush().c_str());
  std::printf("\n");
  std::fflush(stdout);
  std::fprintf(stderr,
               "tessera: prompt %zu tokens in %.3f s (%.1f tok/s); generated %d tokens in %.3f s "
               "(%.1f tok/s)\n",
               prompt.size(), prompt_s, double(prompt.size()) / prompt_s, generated, gen_s,
               gen_s > 0 ? generated / gen_s : 0.0);
  if (spec) {
    // Tokens per target pass: the speed-up over plain decoding if a pass cost the same
    // with the draft as without it and drafting were free (the measured one is lower).
    const SpeculativeStats& st = spec->stats;
    std::fprintf(stderr,
                 "tessera: speculative (%s): %lld steps, %lld tokens drafted, %lld accepted (%.1f %%), "
                 "%.2f tokens per target pass\n",
                 o.speculative.lookup ? "lookup" : "draft model", static_cast<long long>(st.n_steps),
                 static_cast<long long>(st.n_drafted), static_cast<long long>(st.n_accepted),
                 100.0 * st.acceptance(), st.n_steps > 0 ? double(step_tokens) / double(st.n_steps) : 0.0);
  }
  return 0;
}

/// `run` without a prompt, or with -i / -cnv: a chat with the same model, context and
/// sampler chain (-p, if given, is its system message, as llama-cli's -cnv takes it).
int run_chat_instead(const RunOptions& o, bool n_predict_given) {
  Result<SamplerParams> params = sampler_params(o);
  if (!params) return fail(params.status().message());
  ChatOptions chat;
  chat.system = o.escape ? process_escapes(o.prompt) : o.prompt;
  chat.model = o.model;
  chat.lora = o.lora;
  chat.placement = o.placement;
  chat.cache_types = o.cache_types;
  chat.n_predict = n_predict_given ? std::max(o.n_predict, -1) : -1;
  chat.n_predict_given = n_predict_given;
  chat.threads = o.threads;
  chat.ctx = o.ctx;
  chat.rope = o.rope;
  chat.sampling = *params;
  report_seed(o.seed, params->seed, params->temperature > 0);
  std::fputs(o.conversation ? "tessera run: a chat starts (-i / -cnv; -p is its system message)\n"
                            : "tessera run: no -p, so a chat starts (tessera chat takes the same model)\n",
             stderr);
  return run_chat(chat);
}

void add_sampling_options(CLI::App* cmd, RunOptions& o) {
  SamplerParams& s = o.sampling;
  const auto range = [](double lo, double hi) { return NumberRange(lo, hi); };
  cmd->add_option("--temp", s.temperature, "temperature; 0 = greedy")
      ->check(range(0, 100))
      ->capture_default_str();
  cmd->add_option("--top-k", s.top_k, "keep the k most likely tokens (0 = all)")
      ->check(NumberRange(0, 1 << 24))
      ->capture_default_str();
  cmd->add_option("--top-p", s.top_p,
                  "keep the smallest set of tokens with this probability mass (1 = off)")
      ->check(range(0, 1))
      ->capture_default_str();
  cmd->add_option("--min-p", s.min_p,
                  "drop tokens less likely than this times the most likely one (0 = off)")
      ->check(range(0, 1))
      ->capture_default_str();
  cmd->add_option("--typical", s.typical_p, "locally typical sampling with this mass (1 = off)")
      ->check(range(0, 1))
      ->capture_default_str();
  cmd->add_option("--tfs", s.tfs_z, "tail-free sampling with this z (1 = off)")
      ->check(range(0, 1))
      ->capture_default_str();
  cmd->add_option(
         "--repeat-penalty", s.repeat_penalty,
         "divide positive logits of recent tokens by this, multiply negative ones (1 = off)")
      ->check(range(0.01, 100))
      ->capture_default_str();
  cmd->add_option("--repeat-last-n", s.repeat_last_n,
                  "recent tokens (prompt included) the penalties see (0 = none, -1 = all)")
      ->check(NumberRange(-1, 1 << 24))
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", s.frequency_penalty,
                  "subtract this times its count from a recent token's logit")
      ->check(range(-100, 100))
      ->capture_default_str();
  cmd->add_option("--presence-penalty", s.presence_penalty,
                  "subtract this from the logit of every recent token")
      ->check(range(-100, 100))
      ->capture_default_str();
  cmd->add_option("--mirostat", s.mirostat,
                  "mirostat version: 0 = off, 1 or 2 (replaces top-k/tfs/typical/top-p/min-p)")
      ->check(CLI::IsMember({0, 1, 2}))
      ->capture_default_str();
  cmd->add_option("--mirostat-lr", s.mirostat_eta, "mirostat learning rate (eta)")
      ->check(range(0, 10))
      ->capture_default_str();
  cmd->add_option("--mirostat-ent", s.mirostat_tau, "mirostat target entropy (tau, bits per token)")
      ->check(range(0, 100))
      ->capture_default_str();
  cmd->add_option(
         "--logit-bias", o.logit_bias,
         "add BIAS to a token's logit: ID+BIAS or ID-BIAS (2-inf forbids token 2); repeatable")
      ->take_all()
      ->expected(1);
  add_seed_option(cmd, o.seed);
}

/// llama-cli's flags that the prompt and output take (README, "llama.cpp's flags").
void add_llama_cli_options(CLI::App* cmd, RunOptions& o) {
  cmd->add_flag("-e,--escape,!--no-escape", o.escape,
                "process escapes in the prompt: \\n \\t \\\\ \\\" \\' \\xNN ... (off by default: the prompt is "
                "taken as written)");
  cmd->add_flag("!--no-display-prompt", o.display_prompt, "print only the generated text, not the prompt");
  cmd->add_option("-r,--reverse-prompt", o.reverse_prompts,
                  "stop once the output contains this text (printed); repeatable")
      ->take_all()
      ->expected(1);
  cmd->add_flag("-i,--interactive,--conversation", o.conversation,
                "start a chat (also -cnv), with -p as its system message");
  cmd->add_option("--ubatch-size", o.ubatch, "-ub N: tokens per forward pass within a batch (0: the batch)")
      ->check(NumberRange(int64_t(0), int64_t(1) << 20));
  cmd->add_option("--flash-attn", o.flash_attn,
                  "-fa [on|off|auto]: accepted for llama.cpp's scripts; tessera's attention is always one fused "
                  "kernel")
      ->expected(0, 1)
      ->check(CLI::IsMember({"on", "off", "auto", "1", "0"}));
  cmd->add_flag("!--mmap,!--no-mmap", o.mmap, "read the model file into memory instead of mapping it");
}

}  // namespace

Command add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd =
      app.add_subcommand("run",
                         "Generate text from a prompt, printed as it is produced. Without -p on a "
                         "terminal: a chat, as `tessera chat` (its commands, /help)");
  cmd->add_option("-m,--model", o->model, model_option_help())->check(CLI::ExistingFile);
  add_lora_option(cmd, o->lora);
  add_placement_options(cmd, o->placement);
  add_cache_type_options(cmd, o->cache_types);
  add_rope_options(cmd, o->rope);
  CLI::Option* prompt = cmd->add_option(
      "-p,--prompt", o->prompt,
      "prompt text; else -f, else what stdin holds when it is not a terminal; on a terminal without "
      "a prompt a chat starts, as `tessera chat`");
  CLI::Option* prompt_file = cmd->add_option("-f,--file", o->prompt_file,
                                             "read the prompt from FILE (its last newline dropped, as llama-cli)")
                                 ->check(CLI::ExistingFile)
                                 ->excludes(prompt);
  CLI::Option* n_predict =
      cmd->add_option("-n,--n-predict", o->n_predict,
                      "tokens to generate (stops early at end of text or when the grammar is "
                      "complete; -1: until end of text; -2: until the context is full; in a chat: most "
                      "tokens per reply)")
          ->check(NumberRange(-2, 1 << 24));
  cmd->add_option("-t,--threads", o->threads, "CPU threads")->check(NumberRange(1, 512));
  cmd->add_option(
         "-c,--ctx-size", o->ctx,
         "context size in tokens (0: the model's, at most 4096, grown to fit prompt + n-predict)")
      ->check(NumberRange(int64_t(0), int64_t(1) << 24));
  cmd->add_option("-b,--batch", o->batch, "prompt tokens per forward pass")
      ->check(NumberRange(1, 1 << 20));
  add_sampling_options(cmd, *o);
  add_llama_cli_options(cmd, *o);
  CLI::Option* text = cmd->add_option("--grammar", o->grammar_text,
                                      "constrain the output to this GBNF grammar (text)");
  CLI::Option* file = cmd->add_option("--grammar-file", o->grammar_file,
                                      "constrain the output to the GBNF grammar in FILE")
                          ->check(CLI::ExistingFile);
  CLI::Option* json = cmd->add_flag(
      "--json", o->json, "constrain the output to JSON (the built-in grammars/json.gbnf)");
  text->excludes(file)->excludes(json);
  file->excludes(json);
  cmd->add_flag("--ids", o->print_ids, "print the generated token ids instead of text");
  cmd->add_flag("--ignore-eos", o->ignore_eos,
                "never end at an end-of-generation token (they get a -inf logit bias)");
  cmd->add_option("--keep", o->keep,
                  "when the context fills: positions kept at its start, the rest halved and "
                  "shifted back (-1: the whole prompt)")
      ->check(NumberRange(int64_t(-1), int64_t(1) << 24));
  cmd->add_flag("--context-shift,!--no-context-shift", o->context_shift,
                "when the context fills, shift it (default) or stop generating");
  add_speculative_options(cmd, o->speculative);
  // The prompt: -p, -f, or stdin when it is not a terminal (empty: a usage error). On a
  // terminal without one, or with -i / -cnv, a chat starts; what only a generation from a
  // prompt can do is refused there.
  cmd->callback([prompt, prompt_file, text, file, json, o] {
    if (prompt_file->count() > 0) {
      std::ifstream in(o->prompt_file, std::ios::binary);
      std::ostringstream content;
      content << in.rdbuf();
      o->prompt = content.str();
      if (o->prompt.ends_with('\n')) o->prompt.pop_back();
    } else if (prompt->count() == 0 && !o->conversation && isatty(STDIN_FILENO) == 0) {
      o->prompt = read_stdin();
      if (o->prompt.empty()) throw CLI::RequiredError("--prompt (or -f FILE, or a prompt on stdin)");
    }
    const bool chat = o->conversation || (prompt->count() == 0 && prompt_file->count() == 0 && o->prompt.empty());
    if (chat && (text->count() > 0 || file->count() > 0 || json->count() > 0 || o->print_ids ||
                 o->speculative.enabled())) {
      throw CLI::ValidationError(
          "--grammar, --grammar-file, --json, --ids, -md and --lookup need a prompt (without one, on a "
          "terminal, or with -i / -cnv, run starts a chat)");
    }
  });
  return {cmd, [o, text, prompt, prompt_file, n_predict] {
            const bool given = prompt->count() > 0 || prompt_file->count() > 0 || !o->prompt.empty();
            if (o->conversation || !given) return run_chat_instead(*o, n_predict->count() > 0);
            o->has_grammar_text = text->count() > 0;
            return run_generate(*o);
          }};
}

}  // namespace tessera::cli
