// StreamParser and parse_reply: one incremental reader of a reply, given the whole text at
// once by parse_reply.
//
// The text not yet decided waits in `pending_`. Each feed looks at it from its start:
// - Start: a thinking block may open the reply (only when reasoning is extracted).
// - Reasoning: up to the closing tag; text that may begin the tag is held back.
// - Content: up to the earliest opener of a block (syntax.h); text that may begin an
//   opener is held back, and so is trailing whitespace (it is dropped when a block
//   follows). The block parser then says whether the block is complete (its calls are
//   emitted and the text after it continues), unfinished (wait) or no block (its opener
//   becomes content).
// Every decision depends only on text already seen and is taken once the text that
// settles it has arrived, so the deltas are the same however the text is cut. A block
// still being written is read again from its opener at each feed: quadratic in its
// length, which is fine at the lengths calls have.
#include <algorithm>

#include "core/check.h"
#include "runtime/tool_calls/syntax.h"
#include "tessera/tool_calls.h"

namespace tessera::tool_calls {
namespace {

bool is_space(char c) { return json::is_space(c); }

/// The end of `s[0, end)` without its trailing whitespace.
size_t trim_end(std::string_view s, size_t end) {
  while (end > 0 && is_space(s[end - 1])) --end;
  return end;
}

/// `end`, moved back to the start of a UTF-8 character that s[0, end) would cut.
size_t utf8_boundary(std::string_view s, size_t end) {
  size_t lead = end;
  while (lead > 0 && end - lead < 4 && (static_cast<uint8_t>(s[lead - 1]) & 0xC0) == 0x80) --lead;
  if (lead == 0) return end;
  const auto c = static_cast<uint8_t>(s[lead - 1]);
  const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  return end - (lead - 1) < need ? lead - 1 : end;
}

/// The earliest i >= from where s[i..] is a proper prefix of `word` (s ends inside it).
size_t partial_start(std::string_view s, std::string_view word, size_t from = 0) {
  const size_t begin = std::max(from, s.size() >= word.size() ? s.size() - word.size() + 1 : 0);
  for (size_t i = begin; i < s.size(); ++i) {
    if (word.starts_with(s.substr(i))) return i;
  }
  return std::string_view::npos;
}

/// A call id: "call_" + 24 letters and digits, or (Mistral) 9 of them.
std::string call_id(uint64_t seed, int index, bool mistral) {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  uint64_t state = seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(index + 1));
  const auto next = [&state] {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlnum[next() % 62];
  return id;
}

}  // namespace

struct StreamParser::Impl {
  enum class Mode { Start, Reasoning, Content };

  Impl(Format f, const ParseOptions& o)
      : format(f),
        syntax(syntax_of(f)),
        options(o),
        mode(o.extract_reasoning ? Mode::Start : Mode::Content) {}

  Delta feed(std::string_view piece, bool final);
  bool start();
  bool reasoning();
  bool content();
  /// The block at pending[cut] (opened by `opener`); false when it must wait.
  bool block(size_t cut, std::string_view opener);
  /// Where the earliest opener starts (npos: none), and the text that opens it.
  std::pair<size_t, std::string_view> find_opener() const;
  /// Where text that may begin an opener starts (npos: none).
  size_t find_partial_opener() const;

  void emit_content(size_t n) {
    if (n == 0) return;
    out.content.append(pending, 0, n);
    pending.erase(0, n);
    at_start = false;
  }
  /// Drops leading whitespace while skip_space is set; false when nothing else is left.
  bool drop_space() {
    if (!skip_space) return true;
    const auto first = std::find_if_not(pending.begin(), pending.end(), is_space);
    pending.erase(pending.begin(), first);
    if (pending.empty()) return false;
    skip_space = false;
    return true;
  }

  Format format;
  const Syntax& syntax;
  ParseOptions options;
  Mode mode;
  std::string pending;
  bool final = false;
  bool finished = false;
  bool at_start = true;  // nothing but whitespace, blocks and the thinking before: start
                         // openers count (a forced grammar lets thinking come first)
  bool skip_space = false;  // drop whitespace (after a block or the reasoning)
  int n_calls = 0;
  Delta out;
};

Delta StreamParser::Impl::feed(std::string_view piece, bool is_final) {
  out = Delta{};
  if (finished) return out;
  pending.append(piece);
  final = is_final;
  finished = is_final;
  for (bool more = true; more;) {
    switch (mode) {
      case Mode::Start:
        more = start();
        break;
      case Mode::Reasoning:
        more = reasoning();
        break;
      case Mode::Content:
        more = content();
        break;
    }
  }
  return std::move(out);
}

bool StreamParser::Impl::start() {
  const size_t first = static_cast<size_t>(
      std::find_if_not(pending.begin(), pending.end(), is_space) - pending.begin());
  const std::string_view rest = std::string_view(pending).substr(first);
  if (rest.starts_with(syntax.think_open)) {
    pending.erase(0, first + syntax.think_open.size());
  } else if (!final && syntax.think_open.starts_with(rest)) {
    return false;  // may still open a thinking block
  } else if (!options.reasoning_open) {
    mode = Mode::Content;
    return true;
  }
  mode = Mode::Reasoning;
  skip_space = true;
  return true;
}

bool StreamParser::Impl::reasoning() {
  if (!drop_space()) return false;
  const size_t close = pending.find(syntax.think_close);
  if (close != std::string::npos) {
    out.reasoning.append(pending, 0, trim_end(pending, close));
    pending.erase(0, close + syntax.think_close.size());
    mode = Mode::Content;
    skip_space = true;
    return true;
  }
  if (final) {
    out.reasoning.append(pending, 0, trim_end(pending, pending.size()));
    pending.clear();
    return false;
  }
  const size_t held = std::min(pending.size(), partial_start(pending, syntax.think_close));
  const size_t end = utf8_boundary(pending, trim_end(pending, held));
  out.reasoning.append(pending, 0, end);
  pending.erase(0, end);
  return false;
}

std::pair<size_t, std::string_view> StreamParser::Impl::find_opener() const {
  size_t best = std::string::npos;
  std::string_view opener;
  for (const std::string_view o : syntax.openers) {
    const size_t at = pending.find(o);
    if (at < best) best = at, opener = o;
  }
  if (at_start) {
    const size_t first = static_cast<size_t>(
        std::find_if_not(pending.begin(), pending.end(), is_space) - pending.begin());
    for (const std::string_view o : syntax.start_openers) {
      if (first < best && first < pending.size() && pending.compare(first, o.size(), o) == 0)
        best = first, opener = o;
    }
  }
  return {best, opener};
}

size_t StreamParser::Impl::find_partial_opener() const {
  size_t best = std::string::npos;
  for (const std::string_view o : syntax.openers) best = std::min(best, partial_start(pending, o));
  if (at_start) {
    const size_t first = static_cast<size_t>(
        std::find_if_not(pending.begin(), pending.end(), is_space) - pending.begin());
    for (const std::string_view o : syntax.start_openers) {
      best = std::min(best, partial_start(pending, o, first) == first ? first : std::string::npos);
    }
  }
  return best;
}

bool StreamParser::Impl::content() {
  if (!drop_space()) return false;
  if (!syntax.parse) {
    emit_content(final ? pending.size() : utf8_boundary(pending, pending.size()));
    return false;
  }
  const auto [cut, opener] = find_opener();
  const size_t partial = final ? std::string::npos : find_partial_opener();
  if (cut != std::string::npos && cut <= partial) {
    const size_t before = trim_end(pending, cut);  // the whitespace after waits for the verdict
    emit_content(before);
    return block(cut - before, opener);
  }
  if (final) {
    emit_content(pending.size());
    return false;
  }
  const size_t end = std::min(partial, pending.size());
  emit_content(utf8_boundary(pending, trim_end(pending, end)));
  return false;
}

bool StreamParser::Impl::block(size_t cut, std::string_view opener) {
  Block b = syntax.parse(std::string_view(pending).substr(cut), final);
  if (b.kind == Block::NeedMore) return false;
  if (b.kind == Block::NotABlock) {
    emit_content(cut + opener.size());
    at_start = false;  // (a start opener may be empty)
    return true;
  }
  TESSERA_CHECK(b.length > 0);
  pending.erase(0, cut + b.length);
  out.content += b.content;
  for (ParsedCall& call : b.calls) {
    const int index = n_calls++;
    out.calls.push_back({index, call_id(options.id_seed, index, format == Format::Mistral),
                         std::move(call.name), ""});
    out.calls.push_back({index, "", "", std::move(call.arguments)});
  }
  skip_space = true;
  return true;
}

StreamParser::StreamParser(Format format, const ParseOptions& options)
    : impl_(std::make_unique<Impl>(format, options)) {}
StreamParser::StreamParser(Format format, bool extract_reasoning)
    : StreamParser(format, ParseOptions{.extract_reasoning = extract_reasoning}) {}
StreamParser::~StreamParser() = default;
StreamParser::StreamParser(StreamParser&&) noexcept = default;
StreamParser& StreamParser::operator=(StreamParser&&) noexcept = default;

Delta StreamParser::feed(std::string_view piece) { return impl_->feed(piece, false); }
Delta StreamParser::finish() { return impl_->feed("", true); }

Reply parse_reply(Format format, std::string_view text, const ParseOptions& options) {
  StreamParser parser(format, options);
  const Delta d = parser.feed(text);
  const Delta rest = parser.finish();
  Reply reply;
  for (const Delta* part : {&d, &rest}) {
    reply.content += part->content;
    reply.reasoning += part->reasoning;
    for (const Delta::CallDelta& c : part->calls) {
      if (static_cast<size_t>(c.index) == reply.calls.size())
        reply.calls.push_back({c.id, c.name, ""});
      reply.calls[static_cast<size_t>(c.index)].arguments += c.arguments;
    }
  }
  return reply;
}

Reply parse_reply(Format format, std::string_view text, bool extract_reasoning) {
  return parse_reply(format, text, ParseOptions{.extract_reasoning = extract_reasoning});
}

}  // namespace tessera::tool_calls
