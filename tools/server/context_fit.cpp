#include "server/context_fit.h"

#include <algorithm>
#include <string>

#include "server/errors.h"

namespace tessera::server {
namespace {

/// The messages that may be left out, oldest first: the non-system ones before the last
/// user message (before the last message when there is no user message).
std::vector<size_t> droppable(std::span<const ChatMessage> messages) {
  size_t last_user = messages.empty() ? 0 : messages.size() - 1;
  for (size_t i = messages.size(); i-- > 0;) {
    if (messages[i].role == "user") {
      last_user = i;
      break;
    }
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < last_user; ++i) {
    if (messages[i].role != "system") out.push_back(i);
  }
  return out;
}

/// How many of `drop` may be left out so that whole turns go: k where the next one kept
/// is a user message, or all of them. Ascending.
std::vector<size_t> turn_cuts(std::span<const ChatMessage> messages, const std::vector<size_t>& drop) {
  std::vector<size_t> cuts;
  for (size_t k = 1; k <= drop.size(); ++k) {
    if (k == drop.size() || messages[drop[k]].role == "user") cuts.push_back(k);
  }
  return cuts;
}

std::vector<ChatMessage> without_first(std::span<const ChatMessage> messages, const std::vector<size_t>& drop,
                                       size_t k) {
  std::vector<ChatMessage> kept;
  size_t next = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (next < k && drop[next] == i) {
      ++next;
      continue;
    }
    kept.push_back(messages[i]);
  }
  return kept;
}

ApiError too_long(int64_t n_prompt, int64_t n_ctx) {
  return ApiError(400,
                  "the prompt does not fit a sequence's context of " + std::to_string(n_ctx) +
                      " tokens even with the older messages left out: what must stay (the system messages and "
                      "the last user message) takes " + std::to_string(n_prompt) + " tokens",
                  "invalid_request_error", "messages", "context_length_exceeded");
}

}  // namespace

int32_t fit_max_tokens(int32_t max_tokens, int64_t n_prompt, int64_t n_ctx) {
  if (max_tokens < 0) return max_tokens;
  return int32_t(std::clamp<int64_t>(n_ctx - n_prompt, 0, max_tokens));
}

bool truncate_prompt(std::vector<TokenId>& prompt, int64_t n_ctx, int64_t n_keep, TokenId bos) {
  if (int64_t(prompt.size()) < n_ctx) return false;
  const int64_t target = std::max<int64_t>(n_ctx / 2, 1);
  int64_t keep = n_keep < 0 ? target - 1 : n_keep;
  if (!prompt.empty() && prompt[0] == bos) keep = std::max<int64_t>(keep, 1);
  keep = std::min(keep, target - 1);
  std::vector<TokenId> cut(prompt.begin(), prompt.begin() + keep);
  cut.insert(cut.end(), prompt.end() - (target - keep), prompt.end());
  prompt = std::move(cut);
  return true;
}

int64_t answer_room(int32_t max_tokens, int64_t n_ctx) {
  const int64_t quarter = std::max<int64_t>(n_ctx / 4, 1);
  return max_tokens < 0 ? quarter : std::clamp<int64_t>(max_tokens, 1, quarter);
}

ChatFit fit_chat(std::span<const ChatMessage> messages, int64_t n_ctx, int64_t room, const ChatRender& render) {
  ChatFit fit{render(messages), 0};
  auto leaves_room = [&](const std::vector<TokenId>& p) { return int64_t(p.size()) + room <= n_ctx; };
  if (leaves_room(fit.prompt)) return fit;
  const std::vector<size_t> drop = droppable(messages);
  const std::vector<size_t> cuts = turn_cuts(messages, drop);
  // The fewest turns that leave room: the prompt shrinks as turns go, so bisect the cuts
  // (a few renderings, however long the history).
  size_t lo = 0, hi = cuts.size();  // cuts[hi - 1] is the last to try; found: the first that fits
  std::vector<TokenId> best;
  size_t best_k = 0;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    std::vector<TokenId> p = render(without_first(messages, drop, cuts[mid]));
    if (leaves_room(p)) {
      best = std::move(p);
      best_k = cuts[mid];
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  if (best_k == 0 && !cuts.empty()) {  // no cut leaves the room: leave out all that may go
    best_k = cuts.back();
    best = render(without_first(messages, drop, best_k));
  }
  if (best_k > 0) fit = {std::move(best), int(best_k)};
  if (int64_t(fit.prompt.size()) >= n_ctx) throw too_long(int64_t(fit.prompt.size()), n_ctx);
  return fit;
}

}  // namespace tessera::server
