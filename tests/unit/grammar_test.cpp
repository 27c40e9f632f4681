// GBNF grammars: parsing (valid grammars, errors with their exact line:column), matching
// code point by code point, and the sampler step against a brute-force check.
#include "tessera/grammar.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tessera/limits.h"
#include "tessera/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace tessera {
namespace {

std::shared_ptr<const Grammar> parse_ok(std::string_view text) {
  Result<std::shared_ptr<const Grammar>> g = Grammar::parse(text);
  EXPECT_TRUE(g.is_ok()) << g.status().message() << "\n" << text;
  return g ? *g : nullptr;
}

std::string parse_error(std::string_view text) {
  Result<std::shared_ptr<const Grammar>> g = Grammar::parse(text);
  return g.is_ok() ? std::string("(parsed)") : g.status().message();
}

/// Feeds `text` code point by code point: the index of the first refused code point, or
/// -1 when all are taken. `can_end` tells whether the text is then complete.
int first_refusal(const std::shared_ptr<const Grammar>& g, std::string_view text,
                  bool* can_end = nullptr) {
  GrammarMatcher m(g);
  int index = 0;
  for (size_t pos = 0; pos < text.size(); ++index) {
    const tok::Utf8Scan scan = tok::scan_utf8(text, pos);
    EXPECT_EQ(scan.kind, tok::Utf8Kind::Valid);
    if (!m.accept_codepoint(scan.cpt)) return index;
    pos += scan.len;
  }
  if (can_end) *can_end = m.can_end();
  return -1;
}

/// True when the whole text is a complete sentence of the grammar.
bool complete(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  bool can_end = false;
  return first_refusal(g, text, &can_end) == -1 && can_end;
}

TEST(GrammarParse, BuiltinGrammarsParse) {
  const std::vector<std::string> names = Grammar::builtin_names();
  for (const char* expected : {"arithmetic", "chess", "json", "list"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const std::string& name : names) {
    Result<std::shared_ptr<const Grammar>> g = Grammar::parse(Grammar::builtin(name), name);
    EXPECT_TRUE(g.is_ok()) << name << ": " << g.status().message();
  }
  EXPECT_TRUE(Grammar::builtin("no-such-grammar").empty());
}

TEST(GrammarParse, SyntaxThatParses) {
  // Nested groups, every repetition form, classes, escapes, comments, `.`, continuation
  // lines inside parentheses and after `|`, and a line starting with `|`.
  const char* text = R"gbnf(# a comment line
root  ::= item ( "," item )* tail?   # trailing comment
item  ::= ( [a-z_] [a-z0-9_-]{0,7} | "\"" [^"\\\n]* "\"" | num ) ( ":" ( num | "(" item ")" ) )?
num   ::= "-"? [0-9]+ ( "." [0-9]{1,} )? ( [eE] [+-]? [0-9]{,3} )?
tail  ::= "\x21\u00e9\U0001F600\t\n\r\\\[\]" | .
        | "x"{2}
other ::= (
    "a" |
    "b"
  )
  )gbnf";
  const auto g = parse_ok(text);
  ASSERT_TRUE(g);
  EXPECT_GT(g->n_rules(), 5u);
  EXPECT_TRUE(complete(g, "ab,\"q x\":-1.5e+10,c:(d)"));
  EXPECT_TRUE(complete(g, "a!\xC3\xA9\xF0\x9F\x98\x80\t\n\r\\[]"));
  EXPECT_TRUE(complete(g, "a\xE2\x82\xAC"));  // `.` takes any character, here U+20AC
  EXPECT_TRUE(complete(g, "axx"));
  // An item has at most 1 + 7 characters, then `tail` may take one more (its `.`).
  EXPECT_EQ(first_refusal(g, "abcdefghij"), 9);
  EXPECT_EQ(first_refusal(g, "1.5e12345"), 8);  // 3 exponent digits, then `.` takes one
}

TEST(GrammarParse, ErrorsNameLineAndColumn) {
  const std::pair<const char*, const char*> cases[] = {
      {"root ::= foo", "grammar:1:10: undefined rule 'foo'"},
      {"root \"a\"", "grammar:1:6: expected '::=' after the rule name 'root', found '\"'"},
      {"root ::= \"abc", "grammar:1:10: unterminated string (missing '\"')"},
      {"root ::= \"ab\nc\"", "grammar:1:10: unterminated string (missing '\"')"},
      {"root ::= [a-z", "grammar:1:10: unterminated character class (missing ']')"},
      {"root ::= \"\\q\"", "grammar:1:11: unknown escape '\\q'"},
      {"root ::= \"\\x4\"", "grammar:1:11: escape '\\x' needs 2 hex digits"},
      {"root ::= \"\\U00110000\"", "grammar:1:11: escape '\\U00110000' is beyond U+10FFFF"},
      {"root ::= (\"a\" | \"b\"", "grammar:1:10: '(' is never closed"},
      {"root ::= (\"a\"\n  | \"b\" ]",
       "grammar:2:9: expected ')' to close the '(' at 1:10, found ']'"},
      {"root ::= \"a\" )", "grammar:1:14: unexpected ')' (no '(' is open)"},
      {"root ::= * \"a\"", "grammar:1:10: '*' must follow an expression"},
      {"root ::= \"a\"{3,1}", "grammar:1:13: repetition {3,1}: the maximum is below the minimum"},
      {"root ::= \"a\"{2",
       "grammar:1:13: unterminated repetition '{' (expected {m}, {m,}, {,n} or {m,n})"},
      {"root ::= [z-a]", "grammar:1:11: range 'z-a' is backwards"},
      {"a ::= \"x\"", "grammar:1:1: no 'root' rule (generation starts at the rule named root)"},
      {"# only a comment\n",
       "grammar:1:1: no 'root' rule (generation starts at the rule named root)"},
      {"::= \"a\"", "grammar:1:1: expected a rule name, found ':'"},
      {"root ::= \"a\"\nroot ::= \"b\"",
       "grammar:2:1: rule 'root' is defined twice (first at 1:1)"},
      {"root ::= \"a\" $", "grammar:1:14: unexpected '$' in rule 'root'"},
      {"root ::= \"\xFF\"", "grammar:1:11: invalid UTF-8"},
      {"root ::= \"\xC3\xA9\" foo",
       "grammar:1:14: undefined rule 'foo'"},  // columns count characters
      {"root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]",
       "grammar:2:1: left recursion: rule 'expr' can start with itself (expr -> expr)"},
      {"root ::= opt root \"a\" | \"b\"\nopt ::= \"c\"?",
       "grammar:1:1: left recursion: rule 'root' can start with itself (root -> root)"},
      {"root ::= a\na ::= b \"x\"\nb ::= (a | \"y\")",
       "grammar:2:1: left recursion: rule 'a' can start with itself (a -> b -> (group at 3:7) -> "
       "a)"},
      {"root ::= (\"a\"?)*",
       "grammar:1:16: this repetition repeats an expression that can match the empty string"},
  };
  for (const auto& [text, expected] : cases) EXPECT_EQ(parse_error(text), expected) << text;
  // The source name leads the message.
  Result<std::shared_ptr<const Grammar>> g = Grammar::parse("root ::= x", "my.gbnf");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().message(), "my.gbnf:1:10: undefined rule 'x'");
}

TEST(GrammarMatch, CodePointByCodePoint) {
  const auto g = parse_ok(Grammar::builtin("arithmetic"));
  ASSERT_TRUE(g);
  EXPECT_TRUE(complete(g, "1+2*(3-4)"));
  EXPECT_TRUE(complete(g, "-(12.5 / 3) - -4"));
  EXPECT_EQ(first_refusal(g, "1+*2"), 2);    // '*' after '+'
  EXPECT_EQ(first_refusal(g, "(1+2))"), 5);  // the extra ')'
  EXPECT_EQ(first_refusal(g, "1  + 2"), 2);  // one space at most
  EXPECT_EQ(first_refusal(g, "a"), 0);
  bool can_end = true;
  EXPECT_EQ(first_refusal(g, "(1+2", &can_end), -1);  // a valid prefix, not complete
  EXPECT_FALSE(can_end);
}

TEST(GrammarMatch, Repetitions) {
  const auto g = parse_ok("root ::= \"ab\"{2,3} \"c\"+ \"d\"?");
  ASSERT_TRUE(g);
  EXPECT_FALSE(complete(g, "abc"));
  EXPECT_TRUE(complete(g, "ababc"));
  EXPECT_TRUE(complete(g, "abababccd"));
  EXPECT_EQ(first_refusal(g, "abababab"), 6);
  EXPECT_EQ(first_refusal(g, "ababcdd"), 6);
  const auto exact = parse_ok("root ::= [0-9]{3}");
  EXPECT_TRUE(complete(exact, "123"));
  EXPECT_FALSE(complete(exact, "12"));
  EXPECT_EQ(first_refusal(exact, "1234"), 3);
}

TEST(GrammarMatch, AmbiguousRepetitions) {
  // Hundreds of stacks per character (the grammar fuzzer's first timeout: 23 s for this
  // text before the stacks were deduplicated through a hash set).
  const auto g = parse_ok("root ::= item{1,10}\nitem ::= \"- \"?{1,200} \"\\n\"");
  ASSERT_TRUE(g);
  std::string text;
  for (int line = 0; line < 3; ++line) {
    for (int i = 0; i < 20; ++i) text += "- ";
    text += "\n";
  }
  EXPECT_TRUE(complete(g, text));
  EXPECT_EQ(first_refusal(g, "- x"), 2);
  // A nullable item repeated: 200^10 paths to the same few stacks (the second timeout).
  const auto nullable = parse_ok("root ::= item{0,10} \"x\"\nitem ::= \"- \"?{2,200}");
  ASSERT_TRUE(nullable);
  EXPECT_TRUE(complete(nullable, "- - - x"));
  EXPECT_TRUE(complete(nullable, "x"));
  // Past limits::kMaxGrammarStacks (the nested optional repetition has more than that at
  // its start) the text is refused: the "c", whose next stacks are those of the repetition.
  const auto explosive = parse_ok("root ::= \"b\" \"c\" (\"a\"?{1,200}){1,200}");
  ASSERT_TRUE(explosive);
  EXPECT_EQ(first_refusal(explosive, "bca"), 1);
}

TEST(GrammarParse, TooManyStacksAtTheStartIsAnError) {
  // Such a grammar could accept no text at all: parse refuses it, naming the limit.
  const Result<std::shared_ptr<const Grammar>> g = Grammar::parse("root ::= (\"a\"?{1,200}){1,200}", "g");
  ASSERT_FALSE(g.is_ok());
  const std::string& m = g.status().message();
  EXPECT_EQ(m.rfind("g: ", 0), 0u) << m;
  EXPECT_NE(m.find("kMaxGrammarStacks"), std::string::npos) << m;
  EXPECT_NE(m.find(std::to_string(limits::kMaxGrammarStacks)), std::string::npos) << m;
}

TEST(GrammarMatch, ClassesAndAnyCharacter) {
  const auto g = parse_ok("root ::= [^abc\\n]+ . [\\u00e0-\\u00ff]");
  ASSERT_TRUE(g);
  EXPECT_TRUE(complete(g, "xyza\xC3\xA9"));  // "xyz", any ('a'), then é (U+00E9)
  EXPECT_EQ(first_refusal(g, "b"), 0);
  EXPECT_EQ(first_refusal(g, "x\n"), -1);  // '\n' as the `.`
  EXPECT_EQ(first_refusal(g, "x\nz"), 2);  // 'z' is not in [à-ÿ]
}

TEST(GrammarMatch, EndAndCompletion) {
  const auto g = parse_ok("root ::= \"a\" \"b\"?");
  GrammarMatcher m(g);
  EXPECT_FALSE(m.can_end());
  EXPECT_TRUE(m.accept_text("a"));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.is_complete());
  EXPECT_FALSE(m.accept_text("c"));  // refused, state unchanged
  EXPECT_TRUE(m.accept_text("b"));
  EXPECT_TRUE(m.is_complete());
  EXPECT_FALSE(m.accept_text("b"));
  m.reset();
  EXPECT_FALSE(m.can_end());
}

TEST(GrammarMatch, CharactersSplitAcrossCalls) {
  const auto g = parse_ok("root ::= \"\xC3\xA9\" \"\xE2\x82\xAC\"");  // é €
  GrammarMatcher m(g);
  EXPECT_TRUE(m.accept_text("\xC3"));  // could still become é
  EXPECT_FALSE(m.can_end());
  EXPECT_TRUE(m.accept_text("\xA9\xE2"));
  EXPECT_TRUE(m.accept_text("\x82"));
  EXPECT_FALSE(m.accept_text("\x81"));  // U+2081, not €
  EXPECT_TRUE(m.accept_text("\xAC"));
  EXPECT_TRUE(m.is_complete());
  GrammarMatcher n(g);
  EXPECT_FALSE(n.accept_text("\xE2"));  // a 3-byte character cannot be é
  EXPECT_FALSE(n.accept_text("\xA9"));  // not UTF-8
  EXPECT_FALSE(n.accept_text("e"));
}

TEST(GrammarMatch, Json) {
  const auto g = parse_ok(Grammar::builtin("json"));
  ASSERT_TRUE(g);
  const char* good[] = {
      "{\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"], \"b\": {}}",
      "  [ ]\n",
      "0",
      "-0.125",
      "\"caf\xC3\xA9\"",
      "{\"k\":\"v\",\"n\":[[],[{}]]}",
  };
  for (const char* text : good) EXPECT_TRUE(complete(g, text)) << text;
  const std::pair<const char*, int> bad[] = {
      {"{\"a\" 1}", 5}, {"[1,]", 3}, {"01", 1},    {"\"\\ud800\"", 7},
      {"\"a\x01\"", 2}, {"tru ", 3}, {"{a:1}", 1},
  };
  for (const auto& [text, at] : bad) EXPECT_EQ(first_refusal(g, text), at) << text;
}

// ---- the sampler step ------------------------------------------------------------------

/// A small SentencePiece-style vocabulary: control tokens, byte tokens for é (C3 A9),
/// and pieces that start, continue or break JSON.
std::unique_ptr<Tokenizer> json_vocab() {
  std::vector<std::string> tokens = {"<unk>",  "<s>",    "</s>",        "<0xC3>",
                                     "<0xA9>", "<0x7B>", "\xE2\x96\x81"};
  std::vector<int32_t> types = {2, 3, 3, 6, 6, 6, 1};
  for (const char* piece : {"{",
                            "}",
                            "\"",
                            "a",
                            "ab",
                            "\"a",
                            "\":",
                            "1",
                            "12",
                            ":",
                            ",",
                            "\xC3\xA9",
                            "true",
                            "tr",
                            "ue",
                            "[",
                            "]",
                            "\xE2\x96\x81{",
                            "{\"",
                            "\xE2\x96\x81\xE2\x96\x81",
                            "x\xC3",
                            "0",
                            "00",
                            "-",
                            "e5",
                            "\\u",
                            "d8",
                            "00\\",
                            "\xE2\x96\x81\"",
                            "null"}) {
    tokens.emplace_back(piece);
    types.push_back(1);
  }
  auto vocab =
      tok::Vocab::from_lists("llama", tokens, {}, types, {.bos = 1, .eos = 2, .unk = 0}, {});
  EXPECT_TRUE(vocab.is_ok()) << vocab.status().message();
  auto t = Tokenizer::from_vocab(std::move(vocab).value());
  EXPECT_TRUE(t.is_ok()) << t.status().message();
  return std::move(t).value();
}

/// The tokens a brute-force check allows: a copy of the matcher takes the token's text.
std::vector<bool> brute_force(const GrammarMatcher& m, const Tokenizer& tok) {
  std::vector<bool> allowed(static_cast<size_t>(tok.n_vocab()));
  for (TokenId id = 0; id < tok.n_vocab(); ++id) {
    GrammarMatcher copy = m;
    const std::string piece = tok.token_to_piece(id);
    allowed[static_cast<size_t>(id)] =
        tok.is_eog(id) ? m.can_end() : !piece.empty() && copy.accept_text(piece);
  }
  return allowed;
}

std::vector<bool> step_allows(SamplerStep& step, int32_t n_vocab) {
  Candidates c = Candidates::from_logits(std::vector<float>(static_cast<size_t>(n_vocab), 0.0f));
  step.apply(c);
  std::vector<bool> allowed(static_cast<size_t>(n_vocab));
  for (const Candidate& t : c.items) allowed[static_cast<size_t>(t.id)] = !std::isinf(t.logit);
  return allowed;
}

TEST(GrammarStep, AllowsExactlyWhatTheMatcherAccepts) {
  const auto tok = json_vocab();
  const auto g = parse_ok(Grammar::builtin("json"));
  ASSERT_TRUE(tok && g);
  auto step = make_grammar_step(g, *tok);
  GrammarMatcher m(g);
  // A path through the states: start, object, key (with é split over two byte tokens),
  // after the colon, a number, the end.
  const std::vector<TokenId> path = {tok->vocab().find("\xE2\x96\x81{"),
                                     tok->vocab().find("\""),
                                     3,
                                     4,
                                     tok->vocab().find("\":"),
                                     tok->vocab().find("12"),
                                     tok->vocab().find("}")};
  for (size_t i = 0; i <= path.size(); ++i) {
    EXPECT_EQ(step_allows(*step, tok->n_vocab()), brute_force(m, *tok))
        << "after " << i << " tokens";
    if (i == path.size()) break;
    ASSERT_TRUE(step->accept(path[i], false).is_ok()) << "token " << path[i];
    ASSERT_TRUE(m.accept_text(tok->token_to_piece(path[i])));
  }
  // After "{"é":12}" the text may end: </s> is allowed, and accepting it finishes.
  const std::vector<bool> end = step_allows(*step, tok->n_vocab());
  EXPECT_TRUE(end[2]);
  EXPECT_FALSE(end[1]);  // <s> has no text
  EXPECT_FALSE(step->done());
  EXPECT_TRUE(step->accept(2, false).is_ok());
  EXPECT_TRUE(step->done());
}

TEST(GrammarStep, RefusesForbiddenTokensAndCompletes) {
  const auto tok = json_vocab();
  const auto g = parse_ok("root ::= \"tr\" \"ue\"");
  auto step = make_grammar_step(g, *tok);
  std::vector<bool> allowed = step_allows(*step, tok->n_vocab());
  EXPECT_TRUE(allowed[static_cast<size_t>(tok->vocab().find("true"))]);
  EXPECT_TRUE(allowed[static_cast<size_t>(tok->vocab().find("tr"))]);
  EXPECT_FALSE(allowed[2]);  // cannot end yet
  Status s = step->accept(tok->vocab().find("ue"), false);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("not allowed by the grammar"), std::string::npos) << s.message();
  EXPECT_FALSE(step->accept(2, false).is_ok());  // </s> before the end
  ASSERT_TRUE(step->accept(tok->vocab().find("tr"), false).is_ok());
  ASSERT_TRUE(step->accept(tok->vocab().find("ue"), false).is_ok());
  EXPECT_TRUE(step->done());  // nothing may follow "true"
  step->reset();
  EXPECT_FALSE(step->done());
}

TEST(GrammarStep, ChainNeverPicksAForbiddenToken) {
  const auto tok = json_vocab();
  const auto g = parse_ok(Grammar::builtin("json"));
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    p.seed = seed;
    Result<SamplerChain> chain =
        SamplerChain::create(p, tok->n_vocab(), make_grammar_step(g, *tok));
    ASSERT_TRUE(chain.is_ok());
    GrammarMatcher m(g);
    std::string text;
    for (int i = 0; i < 40 && !chain->done(); ++i) {
      Result<TokenId> t =
          chain->sample(std::vector<float>(static_cast<size_t>(tok->n_vocab()), 0.0f));
      ASSERT_TRUE(t.is_ok()) << t.status().message();
      if (tok->is_eog(*t)) {
        EXPECT_TRUE(m.can_end());
        break;
      }
      ASSERT_TRUE(chain->accept(*t).is_ok());
      ASSERT_TRUE(m.accept_text(tok->token_to_piece(*t))) << text << " + token " << *t;
      text += tok->token_to_piece(*t);
    }
  }
}

}  // namespace
}  // namespace tessera
