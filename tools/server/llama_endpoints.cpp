// llama.cpp's own endpoints: POST /completion (and its stream), /tokenize, /detokenize,
// /apply-template; GET /props, /slots.
#include "server/connection_watch.h"
#include "server/endpoints.h"
#include "server/errors.h"
#include "server/openai_responses.h"
#include "server/request_decode.h"
#include "server/response_fields.h"
#include "server/server_context.h"

namespace tessera::server {

using nlohmann::json;

namespace {

double ms_between(serving::Clock::time_point a, serving::Clock::time_point b) {
  return b > a ? std::chrono::duration<double, std::milli>(b - a).count() : 0.0;
}

json sampling_json(const serving::GenerationRequest& r) {
  const SamplerParams& p = r.sampling;
  return {{"n_predict", r.max_tokens}, {"temperature", p.temperature}, {"top_k", p.top_k},
          {"top_p", p.top_p}, {"min_p", p.min_p}, {"typical_p", p.typical_p}, {"tfs_z", p.tfs_z},
          {"repeat_penalty", p.repeat_penalty}, {"repeat_last_n", p.repeat_last_n},
          {"presence_penalty", p.presence_penalty}, {"frequency_penalty", p.frequency_penalty},
          {"mirostat", p.mirostat}, {"mirostat_tau", p.mirostat_tau}, {"mirostat_eta", p.mirostat_eta},
          {"seed", p.seed}, {"ignore_eos", r.ignore_eos}, {"stop", r.stop}, {"n_probs", r.n_probs},
          {"cache_prompt", r.cache_prompt}, {"grammar", r.grammar != nullptr}};
}

/// llama-server's /props `default_generation_settings.params`: the request defaults
/// (seed -1: a random one per request; n_predict -1: until the sequence is full).
json default_params_json(const ServerOptions& o) {
  const SamplerParams& p = o.sampling;
  const int32_t n_predict = o.n_predict.value_or(-1);
  return {{"n_predict", n_predict}, {"max_tokens", n_predict}, {"seed", o.seed}, {"temperature", p.temperature},
          {"top_k", p.top_k}, {"top_p", p.top_p}, {"min_p", p.min_p}, {"typical_p", p.typical_p},
          {"tfs_z", p.tfs_z}, {"repeat_last_n", p.repeat_last_n}, {"repeat_penalty", p.repeat_penalty},
          {"presence_penalty", p.presence_penalty}, {"frequency_penalty", p.frequency_penalty},
          {"mirostat", p.mirostat}, {"mirostat_tau", p.mirostat_tau}, {"mirostat_eta", p.mirostat_eta},
          {"min_keep", p.min_keep}, {"stop", json::array()}, {"ignore_eos", false}, {"n_probs", 0},
          {"cache_prompt", true},
          // SamplerChain::create's order (logit bias first, the grammar after the penalties)
          {"samplers", {"penalties", "top_k", "tfs_z", "typ_p", "top_p", "min_p", "temperature"}}};
}

/// /props `default_generation_settings`: tessera's flat fields, plus llama-server's
/// `n_ctx` (cells of one sequence) and `params`.
json default_settings_json(const ServerContext& ctx) {
  serving::GenerationRequest d;
  d.sampling = ctx.options.sampling;
  d.max_tokens = ctx.options.n_predict.value_or(-1);
  json settings = sampling_json(d);
  settings["seed"] = ctx.options.seed;
  settings["n_ctx"] = ctx.engine->params().n_ctx_per_seq;
  settings["params"] = default_params_json(ctx.options);
  return settings;
}

json timings_json(const serving::Usage& u) {
  const double prompt_ms = ms_between(u.admitted, u.first_token);
  const double predicted_ms = ms_between(u.first_token, u.finished);
  const int64_t prompt_n = u.prompt_tokens - u.cached_tokens;
  auto per_token = [](double ms, int64_t n) { return n > 0 ? ms / double(n) : 0.0; };
  auto per_second = [](double ms, int64_t n) { return ms > 0 ? 1000.0 * double(n) / ms : 0.0; };
  return {{"prompt_n", prompt_n}, {"prompt_ms", prompt_ms}, {"prompt_per_token_ms", per_token(prompt_ms, prompt_n)},
          {"prompt_per_second", per_second(prompt_ms, prompt_n)}, {"predicted_n", u.completion_tokens},
          {"predicted_ms", predicted_ms}, {"predicted_per_token_ms", per_token(predicted_ms, u.completion_tokens)},
          {"predicted_per_second", per_second(predicted_ms, u.completion_tokens)}};
}

json probability_json(const TokenInfo& t, const Tokenizer& tok) {
  json top = json::array();
  for (const serving::TokenLogprob& alt : t.top) {
    const std::string piece = tok.token_to_piece(alt.token);
    top.push_back({{"id", alt.token}, {"token", piece}, {"logprob", alt.logprob}, {"bytes", bytes_json(piece)}});
  }
  return {{"id", t.token}, {"token", t.piece}, {"logprob", t.logprob}, {"bytes", bytes_json(t.piece)},
          {"top_logprobs", top}};
}

/// llama-server's stop_type: "eos" (an end-of-generation token or a complete grammar),
/// "word" (a stop string), "limit" (n_predict, the sequence's end, --timeout), "none".
const char* stop_type(const ChoiceOutput& c, bool timed_out) {
  if (timed_out || c.finish == serving::FinishReason::Length) return "limit";
  if (c.finish != serving::FinishReason::Stop) return "none";
  return c.stop_word.empty() ? "eos" : "word";
}

bool has_new_line(const std::string& text) { return text.find('\n') != std::string::npos; }

/// The final object of /completion (also the last frame of its stream, with "content"
/// holding only the text released at the end, and `new_line` telling whether the whole
/// text has one).
json completion_final(const ServerContext& ctx, const Job& job, size_t prompt, const ChoiceOutput& c,
                      const serving::Usage& u, bool timed_out, bool new_line) {
  const bool stop = c.finish == serving::FinishReason::Stop;
  // As llama-server: the prompt was cut to fit, or the generation ran into the end of its
  // sequence (not its n_predict).
  const bool truncated = job.prompt_truncated.at(prompt) ||
                         (c.finish == serving::FinishReason::Length && !timed_out &&
                          u.prompt_tokens + u.completion_tokens >= ctx.seq_ctx());
  json tokens = json::array();
  if (job.return_tokens) {
    for (const TokenInfo& t : c.tokens) tokens.push_back(t.token);
  }
  json r = {{"content", c.text}, {"id_slot", -1}, {"stop", true}, {"model", ctx.model_name},
            {"tokens_predicted", u.completion_tokens}, {"tokens_evaluated", u.prompt_tokens},
            {"tokens_cached", u.cached_tokens}, {"generation_settings", sampling_json(job.request)},
            {"truncated", truncated}, {"stop_type", stop_type(c, timed_out)}, {"has_new_line", new_line},
            {"tokens", tokens}, {"stopped_eos", stop && c.stop_word.empty()},
            {"stopped_word", !c.stop_word.empty()},
            {"stopped_limit", !stop || timed_out}, {"stopping_word", c.stop_word}, {"timings", timings_json(u)}};
  if (job.request.n_probs > 0) {
    json probs = json::array();
    for (const TokenInfo& t : c.tokens) probs.push_back(probability_json(t, ctx.tokenizer()));
    r["completion_probabilities"] = probs;
  }
  return job.response_fields.empty() ? r : select_response_fields(r, job.response_fields);
}

/// The /completion stream: {content, stop:false} per token, then the final object.
class LlamaStream : public SseFormatter {
 public:
  LlamaStream(const ServerContext& ctx, Job job) : ctx_(ctx), job_(std::move(job)) { choice_.resize(1); }

  std::string event(const serving::Event& e, bool timed_out) override {
    apply_event(e, choice_, ctx_.tokenizer());
    if (e.kind == serving::Event::Kind::Token && (!e.text.empty() || job_.request.n_probs > 0)) {
      json frame = {{"content", e.text}, {"stop", false}, {"id_slot", -1}, {"tokens", json::array({e.token})},
                    {"has_new_line", has_new_line(choice_[0].text)}};
      if (job_.request.n_probs > 0) {
        frame["completion_probabilities"] =
            json::array({probability_json(TokenInfo{e.token, e.piece, e.logprob.logprob, e.top, 0}, ctx_.tokenizer())});
      }
      return sse_frame(frame);
    }
    if (e.kind == serving::Event::Kind::ChoiceDone) {
      final_text_ = e.text;
      timed_out_ = timed_out;
    }
    return {};
  }

  std::string end(const serving::Usage& usage) override {
    ChoiceOutput last = choice_[0];
    last.text = final_text_;
    last.tokens.clear();  // each came with its frame, as the text did
    return sse_frame(completion_final(ctx_, job_, 0, last, usage, timed_out_, has_new_line(choice_[0].text)));
  }

 private:
  const ServerContext& ctx_;
  Job job_;
  std::vector<ChoiceOutput> choice_;
  std::string final_text_;
  bool timed_out_ = false;
};

/// True when `s` is well-formed UTF-8.
bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    }
    i += n;
  }
  return true;
}

json token_piece_json(const Tokenizer& tok, TokenId id) {
  const std::string piece = tok.token_to_piece(id);
  // A piece that is not whole UTF-8 is given as its bytes (as llama.cpp does).
  if (valid_utf8(piece)) return {{"id", id}, {"piece", piece}};
  return {{"id", id}, {"piece", bytes_json(piece)}};
}

}  // namespace

void handle_completion(ServerContext& ctx, const HttpRequest& req, HttpResponse& res) {
  ctx.require_ready();
  const json body = parse_body(req.body);
  ctx.check_model(Fields(body));
  const Job job = decode_job(body, Dialect::Llama, ctx);
  const bool several = job.prompts.size() > 1;
  if (several && job.stream) {
    throw bad_field("stream", "'stream' takes one prompt: this 'prompt' lists " + std::to_string(job.prompts.size()));
  }
  auto run = std::make_shared<JobRun>(ctx, job);
  if (job.stream) {
    stream_response(req, res, ctx, run, std::make_shared<LlamaStream>(ctx, job));
    return;
  }
  ConnectionWatch watch(req);
  const JobOutput out = collect(*run, ctx, watch);
  if (!several) {
    const ChoiceOutput& c = out.choices.at(0);
    send_json(res, completion_final(ctx, job, 0, c, out.usage, run->timed_out(), has_new_line(c.text)));
    return;
  }
  json results = json::array();  // llama-server: one object per prompt, with its index
  for (size_t i = 0; i < out.choices.size(); ++i) {
    const ChoiceOutput& c = out.choices[i];
    results.push_back(completion_final(ctx, job, i, c, run->usage(i), run->timed_out(), has_new_line(c.text)));
    results.back()["index"] = i;
  }
  send_json(res, results);
}

void handle_tokenize(ServerContext& ctx, const HttpRequest& req, HttpResponse& res) {
  ctx.require_ready();
  const json body_json = parse_body(req.body);
  const Fields body(body_json);
  const std::optional<std::string> content = body.string("content");
  if (!content) throw bad_field("content", "'content' is required");
  const bool add_special = body.boolean("add_special").value_or(false);
  const bool parse_special = body.boolean("parse_special").value_or(true);
  const bool with_pieces = body.boolean("with_pieces").value_or(false);
  const Tokenizer& tok = ctx.tokenizer();
  const std::vector<TokenId> ids = tok.encode(*content, add_special, parse_special);
  json tokens = json::array();
  for (const TokenId id : ids) tokens.push_back(with_pieces ? token_piece_json(tok, id) : json(id));
  send_json(res, {{"tokens", tokens}});
}

void handle_detokenize(ServerContext& ctx, const HttpRequest& req, HttpResponse& res) {
  ctx.require_ready();
  const json body_json = parse_body(req.body);
  const Fields body(body_json);
  const json* tokens = body.array("tokens");
  if (!tokens) throw bad_field("tokens", "'tokens' is required");
  std::vector<TokenId> ids;
  if (!tokens->empty()) ids = decode_token_list(*tokens, "tokens", ctx.tokenizer().n_vocab());
  send_json(res, {{"content", ctx.tokenizer().decode(ids)}});
}

void handle_apply_template(ServerContext& ctx, const HttpRequest& req, HttpResponse& res) {
  ctx.require_ready();
  const json body = parse_body(req.body);
  const std::vector<ChatMessage> messages = decode_messages(Fields(body));
  send_json(res, {{"prompt", ctx.chat_template->format(messages, true)}});
}

json adapters_json(const ServerContext& ctx) {
  json list = json::array();
  for (const AdapterSpec& a : ctx.options.adapters) {
    list.push_back({{"id", list.size()}, {"path", a.path}, {"scale", a.scale}});
  }
  return list;
}

void handle_props(ServerContext& ctx, const HttpRequest&, HttpResponse& res) {
  ctx.require_ready();
  const serving::EngineParams& p = ctx.engine->params();
  send_json(res, {{"default_generation_settings", default_settings_json(ctx)},
                  {"total_slots", p.n_parallel},
                  {"n_ctx", ctx.engine->stats().n_ctx},
                  {"n_ctx_per_seq", p.n_ctx_per_seq},
                  {"model_path", ctx.options.model},
                  {"model_alias", ctx.model_name},
                  {"lora_adapters", adapters_json(ctx)},
                  {"chat_template", std::string(ctx.chat_template->name())},
                  {"embeddings", ctx.options.embeddings},
                  {"prefix_cache", p.prefix_cache},
                  {"build_info", std::string("tessera ") + kTesseraVersion}});
}

void handle_slots(ServerContext& ctx, const HttpRequest&, HttpResponse& res) {
  ctx.require_ready();
  const serving::EngineStats stats = ctx.engine->stats();
  json slots = json::array();
  for (const serving::SlotInfo& s : stats.slots) {
    slots.push_back({{"id", s.id}, {"is_processing", s.busy}, {"id_task", s.busy ? json(s.request) : json(-1)},
                     {"n_past", s.n_past}, {"n_decoded", s.n_generated},
                     {"n_ctx", ctx.engine->params().n_ctx_per_seq}});
  }
  send_json(res, slots);
}

}  // namespace tessera::server
