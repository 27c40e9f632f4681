// Grammars that constrain generation, written in GBNF (llama.cpp's syntax):
//
//     root   ::= answer ("," ws answer)*     # rules: name ::= alternatives
//     answer ::= "yes" | "no" | [0-9]+        # literals, classes, | ( ) * + ? {m,n}
//     ws     ::= [ \t]*                       # `.` is any character
//
// A rule ends with its line, except inside parentheses, after `::=` or `|`, and where the
// next line starts with `|`. Escapes: \xHH \uHHHH \UHHHHHHHH \t \n \r \\ \" \[ \].
//
// A Grammar is the parsed text; a GrammarMatcher follows a text through it code point by
// code point; make_grammar_step turns it into a sampler step that forbids every token
// whose text would leave the grammar, and make_lazy_grammar_step into one that does so
// only from a trigger text on.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/sampler.h"
#include "tessera/status.h"

namespace tessera {

class Tokenizer;
namespace grammar {
struct Rules;
}

/// A parsed GBNF grammar. Immutable: share one between matchers and threads.
class Grammar {
 public:
  /// Parses `text`. Errors read "<source>:LINE:COLUMN: what" (columns count characters):
  /// a missing '::=', an unterminated string or character class, an unknown escape, an
  /// unclosed '(', a misplaced repetition, an undefined rule, a rule defined twice, no
  /// `root` rule, left recursion, invalid UTF-8. And "<source>: the grammar is too
  /// ambiguous..." for a grammar whose start alone has more parse stacks than
  /// limits::kMaxGrammarStacks (it could accept no text).
  static Result<std::shared_ptr<const Grammar>> parse(std::string_view text,
                                                      std::string_view source = "grammar");
  /// The text of a grammar shipped with tessera (the files of grammars/, compiled in):
  /// "json", "arithmetic", "list", "chess". Empty when there is no such grammar.
  static std::string_view builtin(std::string_view name);
  /// The names builtin() knows, sorted.
  static std::vector<std::string> builtin_names();

  ~Grammar();
  /// Number of rules, those the parser made for groups and repetitions included.
  size_t n_rules() const;
  /// The rules (internal type, for the library's own layers).
  const grammar::Rules& rules() const { return *rules_; }

 private:
  explicit Grammar(std::unique_ptr<const grammar::Rules> rules);
  std::unique_ptr<const grammar::Rules> rules_;
};

/// Where a text stands in a grammar: the parse stacks after the code points accepted so
/// far, plus the bytes of a UTF-8 character not yet complete.
class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);
  ~GrammarMatcher();
  GrammarMatcher(const GrammarMatcher&);
  GrammarMatcher& operator=(const GrammarMatcher&);

  /// Advances by one code point. False (state unchanged) when the grammar forbids it here.
  bool accept_codepoint(uint32_t cpt);
  /// Advances by UTF-8 bytes; a character may be split across calls. False (state
  /// unchanged) when the text leaves the grammar or is not UTF-8.
  bool accept_text(std::string_view bytes);
  /// True when the text so far is a complete sentence of the grammar.
  bool can_end() const;
  /// True when the text is complete and nothing more may follow.
  bool is_complete() const;
  /// Back to the start of the grammar.
  void reset();

  /// The grammar followed.
  const Grammar& grammar() const { return *grammar_; }
  /// Internal state, for the grammar sampler step: the parse stacks and pending bytes.
  struct State;
  const State& state() const { return *state_; }

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::unique_ptr<State> state_;
};

/// The grammar as a sampler step: apply() sets the logit of every token that the grammar
/// forbids at this point to -inf (end-of-generation tokens are allowed only where the
/// grammar may end; tokens without text are forbidden); accept() advances the grammar
/// (an error for a forbidden token); done() is true once the grammar is complete or an
/// end-of-generation token was accepted. Token texts are decoded once, here;
/// `tokenizer` need not outlive the step. `render_special`: control tokens have their
/// text (Tokenizer::token_to_piece's flag), so that a grammar can ask for one
/// ("[TOOL_CALLS]", "<|python_tag|>": tool-call markers often are); otherwise they have
/// none and are forbidden (end-of-generation tokens aside).
std::unique_ptr<SamplerStep> make_grammar_step(std::shared_ptr<const Grammar> grammar,
                                               const Tokenizer& tokenizer,
                                               bool render_special = false);

/// A grammar that engages only once the generated text (prompt tokens not included)
/// contains a trigger: until then apply() constrains nothing and end-of-generation tokens
/// are free. The token that completes the earliest trigger is accepted as drawn; its text
/// from that trigger's first byte on (the trigger may have begun in earlier tokens) is
/// fed to the grammar, which constrains every token after it: the grammar's root must
/// therefore match from the trigger's first byte. accept() of that token is an error when
/// the grammar refuses the text after the trigger. `triggers` count anywhere;
/// `start_triggers` only where the text before them is whitespace (a call that must open
/// the reply). Empty triggers are ignored; with none, the grammar never engages. done():
/// engaged and complete. reset(): disengaged. Tool calls use it (tessera/tool_calls.h).
std::unique_ptr<SamplerStep> make_lazy_grammar_step(std::shared_ptr<const Grammar> grammar,
                                                    const Tokenizer& tokenizer,
                                                    std::vector<std::string> triggers,
                                                    std::vector<std::string> start_triggers = {},
                                                    bool render_special = false);

}  // namespace tessera
