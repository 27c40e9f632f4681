#include "tokenizer/pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <utility>

#include "core/check.h"
#include "tessera/log.h"
#include "tokenizer/spm.h"

namespace tessera::tok {
namespace {

/// The members of llama.cpp's whitespace set, as the inside of a PCRE2 class.
constexpr std::string_view kSpaceClass =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
    "\\x{3000}";

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
using CodePtr = std::unique_ptr<pcre2_code, CodeDeleter>;

/// Match data, match context and JIT stack of one thread: split() allocates nothing per
/// call and threads never share them.
class MatchState {
 public:
  MatchState()
      : data_(pcre2_match_data_create(16, nullptr)),
        context_(pcre2_match_context_create(nullptr)),
        stack_(pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr)) {
    TESSERA_CHECK_MSG(data_ && context_ && stack_, "out of memory for PCRE2 match state");
    pcre2_jit_stack_assign(context_, nullptr, stack_);
  }
  MatchState(const MatchState&) = delete;
  MatchState& operator=(const MatchState&) = delete;
  ~MatchState() {
    pcre2_jit_stack_free(stack_);
    pcre2_match_context_free(context_);
    pcre2_match_data_free(data_);
  }

  /// Matches `code` against subject[0, len) from `start`; the match span, or a negative
  /// PCRE2 code (PCRE2_ERROR_NOMATCH, or a real error).
  int match(const pcre2_code* code, const char* subject, size_t len, size_t start, uint32_t options,
            Span* span) {
    const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject), len, start,
                               options | PCRE2_NO_UTF_CHECK, data_, context_);
    if (rc < 0) return rc;
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data_);
    *span = {ovector[0], ovector[1]};
    return rc;
  }

 private:
  pcre2_match_data* data_;
  pcre2_match_context* context_;
  pcre2_jit_stack* stack_;
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

/// Appends the pieces of text[piece.begin, piece.end) under `code` to `out`.
void split_piece(const pcre2_code* code, std::string_view text, Span piece,
                 std::vector<Span>& out) {
  MatchState& state = match_state();
  const char* subject = text.data() + piece.begin;
  const size_t len = piece.end - piece.begin;
  const auto emit = [&](size_t begin, size_t end) {
    if (end > begin) out.push_back({piece.begin + begin, piece.begin + end});
  };
  size_t start = 0;  // where the next search starts
  size_t last = 0;   // end of the last match: the current gap starts here
  uint32_t options = 0;
  while (start <= len) {
    Span m{};
    const int rc = state.match(code, subject, len, start, options, &m);
    if (rc == PCRE2_ERROR_NOMATCH) {
      if (options == 0 || start >= len) break;
      // No non-empty match where the last empty one was: move on by one character.
      start += std::min(utf8_sequence_length(static_cast<uint8_t>(subject[start])), len - start);
      options = 0;
      continue;
    }
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      log(LogLevel::Warn, "tokenizer: pre-tokenizer regex failed (%s); keeping %zu bytes whole",
          reinterpret_cast<const char*>(message), len - last);
      break;
    }
    emit(last, m.begin);
    emit(m.begin, m.end);
    last = m.end;
    start = m.end;
    options = m.end == m.begin ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
  }
  emit(last, len);
}

}  // namespace

std::string to_pcre2_pattern(std::string_view regex) {
  std::string out;
  out.reserve(regex.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < regex.size(); ++i) {
    const char c = regex[i];
    if (c == '\\' && i + 1 < regex.size()) {
      const char next = regex[++i];
      if (next == 's') {
        out += in_class ? std::string(kSpaceClass) : "[" + std::string(kSpaceClass) + "]";
      } else if (next == 'S' && !in_class) {
        out += "[^" + std::string(kSpaceClass) + "]";
      } else {
        out += c;
        out += next;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < regex.size() && regex[i + 1] == '^') out += regex[++i];
      if (i + 1 < regex.size() && regex[i + 1] == ']') out += regex[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

struct PreTokenizer::Impl {
  std::vector<CodePtr> codes;
};

PreTokenizer::PreTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

Result<PreTokenizer> PreTokenizer::compile(const std::vector<std::string_view>& regexes) {
  auto impl = std::make_unique<Impl>();
  for (std::string_view regex : regexes) {
    const std::string pattern = to_pcre2_pattern(regex);
    int error = 0;
    PCRE2_SIZE offset = 0;
    CodePtr code(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                               PCRE2_UTF | PCRE2_DOLLAR_ENDONLY, &error, &offset, nullptr));
    if (!code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      return Status::error("pre-tokenizer regex '" + std::string(regex) +
                           "': " + reinterpret_cast<const char*>(message) + " at offset " +
                           std::to_string(offset) + " of its PCRE2 form");
    }
    // Without JIT (unsupported platform) PCRE2 interprets the pattern: slower, same result.
    pcre2_jit_compile(code.get(), PCRE2_JIT_COMPLETE);
    impl->codes.push_back(std::move(code));
  }
  return PreTokenizer(std::move(impl));
}

void PreTokenizer::split(std::string_view text, std::vector<Span>& pieces) const {
  pieces.clear();
  if (text.empty()) return;
  pieces.push_back({0, text.size()});
  std::vector<Span> next;
  for (const CodePtr& code : impl_->codes) {
    next.clear();
    next.reserve(pieces.size() + text.size() / 4);
    for (const Span& piece : pieces) split_piece(code.get(), text, piece, next);
    pieces.swap(next);
  }
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  std::vector<Span> spans;
  split(text, spans);
  std::vector<std::string> out;
  out.reserve(spans.size());
  for (const Span& s : spans) out.emplace_back(text.substr(s.begin, s.end - s.begin));
  return out;
}

}  // namespace tessera::tok
