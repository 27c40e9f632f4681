// ChatSession: a conversation kept in a context, one turn's tokens at a time.
#include <algorithm>
#include <string>
#include <vector>

#include "tessera/chat.h"
#include "tessera/log.h"

namespace tessera {

ChatSession::ChatSession(Context& context, const Tokenizer& tokenizer, ChatTemplate chat_template,
                         std::string system_prompt)
    : context_(&context),
      tokenizer_(&tokenizer),
      template_(chat_template),
      system_prompt_(std::move(system_prompt)),
      stream_(tokenizer) {}

Status ChatSession::add_user_message(std::string_view text) {
  if (replying_) return Status::error("chat: a reply is still open (end_reply() closes it)");
  if (unclosed_) {
    return Status::error("chat: the context is full: the last reply filled it (" +
                         std::to_string(context_->n_ctx()) + " tokens)");
  }
  const bool first = messages_.empty();
  std::vector<ChatMessage> added;
  if (first && !system_prompt_.empty()) added.push_back({"system", system_prompt_});
  added.push_back({"user", std::string(text)});
  // Special-token texts of the template ("<|im_start|>", ...) become their ids; BOS only
  // opens the conversation.
  const std::string delta = template_.format_delta(messages_, added, true);
  const std::vector<TokenId> tokens = tokenizer_->encode(delta, first, /*parse_special=*/true);
  if (tokens.empty()) return Status::error("chat: the turn renders to no tokens");
  const int64_t room = context_->n_ctx() - context_->n_past();
  if (int64_t(tokens.size()) > room) {
    return Status::error("chat: the context is full: this turn needs " +
                         std::to_string(tokens.size()) + " tokens, " + std::to_string(room) +
                         " of " + std::to_string(context_->n_ctx()) + " are left");
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

void ChatSession::open_reply(bool open) {
  replying_ = open;
  reply_done_ = false;
  marker_seen_ = false;
  reply_.clear();
  pending_.clear();
  stream_.flush();
}

std::span<const float> ChatSession::logits() const { return context_->logits(); }

bool ChatSession::context_full() const { return context_->n_past() >= context_->n_ctx(); }

int64_t ChatSession::n_past() const { return context_->n_past(); }

std::string ChatSession::take_safe_text() {
  // Hold back the longest tail of pending_ that could begin the end marker.
  const std::string_view marker = template_.end_marker();
  size_t keep = std::min(pending_.size(), marker.empty() ? 0 : marker.size() - 1);
  for (; keep > 0; --keep) {
    if (pending_.compare(pending_.size() - keep, keep, marker.substr(0, keep)) == 0) break;
  }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
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
  if (const size_t at = marker.empty() ? std::string::npos : pending_.find(marker);
      at != std::string::npos) {
    step.text = pending_.substr(0, at);
    pending_.clear();
    marker_seen_ = true;
    step.done = reply_done_ = true;
  } else {
    step.text = take_safe_text();
  }
  reply_ += step.text;
  return step;
}

Result<std::string> ChatSession::end_reply() {
  if (!replying_) return Status::error("chat: no reply is open");
  // What was held back is part of the reply, unless it followed the end marker.
  std::string rest = pending_ + stream_.flush();
  pending_.clear();
  if (marker_seen_) rest.clear();
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
      unclosed_ = true;  // no further turn can follow
    }
  }
  messages_.push_back({"assistant", reply_});
  open_reply(false);
  return rest;
}

void ChatSession::reset() {
  context_->clear();
  messages_.clear();
  open_reply(false);
  unclosed_ = false;
  last_turn_tokens_ = 0;
}

}  // namespace tessera
