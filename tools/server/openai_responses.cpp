#include "server/openai_responses.h"

#include <map>
#include <set>

namespace tessera::server {

using nlohmann::json;
using serving::Event;

json bytes_json(const std::string& piece) {
  json b = json::array();
  for (const unsigned char ch : piece) b.push_back(int(ch));
  return b;
}

json usage_json(const serving::Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

namespace {

json chat_token_json(const TokenInfo& t, const Tokenizer& tok) {
  json top = json::array();
  for (const serving::TokenLogprob& alt : t.top) {
    const std::string piece = tok.token_to_piece(alt.token);
    top.push_back({{"token", piece}, {"logprob", alt.logprob}, {"bytes", bytes_json(piece)}});
  }
  return {{"token", t.piece}, {"logprob", t.logprob}, {"bytes", bytes_json(t.piece)}, {"top_logprobs", top}};
}

json legacy_top_json(const TokenInfo& t, const Tokenizer& tok) {
  json top = json::object();
  for (const serving::TokenLogprob& alt : t.top) {
    const std::string piece = tok.token_to_piece(alt.token);
    if (!top.contains(piece)) top[piece] = alt.logprob;  // pieces may repeat: keep the likeliest
  }
  return top;
}

json envelope(const ResponseMeta& meta, const char* object) {
  json e = {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model},
            {"system_fingerprint", meta.fingerprint}, {"truncated", meta.truncated}};
  if (meta.dropped_messages >= 0) e["dropped_messages"] = meta.dropped_messages;
  return e;
}

}  // namespace

json chat_logprobs_json(const std::vector<TokenInfo>& tokens, const Tokenizer& tok) {
  json content = json::array();
  for (const TokenInfo& t : tokens) content.push_back(chat_token_json(t, tok));
  return {{"content", content}, {"refusal", nullptr}};
}

json legacy_logprobs_json(const std::vector<TokenInfo>& tokens, const Tokenizer& tok) {
  json pieces = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (const TokenInfo& t : tokens) {
    pieces.push_back(t.piece);
    lps.push_back(t.logprob);
    tops.push_back(legacy_top_json(t, tok));
    offsets.push_back(t.text_offset);
  }
  return {{"tokens", pieces}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json chat_response(const ResponseMeta& meta, const JobOutput& out, bool logprobs, bool timed_out,
                   const Tokenizer& tok) {
  json r = envelope(meta, "chat.completion");
  json choices = json::array();
  for (size_t i = 0; i < out.choices.size(); ++i) {
    const ChoiceOutput& c = out.choices[i];
    choices.push_back({{"index", i},
                       {"message", {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}}},
                       {"logprobs", logprobs ? chat_logprobs_json(c.tokens, tok) : json(nullptr)},
                       {"finish_reason", finish_name(c.finish, timed_out)}});
  }
  r["choices"] = choices;
  r["usage"] = usage_json(out.usage);
  return r;
}

json completion_response(const ResponseMeta& meta, const JobOutput& out, bool logprobs, bool timed_out,
                         const Tokenizer& tok) {
  json r = envelope(meta, "text_completion");
  json choices = json::array();
  for (size_t i = 0; i < out.choices.size(); ++i) {
    const ChoiceOutput& c = out.choices[i];
    choices.push_back({{"index", i},
                       {"text", c.text},
                       {"logprobs", logprobs ? legacy_logprobs_json(c.tokens, tok) : json(nullptr)},
                       {"finish_reason", finish_name(c.finish, timed_out)}});
  }
  r["choices"] = choices;
  r["usage"] = usage_json(out.usage);
  return r;
}

namespace {

/// What both OpenAI stream formats share: the chunk envelope, usage, [DONE].
class OpenAiStream : public SseFormatter {
 public:
  OpenAiStream(ResponseMeta meta, const char* object, bool logprobs, bool include_usage, const Tokenizer& tok)
      : meta_(std::move(meta)), object_(object), logprobs_(logprobs), include_usage_(include_usage), tok_(tok) {}

  std::string end(const serving::Usage& usage) override {
    std::string out;
    if (include_usage_) {
      json chunk = envelope(meta_, object_);
      chunk["choices"] = json::array();
      chunk["usage"] = usage_json(usage);
      out += sse_frame(chunk);
    }
    return out + "data: [DONE]\n\n";
  }

 protected:
  std::string chunk(json choice) const {
    json c = envelope(meta_, object_);
    c["choices"] = json::array({std::move(choice)});
    if (include_usage_) c["usage"] = nullptr;
    return sse_frame(c);
  }

  ResponseMeta meta_;
  const char* object_;
  bool logprobs_;
  bool include_usage_;
  const Tokenizer& tok_;
};

class ChatStream : public OpenAiStream {
 public:
  using OpenAiStream::OpenAiStream;

  std::string event(const Event& e, bool timed_out) override {
    std::string out;
    if (started_.insert(e.choice).second) {
      out += chunk({{"index", e.choice}, {"delta", {{"role", "assistant"}, {"content", ""}}},
                    {"logprobs", nullptr}, {"finish_reason", nullptr}});
    }
    if (e.kind == Event::Kind::Token && (!e.text.empty() || logprobs_)) {
      json lp = nullptr;
      if (logprobs_) {
        lp = chat_logprobs_json({TokenInfo{e.token, e.piece, e.logprob.logprob, e.top, 0}}, tok_);
      }
      out += chunk({{"index", e.choice}, {"delta", {{"content", e.text}}}, {"logprobs", lp}, {"finish_reason", nullptr}});
    } else if (e.kind == Event::Kind::ChoiceDone) {
      if (!e.text.empty()) {
        out += chunk({{"index", e.choice}, {"delta", {{"content", e.text}}}, {"logprobs", nullptr},
                      {"finish_reason", nullptr}});
      }
      out += chunk({{"index", e.choice}, {"delta", json::object()}, {"logprobs", nullptr},
                    {"finish_reason", finish_name(e.finish, timed_out)}});
    }
    return out;
  }

 private:
  std::set<int> started_;
};

class CompletionStream : public OpenAiStream {
 public:
  using OpenAiStream::OpenAiStream;

  std::string event(const Event& e, bool timed_out) override {
    if (e.kind == Event::Kind::Token && (!e.text.empty() || logprobs_)) {
      json lp = nullptr;
      if (logprobs_) {
        size_t& offset = offsets_[e.choice];
        lp = legacy_logprobs_json({TokenInfo{e.token, e.piece, e.logprob.logprob, e.top, offset}}, tok_);
        offset += e.text.size();
      }
      return chunk({{"index", e.choice}, {"text", e.text}, {"logprobs", lp}, {"finish_reason", nullptr}});
    }
    if (e.kind == Event::Kind::ChoiceDone) {
      return chunk({{"index", e.choice}, {"text", e.text}, {"logprobs", nullptr},
                    {"finish_reason", finish_name(e.finish, timed_out)}});
    }
    return {};
  }

 private:
  std::map<int, size_t> offsets_;
};

}  // namespace

std::shared_ptr<SseFormatter> chat_stream_formatter(ResponseMeta meta, bool logprobs, bool include_usage,
                                                    const Tokenizer& tok) {
  return std::make_shared<ChatStream>(std::move(meta), "chat.completion.chunk", logprobs, include_usage, tok);
}

std::shared_ptr<SseFormatter> completion_stream_formatter(ResponseMeta meta, bool logprobs, bool include_usage,
                                                          const Tokenizer& tok) {
  return std::make_shared<CompletionStream>(std::move(meta), "text_completion", logprobs, include_usage, tok);
}

}  // namespace tessera::server
