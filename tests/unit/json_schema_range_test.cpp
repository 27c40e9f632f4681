// minimum / maximum / exclusiveMinimum / exclusiveMaximum: every integer in a window
// around the bounds is accepted exactly when it is within them; decimals likewise, their
// value compared exactly (scaled integers), written with and without trailing zeros.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>

#include "tessera/grammar.h"
#include "tessera/json_schema.h"
#include "grammar_walk.h"

namespace tessera {
namespace {

std::shared_ptr<const Grammar> compile(const std::string& schema) {
  return test::schema_grammar(schema);
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& doc) {
  if (!g) return false;
  GrammarMatcher m(g);
  return m.accept_text(doc) && m.can_end();
}

std::string error_of(const std::string& schema) {
  Result<std::string> g = json_schema_to_grammar(schema);
  return g.is_ok() ? std::string("(compiled)") : g.status().message();
}

/// A bound as the schema writes it, and as a count of millionths (exact for the bounds
/// below, which have at most 6 fraction digits).
struct Bound {
  std::string text;
  int64_t micros;
  bool exclusive = false;
};

std::string bound_keywords(const std::optional<Bound>& lo, const std::optional<Bound>& hi) {
  std::string out;
  if (lo)
    out +=
        std::string(", \"") + (lo->exclusive ? "exclusiveMinimum" : "minimum") + "\": " + lo->text;
  if (hi)
    out +=
        std::string(", \"") + (hi->exclusive ? "exclusiveMaximum" : "maximum") + "\": " + hi->text;
  return out;
}

bool within(int64_t micros, const std::optional<Bound>& lo, const std::optional<Bound>& hi) {
  if (lo && (micros < lo->micros || (lo->exclusive && micros == lo->micros))) return false;
  if (hi && (micros > hi->micros || (hi->exclusive && micros == hi->micros))) return false;
  return true;
}

Bound integer_bound(int64_t v, bool exclusive) {
  return {std::to_string(v), v * 1000000, exclusive};
}

/// Checks every integer in [from, to] against the integer grammar of the bounds.
void check_integers(const std::shared_ptr<const Grammar>& g, const std::optional<Bound>& lo,
                    const std::optional<Bound>& hi, int64_t from, int64_t to) {
  for (int64_t n = from; n <= to; ++n) {
    EXPECT_EQ(accepts(g, std::to_string(n)), within(n * 1000000, lo, hi))
        << n << " with" << bound_keywords(lo, hi);
  }
}

TEST(JsonSchemaRange, IntegersAroundTheBoundsAreAcceptedExactlyWhenWithin) {
  struct Case {
    std::optional<int64_t> lo, hi;
  };
  const Case cases[] = {{0, 100},         {-100, -7},   {-37, 215}, {5, 5},  {1, {}},
                        {{}, -3},         {99, 1001},   {-9, 9},    {0, 0},  {-1, 0},
                        {123456, 123789}, {-20000, 19}, {{}, 0},    {0, {}}, {10, 99},
                        {-999, -100},     {7, 1000000}};
  for (const Case& c : cases) {
    for (int ex = 0; ex < 4; ++ex) {  // inclusive or exclusive on each side
      const std::optional<Bound> lo =
          c.lo ? std::optional<Bound>(integer_bound(*c.lo, ex & 1)) : std::nullopt;
      const std::optional<Bound> hi =
          c.hi ? std::optional<Bound>(integer_bound(*c.hi, ex & 2)) : std::nullopt;
      if (lo && hi && !within(lo->micros, lo, hi) && !within(hi->micros, lo, hi) &&
          lo->micros + 1000000 >= hi->micros) {
        continue;  // no integer within: an error (checked below)
      }
      const auto g = compile(R"({"type": "integer")" + bound_keywords(lo, hi) + "}");
      ASSERT_TRUE(g) << bound_keywords(lo, hi);
      for (const std::optional<int64_t>& b : {c.lo, c.hi}) {
        if (b) check_integers(g, lo, hi, *b - 120, *b + 120);
      }
      check_integers(g, lo, hi, -130, 130);
      for (const char* never : {"-0", "007", "+5", "1.0", "1e2", "", "-"})
        EXPECT_FALSE(accepts(g, never)) << never;
    }
  }
}

TEST(JsonSchemaRange, RandomIntegerRangesExhaustively) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int64_t> value(-1500, 1500);
  for (int i = 0; i < 25; ++i) {
    int64_t a = value(rng), b = value(rng);
    if (a > b) std::swap(a, b);
    const std::optional<Bound> lo = integer_bound(a, rng() % 2), hi = integer_bound(b, rng() % 2);
    if (!within(a * 1000000, lo, hi) && !within(b * 1000000, lo, hi) && a + 1 >= b) continue;
    const auto g = compile(R"({"type": "integer")" + bound_keywords(lo, hi) + "}");
    check_integers(g, lo, hi, -1600, 1600);
  }
}

TEST(JsonSchemaRange, FractionalAndDraft4BoundsOnIntegers) {
  // minimum 2.5 means 3 and up; exclusiveMaximum 7.5 means 7 and down.
  const auto g = compile(R"({"type": "integer", "minimum": 2.5, "exclusiveMaximum": 7.5})");
  for (int n = -3; n <= 12; ++n) EXPECT_EQ(accepts(g, std::to_string(n)), n >= 3 && n <= 7) << n;
  // Draft 4: exclusiveMinimum / exclusiveMaximum are booleans beside minimum / maximum.
  const auto d4 = compile(R"({"type": "integer", "minimum": 0, "exclusiveMinimum": true,
                              "maximum": 10, "exclusiveMaximum": false})");
  for (int n = -3; n <= 13; ++n) EXPECT_EQ(accepts(d4, std::to_string(n)), n >= 1 && n <= 10) << n;
  // The tighter of minimum and exclusiveMinimum.
  const auto both = compile(R"({"type": "integer", "minimum": 5, "exclusiveMinimum": 5})");
  EXPECT_FALSE(accepts(both, "5"));
  EXPECT_TRUE(accepts(both, "6"));
}

TEST(JsonSchemaRange, BoundsBeyondSixteenDigits) {
  // The integer rule writes at most 16 digits: a bound past them bounds nothing writable.
  const auto below = compile(R"({"type": "integer", "maximum": 1e20})");
  EXPECT_TRUE(accepts(below, "9999999999999999"));
  EXPECT_TRUE(accepts(below, "-9999999999999999"));
  EXPECT_FALSE(accepts(below, "10000000000000000"));
  const auto near = compile(R"({"type": "integer", "minimum": 9999999999999990})");
  for (int d = 0; d < 10; ++d)
    EXPECT_TRUE(accepts(near, "999999999999999" + std::to_string(d))) << d;
  EXPECT_FALSE(accepts(near, "9999999999999989"));
  EXPECT_FALSE(accepts(near, "10000000000000000"));
  EXPECT_EQ(error_of(R"({"type": "integer", "minimum": 1e17})"),
            "json schema: (root): no integer (of at most 16 integer and 16 fraction digits) meets "
            "'minimum' / 'maximum' / 'exclusiveMinimum' / 'exclusiveMaximum'");
}

/// Decimals written with 0 to 3 fraction digits, from `from` to `to` millionths in steps
/// of `step` (a multiple of 1000): each written as its shortest form and with trailing
/// zeros ("1.5", "1.50", "1.500").
std::vector<std::pair<std::string, int64_t>> decimals(int64_t from, int64_t to, int64_t step) {
  std::vector<std::pair<std::string, int64_t>> out;
  from -= ((from % 1000) + 1000) % 1000;  // whole thousandths: the texts are exact
  for (int64_t v = from; v <= to; v += step) {
    const int64_t mag = v < 0 ? -v : v;
    const std::string sign = v < 0 ? "-" : "";
    const std::string whole = std::to_string(mag / 1000000);
    std::string frac = std::to_string(mag % 1000000 / 1000);
    frac.insert(0, 3 - frac.size(), '0');
    while (!frac.empty() && frac.back() == '0') frac.pop_back();
    if (frac.empty()) out.emplace_back(sign + whole, v);
    for (std::string f = frac; f.size() <= 3; f += '0') {
      if (!f.empty()) out.emplace_back(sign + whole + "." + f, v);
    }
  }
  return out;
}

TEST(JsonSchemaRange, NumbersAroundTheBoundsAreAcceptedExactlyWhenWithin) {
  struct Case {
    std::optional<Bound> lo, hi;
  };
  const Case cases[] = {
      {Bound{"0", 0}, Bound{"1", 1000000}},
      {Bound{"-1.5", -1500000}, Bound{"2.25", 2250000}},
      {Bound{"0", 0, true}, Bound{"10", 10000000}},
      {Bound{"-0.001", -1000}, Bound{"0.001", 1000}},
      {Bound{"3.14159", 3141590}, Bound{"3.1416", 3141600}},
      {Bound{"100", 100000000}, std::nullopt},
      {std::nullopt, Bound{"-0.5", -500000, true}},
      {Bound{"-2.75", -2750000, true}, Bound{"-2.5", -2500000, true}},
      {Bound{"0.125", 125000}, Bound{"0.125", 125000}},
      {Bound{"-3", -3000000}, Bound{"0", 0, true}},
      {std::nullopt, Bound{"0", 0}},
      {Bound{"1e-3", 1000, true}, Bound{"2E+1", 20000000}},
  };
  for (const Case& c : cases) {
    const auto g = compile(R"({"type": "number")" + bound_keywords(c.lo, c.hi) + "}");
    ASSERT_TRUE(g);
    for (const std::optional<Bound>& b : {c.lo, c.hi}) {
      if (!b) continue;
      // Every thousandth near the bound, every eighth further out.
      for (const auto& window : {decimals(b->micros - 300000, b->micros + 300000, 1000),
                                 decimals(b->micros - 3000000, b->micros + 3000000, 125000)}) {
        for (const auto& [text, micros] : window)
          EXPECT_EQ(accepts(g, text), within(micros, c.lo, c.hi))
              << text << " with" << bound_keywords(c.lo, c.hi);
      }
    }
    for (const char* never : {"-0", "-0.0", "1e0", "1E-2", ".5", "1.", "01.5", "+1"})
      EXPECT_FALSE(accepts(g, never)) << never;
  }
}

TEST(JsonSchemaRange, LongFractionsCompareDigitByDigit) {
  const auto g = compile(R"({"type": "number", "exclusiveMinimum": 0.1, "maximum": 0.2})");
  EXPECT_FALSE(accepts(g, "0.1"));
  EXPECT_FALSE(accepts(g, "0.1000000000000000"));
  EXPECT_TRUE(accepts(g, "0.1000000000000001"));
  EXPECT_FALSE(accepts(g, "0.10000000000000001"));  // 17 fraction digits: past the rule's 16
  EXPECT_TRUE(accepts(g, "0.2000000000000000"));
  EXPECT_FALSE(accepts(g, "0.2000000000000001"));
  EXPECT_TRUE(accepts(g, "0.19999"));
  // A bound with more digits than a number may have: numbers meet it by their 16.
  const auto fine = compile(R"({"type": "number", "minimum": 0.12345678901234567, "maximum": 1})");
  EXPECT_TRUE(accepts(fine, "0.1234567890123457"));
  EXPECT_FALSE(accepts(fine, "0.1234567890123456"));
}

TEST(JsonSchemaRange, NoExponentBesideBounds) {
  const auto bounded = compile(R"({"type": "number", "minimum": 0})");
  EXPECT_TRUE(accepts(bounded, "12.5"));
  EXPECT_FALSE(accepts(bounded, "1e3"));
  const auto free = compile(R"({"type": "number"})");
  EXPECT_TRUE(accepts(free, "1e3"));
}

TEST(JsonSchemaRange, EnumValuesAreCheckedAgainstTheBounds) {
  const auto g =
      compile(R"({"enum": [1, 2.5, "x", 10, -4], "minimum": 2, "exclusiveMaximum": 10})");
  for (const char* ok : {"2.5", "\"x\""}) EXPECT_TRUE(accepts(g, ok)) << ok;
  for (const char* bad : {"1", "10", "-4"}) EXPECT_FALSE(accepts(g, bad)) << bad;
}

TEST(JsonSchemaRange, TypeListsAndBoundsWithoutAType) {
  // No type: the bounds apply to numbers only.
  const auto g = compile(R"({"minimum": 3})");
  EXPECT_TRUE(accepts(g, "3"));
  EXPECT_TRUE(accepts(g, "3.5"));
  EXPECT_FALSE(accepts(g, "2.9"));
  EXPECT_TRUE(accepts(g, "\"2\""));
  EXPECT_TRUE(accepts(g, "null"));
  const auto list = compile(R"({"type": ["integer", "null"], "maximum": -1})");
  EXPECT_TRUE(accepts(list, "-1"));
  EXPECT_TRUE(accepts(list, "null"));
  EXPECT_FALSE(accepts(list, "0"));
}

TEST(JsonSchemaRange, Errors) {
  EXPECT_EQ(error_of(R"({"type": "integer", "minimum": 5, "maximum": 4})"),
            "json schema: (root): no integer (of at most 16 integer and 16 fraction digits) meets "
            "'minimum' / 'maximum' / 'exclusiveMinimum' / 'exclusiveMaximum'");
  EXPECT_EQ(error_of(R"({"type": "integer", "exclusiveMinimum": 4, "exclusiveMaximum": 5})"),
            "json schema: (root): no integer (of at most 16 integer and 16 fraction digits) meets "
            "'minimum' / 'maximum' / 'exclusiveMinimum' / 'exclusiveMaximum'");
  EXPECT_EQ(error_of(R"({"type": "number", "exclusiveMinimum": 1, "maximum": 1})"),
            "json schema: (root): no number (of at most 16 integer and 16 fraction digits) meets "
            "'minimum' / 'maximum' / 'exclusiveMinimum' / 'exclusiveMaximum'");
  EXPECT_EQ(error_of(R"({"type": "number", "minimum": "1"})"),
            "json schema: (root): 'minimum' must be a number");
  EXPECT_EQ(
      error_of(
          R"({"type": "object", "properties": {"n": {"type": "integer", "exclusiveMaximum": "x"}}})"),
      "json schema: /properties/n: 'exclusiveMaximum' must be a number (or, as in draft 4, a "
      "boolean beside 'maximum')");
  EXPECT_EQ(error_of(R"({"type": "integer", "multipleOf": 2})"),
            "json schema: (root): unsupported keyword 'multipleOf'");
}

}  // namespace
}  // namespace tessera
