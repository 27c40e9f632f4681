// Logit bias and the repetition / frequency / presence penalties.
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>

#include "tessera/sampler.h"

namespace tessera {

void apply_logit_bias(Candidates& c, std::span<const LogitBias> biases) {
  if (biases.empty()) return;
  std::unordered_map<TokenId, float> by_id;
  for (const LogitBias& b : biases) by_id[b.token] += b.bias;
  for (Candidate& t : c.items) {
    if (auto it = by_id.find(t.id); it != by_id.end()) t.logit += it->second;
  }
  c.sorted = false;
}

void apply_penalties(Candidates& c, std::span<const TokenId> recent, float repeat, float frequency,
                     float presence) {
  if (recent.empty()) return;
  std::unordered_map<TokenId, int> counts;
  for (TokenId id : recent) ++counts[id];
  for (Candidate& t : c.items) {
    const auto it = counts.find(t.id);
    if (it == counts.end()) continue;
    // Once per token, whatever its count (llama.cpp): shrink towards zero / push down.
    t.logit = t.logit <= 0.0f ? t.logit * repeat : t.logit / repeat;
    t.logit -= static_cast<float>(it->second) * frequency + presence;
  }
  c.sorted = false;
}

Result<LogitBias> parse_logit_bias(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return Status::error("logit bias '" + std::string(text) + "': " + why +
                         " (expected ID+BIAS or ID-BIAS, e.g. 15043+1.5 or 2-inf)");
  };
  LogitBias out;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const auto [after_id, ec] = std::from_chars(begin, end, out.token);
  if (ec != std::errc() || after_id == begin) return bad("no token id");
  if (out.token < 0) return bad("negative token id");
  if (after_id == end || (*after_id != '+' && *after_id != '-'))
    return bad("no '+' or '-' after the id");
  const bool negative = *after_id == '-';
  const std::string_view rest(after_id + 1, static_cast<size_t>(end - after_id - 1));
  float magnitude = 0.0f;
  if (rest == "inf") {
    magnitude = std::numeric_limits<float>::infinity();
  } else {
    const auto [after_bias, ec2] =
        std::from_chars(rest.data(), rest.data() + rest.size(), magnitude);
    if (ec2 != std::errc() || after_bias != rest.data() + rest.size() || rest.empty() ||
        rest[0] == '-' || rest[0] == '+' || !std::isfinite(magnitude)) {
      return bad("the bias is not a number");
    }
  }
  out.bias = negative ? -magnitude : magnitude;
  return out;
}

}  // namespace tessera
