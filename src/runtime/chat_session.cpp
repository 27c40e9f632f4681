// ChatSession: a conversation kept in a context, one turn's tokens at a time. When a turn
// does not fit, the oldest turns make room and what remains is evaluated again.
#include <algorithm>
#include <string>
#include <vector>

#include "tessera/chat.h"
#include "tessera/log.h"

namespace tessera {

bool can_end_turn(const ChatTemplate& chat_template, const Tokenizer& tokenizer) {
  const std::string_view marker = chat_template.end_marker();
  return !marker.empty() && tokenizer.encode(marker, false, /*parse_special=*/true).size() == 1;
}

ChatSession::ChatSession(Context& context, const Tokenizer& tokenizer, ChatTemplate chat_template,
                         std::string system_prompt)
    : context_(&context),
      tokenizer_(&tokenizer),
      template_(chat_template),
      system_prompt_(std::move(system_prompt)),
      stream_(tokenizer) {}

int64_t ChatSession::reply_room() const {
  if (reply_room_ <= 0) return 0;
  const int64_t suffix = int64_t(
      tokenizer_->encode(template_.assistant_suffix(), false, /*parse_special=*/true).size());
  return std::min(reply_room_ + suffix, context_->n_ctx() / 2);
}

Result<std::vector<TokenId>> ChatSession::encode_all(std::span<const ChatMessage> messages,
                                                     bool generation_prompt) const {
  Result<std::string> text = template_.format(messages, generation_prompt);
  if (!text) return text.status();
  return tokenizer_->encode(*text, true, /*parse_special=*/true);
}

Result<std::vector<TokenId>> ChatSession::fit(std::vector<ChatMessage>& messages,
                                              bool generation_prompt, int64_t room,
                                              const char* what) {
  const size_t first_turn = !messages.empty() && messages[0].role == "system" ? 1 : 0;
  const int64_t n_ctx = context_->n_ctx();
  int dropped = 0;
  Result<std::vector<TokenId>> encoded = encode_all(messages, generation_prompt);
  if (!encoded) return encoded.status();
  std::vector<TokenId> tokens = std::move(*encoded);
  while (int64_t(tokens.size()) + room > n_ctx) {
    // The oldest turn runs from its user message to the next one.
    size_t next = first_turn + 1;
    while (next < messages.size() && messages[next].role != "user") ++next;
    if (next >= messages.size()) break;  // the last turn stays
    messages.erase(messages.begin() + ptrdiff_t(first_turn), messages.begin() + ptrdiff_t(next));
    ++dropped;
    encoded = encode_all(messages, generation_prompt);
    if (!encoded) return encoded.status();
    tokens = std::move(*encoded);
  }
  if (int64_t(tokens.size()) > n_ctx) {
    return Status::error(std::string("chat: the context is full: ") + what + " needs " +
                         std::to_string(tokens.size()) + " tokens" +
                         (first_turn ? " with the system message" : "") + ", more than the " +
                         std::to_string(n_ctx) + " of the context");
  }
  dropped_turns_ = dropped;
  return tokens;
}

Status ChatSession::evaluate_again(std::vector<ChatMessage> messages,
                                   std::span<const TokenId> tokens) {
  context_->clear();
  messages_.clear();
  unclosed_ = false;
  TESSERA_RETURN_IF_ERROR(context_->decode(tokens));
  messages_ = std::move(messages);
  last_turn_tokens_ = int64_t(tokens.size());
  log(LogLevel::Info,
      "chat: %d oldest turns dropped; the conversation (%lld tokens) evaluated again",
      dropped_turns_, static_cast<long long>(tokens.size()));
  return Status::ok();
}

Status ChatSession::add_user_message(std::string_view text) {
  if (replying_) return Status::error("chat: a reply is still open (end_reply() closes it)");
  dropped_turns_ = 0;
  const bool first = messages_.empty();
  std::vector<ChatMessage> added;
  if (first && !system_prompt_.empty()) added.push_back({"system", system_prompt_});
  added.push_back({"user", std::string(text)});
  // Special-token texts of the template ("<|im_start|>", ...) become their ids; BOS only
  // opens the conversation.
  // A Jinja template may render the history differently once this turn follows (no
  // delta): then the whole conversation is evaluated again.
  const Result<std::string> delta = template_.format_delta(messages_, added, true);
  std::vector<TokenId> tokens;
  if (delta) {
    tokens = tokenizer_->encode(*delta, first, /*parse_special=*/true);
    if (tokens.empty()) return Status::error("chat: the turn renders to no tokens");
  } else {
    std::vector<ChatMessage> all = messages_;
    all.insert(all.end(), added.begin(), added.end());
    Result<std::string> whole = template_.format(all, true);
    if (!whole) return whole.status();  // the template refuses the conversation
  }
  const int64_t left = context_->n_ctx() - context_->n_past();
  if (!delta || unclosed_ || int64_t(tokens.size()) + reply_room() > left) {
    // No room after the conversation: keep its most recent turns that fit with this one.
    std::vector<ChatMessage> all = messages_;
    all.insert(all.end(), added.begin(), added.end());
    Result<std::vector<TokenId>> fitted = fit(all, true, reply_room(), "this turn");
    if (!fitted) return fitted.status();
    TESSERA_RETURN_IF_ERROR(evaluate_again(std::move(all), *fitted));
    open_reply(true);
    return Status::ok();
  }
  TESSERA_RETURN_IF_ERROR(context_->decode(tokens));
  messages_.insert(messages_.end(), added.begin(), added.end());
  last_turn_tokens_ = int64_t(tokens.size());
  log(LogLevel::Info, "chat: user turn: %lld new tokens decoded, n_past %lld of %lld",
      static_cast<long long>(tokens.size()), static_cast<long long>(context_->n_past()),
      static_cast<long long>(context_->n_ctx()));

  open_reply(true);
  return Status::ok();
}

Status ChatSession::replace(std::vector<ChatMessage> messages) {
  if (replying_) return Status::error("chat: a reply is still open (end_reply() closes it)");
  const size_t first_turn = !messages.empty() && messages[0].role == "system" ? 1 : 0;
  for (size_t i = first_turn; i < messages.size(); ++i) {
    const char* role = (i - first_turn) % 2 == 0 ? "user" : "assistant";
    const char* article = (i - first_turn) % 2 == 0 ? "a " : "an ";
    if (messages[i].role != role) {
      return Status::error("messages[" + std::to_string(i) + "].role: '" + messages[i].role +
                           "' where " + article + role +
                           " message belongs (a system message may only come first; then "
                           "user and assistant messages take turns)");
    }
  }
  if (messages.size() > first_turn && messages.back().role != "assistant") {
    return Status::error("messages[" + std::to_string(messages.size() - 1) +
                         "]: the conversation ends with a user message; it must end with "
                         "the assistant's reply");
  }
  std::string system = first_turn ? messages[0].content : std::string();
  dropped_turns_ = 0;
  if (messages.size() == first_turn) {  // no turn yet: the system message waits for one
    reset();
  } else {
    // No reply room: what fits is kept, and the next turn makes room as it needs.
    Result<std::vector<TokenId>> fitted = fit(messages, false, 0, "the conversation's last turn");
    if (!fitted) return fitted.status();
    TESSERA_RETURN_IF_ERROR(evaluate_again(std::move(messages), *fitted));
  }
  system_prompt_ = std::move(system);
  return Status::ok();
}

void ChatSession::open_reply(bool open) {
  replying_ = open;
  reply_done_ = false;
  marker_seen_ = false;
  blank_line_seen_ = false;
  reply_.clear();
  pending_.clear();
  stream_.flush();
}

std::span<const float> ChatSession::logits() const { return context_->logits(); }

bool ChatSession::context_full() const { return context_->n_past() >= context_->n_ctx(); }

int64_t ChatSession::n_past() const { return context_->n_past(); }

std::string ChatSession::take_safe_text() {
  // Hold back the longest tail of pending_ that could begin the end marker, and a final
  // newline that could begin a blank line.
  const std::string_view marker = template_.end_marker();
  size_t keep = std::min(pending_.size(), marker.empty() ? 0 : marker.size() - 1);
  for (; keep > 0; --keep) {
    if (pending_.compare(pending_.size() - keep, keep, marker.substr(0, keep)) == 0) break;
  }
  if (stop_at_blank_line_ && !pending_.empty() && pending_.back() == '\n') {
    keep = std::max<size_t>(keep, 1);
  }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

size_t ChatSession::blank_line_stop() const {
  if (!stop_at_blank_line_) return std::string::npos;
  // Blank lines before the reply's first text do not end it.
  static constexpr const char* kSpace = " \t\r\n";
  const bool has_text = reply_.find_first_not_of(kSpace) != std::string::npos;
  const size_t from = has_text ? 0 : pending_.find_first_not_of(kSpace);
  return from == std::string::npos ? from : pending_.find("\n\n", from);
}

Result<ReplyStep> ChatSession::push(TokenId token) {
  if (!replying_ || reply_done_) return Status::error("chat: no reply is open");
  ReplyStep step;
  if (tokenizer_->is_eog(token)) {
    step.done = reply_done_ = true;
    return step;
  }
  if (context_full()) {
    return Status::error("chat: the context is full (" + std::to_string(context_->n_ctx()) +
                         " tokens)");
  }
  const TokenId one[] = {token};
  TESSERA_RETURN_IF_ERROR(context_->decode(one));
  pending_ += stream_.push(token);
  const std::string_view marker = template_.end_marker();
  const size_t at_marker = marker.empty() ? std::string::npos : pending_.find(marker);
  const size_t at_blank = blank_line_stop();
  if (const size_t at = std::min(at_marker, at_blank); at != std::string::npos) {
    step.text = pending_.substr(0, at);
    pending_.clear();
    (at == at_marker ? marker_seen_ : blank_line_seen_) = true;
    step.done = reply_done_ = true;
  } else {
    step.text = take_safe_text();
  }
  reply_ += step.text;
  return step;
}

Result<std::string> ChatSession::end_reply() {
  if (!replying_) return Status::error("chat: no reply is open");
  // What was held back is part of the reply, unless it followed the end of the reply.
  std::string rest = pending_ + stream_.flush();
  pending_.clear();
  if (marker_seen_ || blank_line_seen_) rest.clear();
  reply_ += rest;

  // Close the turn as the template would have written it. When the model wrote the end
  // marker itself, only what follows the marker is missing.
  std::string suffix = template_.assistant_suffix();
  if (marker_seen_) {
    const size_t at = suffix.find(template_.end_marker());
    if (at != std::string::npos) suffix.erase(0, at + template_.end_marker().size());
  }
  if (!suffix.empty()) {
    const std::vector<TokenId> tokens = tokenizer_->encode(suffix, false, /*parse_special=*/true);
    if (int64_t(tokens.size()) <= context_->n_ctx() - context_->n_past()) {
      if (!tokens.empty()) TESSERA_RETURN_IF_ERROR(context_->decode(tokens));
    } else {
      unclosed_ = true;  // the next turn starts from a fresh context
    }
  }
  messages_.push_back({"assistant", reply_});
  log(LogLevel::Info, "chat: reply closed: %zu bytes, n_past %lld of %lld", reply_.size(),
      static_cast<long long>(context_->n_past()), static_cast<long long>(context_->n_ctx()));
  open_reply(false);
  return rest;
}

void ChatSession::reset() {
  context_->clear();
  messages_.clear();
  open_reply(false);
  unclosed_ = false;
  last_turn_tokens_ = 0;
  dropped_turns_ = 0;
}

}  // namespace tessera
