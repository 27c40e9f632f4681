// Prompts (chat messages through the chat template, completion prompts and embedding
// inputs in each form the APIs allow), n, streaming and log-probability fields.
#include "server/request_decode.h"

#include <algorithm>
#include <limits>
#include <span>

#include "server/context_fit.h"
#include "server/errors.h"
#include "server/infill_prompt.h"
#include "server/request_limits.h"
#include "server/response_fields.h"
#include "server/server_context.h"

namespace tessera::server {
namespace {

std::string at(const std::string& param, size_t i) { return param + "[" + std::to_string(i) + "]"; }

std::string message_content(const json& content, const std::string& param) {
  if (content.is_null()) return {};
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    throw bad_field(param, "'" + param + "' must be a string or an array of text parts, not " +
                               type_words(content));
  }
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const std::string part_name = at(param, j);
    const json& part = content[j];
    if (!part.is_object()) throw bad_field(part_name, "'" + part_name + "' must be an object");
    const Fields f(part, part_name + ".");
    const std::string type = f.string("type").value_or("");
    if (type != "text") {
      throw bad_field(f.name("type"), "'" + f.name("type") + "': only \"text\" parts are supported" +
                                          (type.empty() ? std::string() : " (not \"" + type + "\")"));
    }
    const std::optional<std::string> t = f.string("text");
    if (!t) throw bad_field(f.name("text"), "'" + f.name("text") + "' is required");
    if (!text.empty()) text += '\n';  // llama.cpp joins text parts with newlines (common/chat.cpp)
    text += *t;
  }
  return text;
}

/// A prompt given as text: tokenized with the special tokens the vocabulary asks for
/// (BOS) and with special-token texts parsed.
std::vector<TokenId> encode_prompt(const ServerContext& ctx, const std::string& text, const std::string& param) {
  std::vector<TokenId> ids = ctx.tokenizer().encode(text, /*add_special=*/true, /*parse_special=*/true);
  if (ids.empty()) throw bad_field(param, "'" + param + "' is empty: it has no tokens");
  return ids;
}

}  // namespace

std::string render_chat(const ServerContext& ctx, std::span<const ChatMessage> messages, const ChatExtras& extras) {
  Result<std::string> text = ctx.chat_template->format(messages, true, extras);
  // What a template raises (a role it refuses, a call id of the wrong form) is about the
  // request: a 400 with the template's own message.
  if (!text) throw bad_field("messages", text.status().message());
  return *text;
}

namespace {

/// The chat prompt, the oldest turns left out when the history leaves too little room
/// for the answer (context_fit.h).
void chat_prompt(const std::vector<ChatMessage>& messages, const ServerContext& ctx, Job& job) {
  const int64_t n_ctx = ctx.seq_ctx();
  std::string text;  // of the last render: the prompt
  const ChatRender render = [&](std::span<const ChatMessage> m) {
    text = render_chat(ctx, m, job.chat_extras);
    return encode_prompt(ctx, text, "messages");
  };
  ChatFit fit = fit_chat(messages, n_ctx, answer_room(job.request.max_tokens, n_ctx), render);
  finish_chat_tools(job.reply, text, job.request);
  job.prompts = {std::move(fit.prompt)};
  job.prompt_truncated = {fit.dropped_messages > 0};
  job.dropped_messages = fit.dropped_messages;
}

/// What /infill's prompt is fitted to: the engine's batch budget and sequence, the
/// server's -n.
InfillBudget infill_budget(const ServerContext& ctx) {
  return {ctx.engine->params().batch_budget, ctx.seq_ctx(), ctx.options.n_predict.value_or(-1)};
}

/// Completion prompts too long for a sequence, cut as llama-server cuts them: the first
/// `n_keep` tokens (default 0; -1: as many as may be), then the end.
void truncate_prompts(const Fields& body, const ServerContext& ctx, Job& job) {
  const int64_t n_keep = body.integer("n_keep", -1, std::numeric_limits<int32_t>::max()).value_or(0);
  job.prompt_truncated.clear();
  for (std::vector<TokenId>& p : job.prompts) {
    job.prompt_truncated.push_back(truncate_prompt(p, ctx.seq_ctx(), n_keep, ctx.tokenizer().bos()));
  }
}

bool all_integers(const json& a) {
  for (const json& v : a) {
    if (!v.is_number_integer()) return false;
  }
  return true;
}

/// /v1/completions `prompt`: a string, a list of strings, a list of token ids, or a list
/// of lists of token ids.
std::vector<std::vector<TokenId>> completion_prompts(const Fields& body, const ServerContext& ctx) {
  const json* p = body.get("prompt");
  if (!p) throw bad_field("prompt", "'prompt' is required");
  const int32_t n_vocab = ctx.tokenizer().n_vocab();
  if (p->is_string()) return {encode_prompt(ctx, p->get<std::string>(), "prompt")};
  if (!p->is_array()) throw bad_field("prompt", "'prompt' must be a string or an array, not " + type_words(*p));
  if (p->empty()) throw bad_field("prompt", "'prompt' is an empty array");
  if (all_integers(*p)) return {decode_token_list(*p, "prompt", n_vocab)};
  if (p->size() > limits::kMaxPrompts) {
    throw bad_field("prompt", "'prompt' lists more than " + std::to_string(limits::kMaxPrompts) +
                                  " prompts (the server's limit kMaxPrompts)");
  }
  std::vector<std::vector<TokenId>> prompts;
  for (size_t i = 0; i < p->size(); ++i) {
    const json& e = (*p)[i];
    if (e.is_string()) {
      prompts.push_back(encode_prompt(ctx, e.get<std::string>(), at("prompt", i)));
    } else if (e.is_array()) {
      prompts.push_back(decode_token_list(e, at("prompt", i), n_vocab));
    } else {
      throw bad_field(at("prompt", i), "'" + at("prompt", i) + "' must be a string or a list of token ids, not " +
                                           type_words(e));
    }
  }
  return prompts;
}

/// One /completion prompt: a string, or a list mixing token ids and strings (strings
/// are tokenized without BOS, as llama.cpp does).
std::vector<TokenId> llama_one_prompt(const json& p, const std::string& param, const ServerContext& ctx) {
  if (p.is_string()) return encode_prompt(ctx, p.get<std::string>(), param);
  if (!p.is_array()) throw bad_field(param, "'" + param + "' must be a string or an array, not " + type_words(p));
  std::vector<TokenId> ids;
  for (size_t i = 0; i < p.size(); ++i) {
    const json& e = p[i];
    if (e.is_string()) {
      const std::vector<TokenId> part = ctx.tokenizer().encode(e.get<std::string>(), false, true);
      ids.insert(ids.end(), part.begin(), part.end());
    } else if (e.is_number_integer()) {
      ids.push_back(decode_token_list(json::array({e}), param, ctx.tokenizer().n_vocab())[0]);
    } else {
      throw bad_field(param, "'" + at(param, i) + "' must be a token id or a string, not " + type_words(e));
    }
  }
  if (ids.empty()) throw bad_field(param, "'" + param + "' is empty: it has no tokens");
  return ids;
}

/// /completion `prompt`: one prompt (a string, or a list with a token id in it), or, as
/// llama-server has it, several: a list of strings and lists.
std::vector<std::vector<TokenId>> llama_prompt(const Fields& body, const ServerContext& ctx) {
  const json* p = body.get("prompt");
  if (!p) throw bad_field("prompt", "'prompt' is required");
  const bool one = !p->is_array() || p->empty() ||
                   std::any_of(p->begin(), p->end(), [](const json& e) { return e.is_number(); });
  if (one) return {llama_one_prompt(*p, "prompt", ctx)};
  if (p->size() > limits::kMaxPrompts) {
    throw bad_field("prompt", "'prompt' lists more than " + std::to_string(limits::kMaxPrompts) +
                                  " prompts (the server's limit kMaxPrompts)");
  }
  std::vector<std::vector<TokenId>> prompts;
  for (size_t i = 0; i < p->size(); ++i) prompts.push_back(llama_one_prompt((*p)[i], at("prompt", i), ctx));
  return prompts;
}

void decode_stream(const Fields& body, Job& job) {
  job.stream = body.boolean("stream").value_or(false);
  const json* so = body.object("stream_options");
  if (so) job.include_usage = Fields(*so, "stream_options.").boolean("include_usage").value_or(false);
}

void decode_logprobs(const Fields& body, Dialect dialect, serving::GenerationRequest& r) {
  const int max_probs = serving::Engine::kMaxProbs;
  if (dialect == Dialect::Chat) {
    r.logprobs = body.boolean("logprobs").value_or(false);
    const std::optional<int64_t> top = body.integer("top_logprobs", 0, max_probs);
    if (top && *top > 0 && !r.logprobs) {
      throw bad_field("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    }
    r.n_probs = int(top.value_or(0));
  } else if (dialect == Dialect::Completion) {
    const std::optional<int64_t> lp = body.integer("logprobs", 0, max_probs);
    r.logprobs = lp.has_value();
    r.n_probs = int(lp.value_or(0));
  } else {
    r.n_probs = int(body.integer("n_probs", 0, max_probs).value_or(0));
    r.logprobs = r.n_probs > 0;
    r.post_sampling_probs = body.boolean("post_sampling_probs").value_or(false);
  }
}

/// `input` of /v1/embeddings: a string, strings, token ids, or lists of token ids.
std::vector<std::vector<TokenId>> embedding_inputs(const Fields& body, const ServerContext& ctx) {
  const json* in = body.get("input");
  if (!in) in = body.get("content");  // llama.cpp's name
  if (!in) throw bad_field("input", "'input' is required");
  const Tokenizer& tok = ctx.tokenizer();
  auto encode = [&](const std::string& text, const std::string& param) {
    std::vector<TokenId> ids = tok.encode(text, true, true);
    if (ids.empty()) throw bad_field(param, "'" + param + "' is empty: it has no tokens");
    return ids;
  };
  if (in->is_string()) return {encode(in->get<std::string>(), "input")};
  if (!in->is_array() || in->empty()) throw bad_field("input", "'input' must be a string or a non-empty array");
  if ((*in)[0].is_number_integer()) return {decode_token_list(*in, "input", tok.n_vocab())};
  if (in->size() > limits::kMaxEmbeddingInputs) {
    throw bad_field("input", "'input' lists more than " + std::to_string(limits::kMaxEmbeddingInputs) +
                                 " inputs (the server's limit kMaxEmbeddingInputs)");
  }
  std::vector<std::vector<TokenId>> out;
  for (size_t i = 0; i < in->size(); ++i) {
    const std::string param = "input[" + std::to_string(i) + "]";
    const json& e = (*in)[i];
    if (e.is_string()) out.push_back(encode(e.get<std::string>(), param));
    else if (e.is_array()) out.push_back(decode_token_list(e, param, tok.n_vocab()));
    else throw bad_field(param, "'" + param + "' must be a string or a list of token ids, not " + type_words(e));
  }
  return out;
}

}  // namespace

std::vector<TokenId> decode_token_list(const json& v, const std::string& param, int32_t n_vocab) {
  if (!v.is_array()) throw bad_field(param, "'" + param + "' must be an array of token ids, not " + type_words(v));
  if (v.empty()) throw bad_field(param, "'" + param + "' is an empty list of tokens");
  std::vector<TokenId> ids;
  ids.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const json& e = v[i];
    if (!e.is_number_integer()) {
      throw bad_field(param, "'" + at(param, i) + "' must be a token id (an integer), not " + type_words(e));
    }
    const bool in_range = e.is_number_unsigned() ? e.get<uint64_t>() < uint64_t(n_vocab)
                                                 : (e.get<int64_t>() >= 0 && e.get<int64_t>() < n_vocab);
    if (!in_range) {
      throw bad_field(param, "'" + at(param, i) + "': token id out of range (the vocabulary has " +
                                 std::to_string(n_vocab) + " tokens)");
    }
    ids.push_back(TokenId(e.get<int64_t>()));
  }
  return ids;
}

std::vector<ChatMessage> decode_messages(const Fields& body) {
  const json* m = body.array("messages");
  if (!m) throw bad_field("messages", "'messages' is required");
  if (m->empty()) throw bad_field("messages", "'messages' is empty");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < m->size(); ++i) {
    const std::string name = at("messages", i);
    if (!(*m)[i].is_object()) throw bad_field(name, "'" + name + "' must be an object");
    const Fields f((*m)[i], name + ".");
    const std::optional<std::string> role = f.string("role");
    if (!role) throw bad_field(f.name("role"), "'" + f.name("role") + "' is required");
    ChatMessage msg;
    msg.role = *role == "developer" ? "system" : *role;
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool") {
      throw bad_field(f.name("role"), "'" + f.name("role") + "' must be system, developer, user, assistant or tool, not \"" +
                                          *role + "\"");
    }
    if (const json* calls = f.get("tool_calls"); calls && !calls->is_array()) {
      throw bad_field(f.name("tool_calls"), "'" + f.name("tool_calls") + "' must be an array");
    }
    // Only an assistant message may come without content (null is absent, as everywhere).
    const json* content = f.get("content");
    if (!content && msg.role != "assistant") {
      throw bad_field(f.name("content"), "'" + f.name("content") + "' is required");
    }
    if (content) msg.content = message_content(*content, f.name("content"));
    out.push_back(std::move(msg));
  }
  return out;
}

Job decode_job(const json& body_json, Dialect dialect, const ServerContext& ctx, const nlohmann::ordered_json* ordered) {
  if (ctx.model && ctx.model->info().encoder) {
    throw not_supported("the model (" + ctx.model->info().arch +
                        ") is an encoder: it computes embeddings only (POST /v1/embeddings, /embedding), not text");
  }
  const Fields body(body_json);
  Job job;
  std::vector<ChatMessage> messages;
  InfillPrompt infill;
  switch (dialect) {
    case Dialect::Chat: {
      messages = decode_messages(body);
      const nlohmann::ordered_json fallback = ordered ? nlohmann::ordered_json() : nlohmann::ordered_json::parse(body_json.dump());
      job.reply = decode_chat_tools(body, ordered ? *ordered : fallback, ctx, messages, job.chat_extras);
      break;
    }
    case Dialect::Completion: job.prompts = completion_prompts(body, ctx); break;
    case Dialect::Llama: job.prompts = llama_prompt(body, ctx); break;
    case Dialect::Infill:
      infill = infill_prompt(body, ctx.tokenizer(), infill_budget(ctx));
      job.prompts = {std::move(infill.tokens)};
      break;
  }
  decode_stream(body, job);
  if (dialect == Dialect::Chat || dialect == Dialect::Completion) {
    job.request.n_choices = int(body.integer("n", 1, limits::kMaxChoices).value_or(1));
  } else {
    job.return_tokens = body.boolean("return_tokens").value_or(false);
    job.response_fields = decode_response_fields(body);
    job.timings_per_token = body.boolean("timings_per_token").value_or(false);
  }
  decode_logprobs(body, dialect, job.request);
  decode_generation_fields(body, dialect, ctx, job.request);
  job.request.adapter_scales = decode_lora_field(body, ctx);
  if (dialect != Dialect::Chat) {
    truncate_prompts(body, ctx, job);
    if (infill.truncated) job.prompt_truncated.at(0) = true;
  } else {
    chat_prompt(messages, ctx, job);
    const std::string_view marker = ctx.chat_template->end_marker();
    if (!marker.empty()) job.request.stop.emplace_back(marker);
  }
  return job;
}

bool Job::truncated() const {
  return std::any_of(prompt_truncated.begin(), prompt_truncated.end(), [](bool t) { return t; });
}

/// --pooling when given, else the pooling the model's file names (none, mean, cls, last, rank),
/// else mean.
std::string default_pooling(const ServerContext& ctx) {
  if (!ctx.options.pooling.empty()) return ctx.options.pooling;
  const std::string file = ctx.model ? ctx.model->info().pooling : std::string();
  for (const char* p : {"none", "mean", "cls", "last", "rank"}) {
    if (file == p) return file;
  }
  return "mean";
}

Job decode_embedding_job(const Fields& body, const ServerContext& ctx) {
  Job job;
  job.prompts = embedding_inputs(body, ctx);
  job.request.embedding = true;
  job.request.max_tokens = 0;
  const std::string pooling = body.string("pooling").value_or(default_pooling(ctx));
  if (pooling == "none") {
    job.request.token_embeddings = true;
  } else {
    Result<Pooling> p = parse_pooling(pooling);
    if (!p) throw bad_field("pooling", "'pooling': " + p.status().message() + ", none");
    job.request.pooling = *p;
  }
  job.request.normalize = body.boolean("normalize").value_or(true);
  return job;
}

}  // namespace tessera::server
