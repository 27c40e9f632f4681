// Numbers between bounds (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`)
// as GBNF: the digits of the integer part compared digit by digit, then those of the
// fraction.
#pragma once

#include <string>

#include "runtime/grammar/json_schema_compiler.h"

namespace tessera::grammar::schema {

/// A number as an exact decimal: the integer digits without leading zeros ("0" for
/// zero), the fraction digits without trailing zeros; zero is never negative.
struct Decimal {
  bool negative = false;
  std::string int_part = "0";
  std::string frac;
};

/// The decimal a JSON number writes (a float: its shortest text that reads back the same).
Decimal to_decimal(const Json& number);
/// <0, 0 or >0 as a is below, equal to or above b.
int compare(const Decimal& a, const Decimal& b);

struct NumberBound {
  bool present = false;
  bool strict = false;  // exclusive
  Decimal value;
};

struct NumberBounds {
  NumberBound lo;
  NumberBound hi;
  bool any() const { return lo.present || hi.present; }
};

/// The bounds a schema sets: `minimum` / `maximum` and the exclusive ones (numbers, or
/// booleans beside minimum / maximum as in draft 4); the tighter of two on one side.
Result<NumberBounds> number_bounds(const Json& s, const std::string& ptr);
/// True when `v` is within `b`.
bool in_bounds(const Decimal& v, const NumberBounds& b);
/// A GBNF expression matching the JSON numbers within `b`, integers only when `integer`;
/// no exponent, at most 16 integer and 16 fraction digits (as the number rule), no "-0".
/// Empty when no such number exists.
std::string range_gbnf(const NumberBounds& b, bool integer);

}  // namespace tessera::grammar::schema
