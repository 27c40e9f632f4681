// The generation fields every dialect shares: limits, samplers, penalties, logit bias,
// stop strings, seed, grammar / response_format / json_schema.
#include <limits>
#include <optional>
#include <random>

#include "server/errors.h"
#include "server/request_limits.h"
#include "server/request_decode.h"
#include "server/server_context.h"
#include "tessera/grammar.h"
#include "tessera/json_schema.h"

namespace tessera::server {
namespace {

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
using limits::kMaxLogitBias;
using limits::kMaxStops;

/// The token limit; absent: the server's -n, else the endpoint's own default.
int32_t decode_max_tokens(const Fields& body, Dialect dialect, std::optional<int32_t> server_default) {
  switch (dialect) {
    case Dialect::Chat: {
      std::optional<int64_t> n = body.integer("max_completion_tokens", 0, kMaxInt32);
      if (!n) n = body.integer("max_tokens", 0, kMaxInt32);
      return int32_t(n.value_or(server_default.value_or(-1)));
    }
    case Dialect::Completion:
      return int32_t(body.integer("max_tokens", 0, kMaxInt32).value_or(server_default.value_or(16)));
    case Dialect::Llama:
    case Dialect::Infill:
      return int32_t(body.integer("n_predict", -1, kMaxInt32).value_or(server_default.value_or(-1)));
  }
  return -1;
}

/// One bias value: a number, or false (llama.cpp: the token is forbidden).
float bias_value(const json& v, const std::string& param) {
  if (v.is_boolean() && !v.get<bool>()) return -std::numeric_limits<float>::infinity();
  if (!v.is_number()) throw bad_field(param, "'" + param + "' must be a number (or false), not " + type_words(v));
  const double b = v.get<double>();
  if (!(b >= -100.0 && b <= 100.0)) throw bad_field(param, "'" + param + "' must be between -100 and 100");
  return float(b);
}

TokenId bias_token(const json& key, const std::string& param, int32_t n_vocab) {
  int64_t id = -1;
  if (key.is_string()) {
    const std::string s = key.get<std::string>();
    size_t used = 0;
    try {
      id = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != s.size()) throw bad_field(param, "'" + param + "': \"" + s + "\" is not a token id");
  } else if (key.is_number_integer()) {
    id = key.get<int64_t>();
  } else {
    throw bad_field(param, "'" + param + "': a token id must be an integer or a string of one");
  }
  if (id < 0 || id >= n_vocab) throw bad_field(param, "'" + param + "': token id " + std::to_string(id) + " out of range");
  return TokenId(id);
}

/// `logit_bias`: {"ID": bias, ...} (OpenAI) or [[ID, bias or false], ...] (llama.cpp).
std::vector<LogitBias> decode_logit_bias(const Fields& body, int32_t n_vocab) {
  const json* lb = body.get("logit_bias");
  if (!lb) return {};
  if (!lb->is_object() && !lb->is_array()) {
    throw bad_field("logit_bias", "'logit_bias' must be an object mapping token ids to biases, not " + type_words(*lb));
  }
  if (lb->size() > kMaxLogitBias) {
    throw bad_field("logit_bias", "'logit_bias' has more than " + std::to_string(kMaxLogitBias) +
                                      " entries (the server's limit kMaxLogitBias)");
  }
  std::vector<LogitBias> out;
  if (lb->is_object()) {
    for (auto it = lb->begin(); it != lb->end(); ++it) {
      out.push_back({bias_token(json(it.key()), "logit_bias", n_vocab), bias_value(it.value(), "logit_bias")});
    }
    return out;
  }
  for (const json& pair : *lb) {
    if (!pair.is_array() || pair.size() != 2) {
      throw bad_field("logit_bias", "'logit_bias' as an array holds [token id, bias] pairs");
    }
    out.push_back({bias_token(pair[0], "logit_bias", n_vocab), bias_value(pair[1], "logit_bias")});
  }
  return out;
}

std::vector<std::string> decode_stop(const Fields& body) {
  const json* s = body.get("stop");
  if (!s) return {};
  if (s->is_string()) return {s->get<std::string>()};
  if (!s->is_array()) throw bad_field("stop", "'stop' must be a string or an array of strings, not " + type_words(*s));
  if (s->size() > kMaxStops) {
    throw bad_field("stop", "'stop' has more than " + std::to_string(kMaxStops) +
                                " strings (the server's limit kMaxStops)");
  }
  std::vector<std::string> out;
  for (const json& e : *s) {
    if (!e.is_string()) throw bad_field("stop", "'stop' must hold strings only, not " + type_words(e));
    if (!e.get<std::string>().empty()) out.push_back(e.get<std::string>());
  }
  return out;
}

/// `seed`, else the server's --seed; -1 (either way): a random one.
uint64_t decode_seed(const Fields& body, int64_t server_default) {
  const int64_t seed = body.integer("seed", -1, std::numeric_limits<int64_t>::max()).value_or(server_default);
  if (seed >= 0) return uint64_t(seed);
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ uint64_t(rd());
}

/// The sampler fields over `p`, which holds the server's defaults.
void decode_sampler(const Fields& body, SamplerParams& p, int64_t server_seed) {
  p.temperature = float(body.number("temperature", 0.0, 100.0).value_or(p.temperature));
  p.top_k = int32_t(body.integer("top_k", -1, kMaxInt32).value_or(p.top_k));
  p.top_p = float(body.number("top_p", 0.0, 1.0).value_or(p.top_p));
  p.min_p = float(body.number("min_p", 0.0, 1.0).value_or(p.min_p));
  p.typical_p = float(body.number("typical_p", 0.0, 1.0).value_or(p.typical_p));
  p.tfs_z = float(body.number("tfs_z", 0.0, 1.0).value_or(p.tfs_z));
  p.repeat_penalty = float(body.number("repeat_penalty", 0.0, 100.0).value_or(p.repeat_penalty));
  if (p.repeat_penalty <= 0.0f) throw bad_field("repeat_penalty", "'repeat_penalty' must be greater than 0");
  p.repeat_last_n = int32_t(body.integer("repeat_last_n", -1, kMaxInt32).value_or(p.repeat_last_n));
  p.presence_penalty = float(body.number("presence_penalty", -100.0, 100.0).value_or(p.presence_penalty));
  p.frequency_penalty = float(body.number("frequency_penalty", -100.0, 100.0).value_or(p.frequency_penalty));
  p.mirostat = int32_t(body.integer("mirostat", 0, 2).value_or(p.mirostat));
  p.mirostat_tau = float(body.number("mirostat_tau", 0.0, 100.0).value_or(p.mirostat_tau));
  p.mirostat_eta = float(body.number("mirostat_eta", 0.0, 100.0).value_or(p.mirostat_eta));
  p.seed = decode_seed(body, server_seed);
}

std::shared_ptr<const Grammar> parse_grammar(const std::string& text, const std::string& param) {
  Result<std::shared_ptr<const Grammar>> g = Grammar::parse(text, param);
  if (!g) throw bad_field(param, "'" + param + "': " + g.status().message());
  return *g;
}

std::shared_ptr<const Grammar> schema_grammar(const json& schema, const std::string& param) {
  Result<std::string> gbnf = json_schema_to_grammar(dump_json(schema));
  if (!gbnf) throw bad_field(param, "'" + param + "': " + gbnf.status().message());
  return parse_grammar(*gbnf, param);
}

/// response_format: {type: text | json_object [, schema] | json_schema, json_schema: {schema}}.
std::shared_ptr<const Grammar> response_format_grammar(const json& rf) {
  const Fields f(rf, "response_format.");
  const std::string type = f.string("type").value_or("text");
  if (type == "text") return nullptr;
  if (type == "json_object") {
    if (const json* schema = f.object("schema")) return schema_grammar(*schema, "response_format.schema");
    return parse_grammar(std::string(Grammar::builtin("json")), "response_format");
  }
  if (type == "json_schema") {
    const json* js = f.object("json_schema");
    if (!js) throw bad_field("response_format.json_schema", "'response_format.json_schema' is required");
    const json* schema = Fields(*js, "response_format.json_schema.").object("schema");
    if (!schema) return parse_grammar(std::string(Grammar::builtin("json")), "response_format");
    return schema_grammar(*schema, "response_format.json_schema.schema");
  }
  throw bad_field("response_format.type",
                  "'response_format.type' must be text, json_object or json_schema, not \"" + type + "\"");
}

std::shared_ptr<const Grammar> decode_grammar(const Fields& body) {
  std::shared_ptr<const Grammar> g;
  const char* source = nullptr;
  auto take = [&](std::shared_ptr<const Grammar> next, const char* name) {
    if (!next) return;
    if (g) throw bad_field(name, std::string("'") + name + "' and '" + source + "' cannot both constrain the output");
    g = std::move(next);
    source = name;
  };
  if (const std::optional<std::string> text = body.string("grammar"); text && !text->empty()) {
    take(parse_grammar(*text, "grammar"), "grammar");
  }
  if (const json* rf = body.object("response_format")) take(response_format_grammar(*rf), "response_format");
  if (const json* schema = body.object("json_schema")) take(schema_grammar(*schema, "json_schema"), "json_schema");
  return g;
}

}  // namespace

void decode_generation_fields(const Fields& body, Dialect dialect, const ServerContext& ctx,
                              serving::GenerationRequest& r) {
  r.max_tokens = decode_max_tokens(body, dialect, ctx.options.n_predict);
  r.sampling = ctx.options.sampling;
  decode_sampler(body, r.sampling, ctx.options.seed);
  r.sampling.logit_bias = decode_logit_bias(body, ctx.tokenizer().n_vocab());
  r.stop = decode_stop(body);
  r.ignore_eos = body.boolean("ignore_eos").value_or(false);
  r.cache_prompt = body.boolean("cache_prompt").value_or(true);
  r.grammar = decode_grammar(body);
}

}  // namespace tessera::server
