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
                   const Tokenizer& tok, const ReplyPlan& plan) {
  json r = envelope(meta, "chat.completion");
  json choices = json::array();
  for (size_t i = 0; i < out.choices.size(); ++i) {
    const ChoiceOutput& c = out.choices[i];
    bool has_calls = false;
    json message = reply_message(plan, c.text, has_calls);
    choices.push_back({{"index", i},
                       {"message", std::move(message)},
                       {"logprobs", logprobs ? chat_logprobs_json(c.tokens, tok) : json(nullptr)},
                       {"finish_reason", has_calls ? "tool_calls" : finish_name(c.finish, timed_out)}});
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
  ChatStream(ResponseMeta meta, const char* object, bool logprobs, bool include_usage, const Tokenizer& tok,
             ReplyPlan plan)
      : OpenAiStream(std::move(meta), object, logprobs, include_usage, tok), plan_(std::move(plan)) {}

  std::string event(const Event& e, bool timed_out) override {
    std::string out;
    if (started_.insert(e.choice).second) {
      out += chunk({{"index", e.choice}, {"delta", {{"role", "assistant"}, {"content", ""}}},
                    {"logprobs", nullptr}, {"finish_reason", nullptr}});
    }
    if (plan_.parse) return out + parsed_event(e, timed_out);
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
  // The reply through its choice's StreamParser: content, reasoning_content and
  // tool_calls deltas as OpenAI streams them (a call's id and name first, then its
  // arguments).
  std::string parsed_event(const Event& e, bool timed_out) {
    auto [it, fresh] = parsers_.try_emplace(e.choice, plan_.format, plan_.options);
    tool_calls::StreamParser& parser = it->second;
    std::string out;
    if (e.kind == Event::Kind::Token) {
      json lp = nullptr;
      if (logprobs_) lp = chat_logprobs_json({TokenInfo{e.token, e.piece, e.logprob.logprob, e.top, 0}}, tok_);
      out += delta_chunks(e.choice, parser.feed(e.text), lp);
    } else if (e.kind == Event::Kind::ChoiceDone) {
      tool_calls::Delta d = parser.feed(e.text);
      tool_calls::Delta rest = parser.finish();
      out += delta_chunks(e.choice, d, nullptr);
      out += delta_chunks(e.choice, rest, nullptr);
      const bool calls = called_.count(e.choice) > 0;
      out += chunk({{"index", e.choice}, {"delta", json::object()}, {"logprobs", nullptr},
                    {"finish_reason", calls ? "tool_calls" : finish_name(e.finish, timed_out)}});
    }
    return out;
  }

  std::string delta_chunks(int choice, const tool_calls::Delta& d, const json& lp) {
    std::string out;
    if (!d.reasoning.empty()) {
      out += chunk({{"index", choice}, {"delta", {{"reasoning_content", d.reasoning}}}, {"logprobs", nullptr},
                    {"finish_reason", nullptr}});
    }
    if (!d.content.empty() || (!lp.is_null() && d.calls.empty())) {
      out += chunk({{"index", choice}, {"delta", {{"content", d.content}}}, {"logprobs", lp}, {"finish_reason", nullptr}});
    }
    for (const tool_calls::Delta::CallDelta& c : d.calls) {
      called_.insert(choice);
      json call = {{"index", c.index}};
      json fn = json::object();
      if (!c.id.empty()) {
        call["id"] = c.id;
        call["type"] = "function";
      }
      if (!c.name.empty()) fn["name"] = c.name;
      fn["arguments"] = c.arguments;
      call["function"] = fn;
      out += chunk({{"index", choice}, {"delta", {{"tool_calls", json::array({call})}}}, {"logprobs", nullptr},
                    {"finish_reason", nullptr}});
    }
    return out;
  }

  std::set<int> started_;
  ReplyPlan plan_;
  std::map<int, tool_calls::StreamParser> parsers_;
  std::set<int> called_;
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
                                                    const Tokenizer& tok, const ReplyPlan& plan) {
  return std::make_shared<ChatStream>(std::move(meta), "chat.completion.chunk", logprobs, include_usage, tok, plan);
}

std::shared_ptr<SseFormatter> completion_stream_formatter(ResponseMeta meta, bool logprobs, bool include_usage,
                                                          const Tokenizer& tok) {
  return std::make_shared<CompletionStream>(std::move(meta), "text_completion", logprobs, include_usage, tok);
}

}  // namespace tessera::server
