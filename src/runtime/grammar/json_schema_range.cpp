// Numbers between bounds. A number is its sign, integer digits and fraction digits; the
// non-negative ones within [lo, hi] are, by integer part I: I strictly between the
// bounds' integer parts with any fraction, or I equal to one of them with a fraction
// compared digit by digit against that bound's fraction. Negative numbers are "-" and a
// non-negative magnitude within the mirrored bounds (never zero: no "-0").
#include "runtime/grammar/json_schema_range.h"

#include <optional>
#include <vector>

namespace tessera::grammar::schema {
namespace {

constexpr size_t kMaxDigits = 16;  // integer and fraction digits, as the number rule

Decimal parse_decimal(const std::string& t) {
  Decimal d;
  size_t i = 0;
  if (i < t.size() && t[i] == '-') {
    d.negative = true;
    ++i;
  }
  std::string digits;
  long point = -1;
  for (; i < t.size() && ((t[i] >= '0' && t[i] <= '9') || t[i] == '.'); ++i) {
    if (t[i] == '.') {
      point = static_cast<long>(digits.size());
    } else {
      digits += t[i];
    }
  }
  if (point < 0) point = static_cast<long>(digits.size());
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) point += std::stol(t.substr(i + 1));
  if (point < 0) {
    digits.insert(0, static_cast<size_t>(-point), '0');
    point = 0;
  }
  if (static_cast<size_t>(point) > digits.size())
    digits.append(static_cast<size_t>(point) - digits.size(), '0');
  d.int_part = digits.substr(0, static_cast<size_t>(point));
  d.frac = digits.substr(static_cast<size_t>(point));
  d.int_part.erase(0, std::min(d.int_part.find_first_not_of('0'), d.int_part.size()));
  if (d.int_part.empty()) d.int_part = "0";
  while (!d.frac.empty() && d.frac.back() == '0') d.frac.pop_back();
  if (d.int_part == "0" && d.frac.empty()) d.negative = false;
  return d;
}

int compare_int(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b) < 0 ? -1 : a.compare(b) > 0 ? 1 : 0;
}

int compare_magnitude(const Decimal& a, const Decimal& b) {
  if (const int c = compare_int(a.int_part, b.int_part); c != 0) return c;
  for (size_t i = 0; i < std::max(a.frac.size(), b.frac.size()); ++i) {
    const char x = i < a.frac.size() ? a.frac[i] : '0', y = i < b.frac.size() ? b.frac[i] : '0';
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

/// Digit-string arithmetic on integers without leading zeros.
std::string increment(std::string s) {
  size_t i = s.size();
  while (i > 0 && s[i - 1] == '9') s[--i] = '0';
  if (i == 0) return "1" + s;
  ++s[i - 1];
  return s;
}
std::string decrement(std::string s) {  // s > 0
  size_t i = s.size();
  while (s[i - 1] == '0') s[--i] = '9';
  --s[i - 1];
  if (s.size() > 1 && s[0] == '0') s.erase(0, 1);
  return s;
}

bool all_of_char(const std::string& s, size_t from, char c) {
  for (size_t i = from; i < s.size(); ++i) {
    if (s[i] != c) return false;
  }
  return true;
}

std::string lit(const std::string& s) { return "\"" + s + "\""; }
std::string digit_set(char lo, char hi) {
  return lo == hi ? lit(std::string(1, lo)) : std::string("[") + lo + "-" + hi + "]";
}
/// [0-9] repeated lo..hi times ("" when hi is 0).
std::string digits_rep(size_t lo, size_t hi) {
  if (hi == 0) return "";
  std::string out = "[0-9]";
  if (lo == 1 && hi == 1) return out;
  out += "{" + std::to_string(lo);
  if (hi != lo) out += "," + std::to_string(hi);
  return out + "}";
}
std::string group(const std::string& e) { return "( " + e + " )"; }
std::string seq(const std::string& a, const std::string& b) {
  return a.empty() ? b : b.empty() ? a : a + " " + b;
}
std::string join_alts(const std::vector<std::string>& alts) {
  std::string out;
  for (const std::string& a : alts) out += (out.empty() ? "" : " | ") + a;
  return out;
}

/// Digit strings of a's length from a to b (a <= b).
std::string fixed_between(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && a[i] == b[i]) ++i;
  if (i == a.size()) return lit(a);
  const std::string prefix = i ? lit(a.substr(0, i)) : "";
  const size_t rest = a.size() - i - 1;
  const bool low_free = all_of_char(a, i + 1, '0'), high_free = all_of_char(b, i + 1, '9');
  std::vector<std::string> alts;
  if (!low_free) {
    alts.push_back(
        seq(digit_set(a[i], a[i]), group(fixed_between(a.substr(i + 1), std::string(rest, '9')))));
  }
  const char first = low_free ? a[i] : static_cast<char>(a[i] + 1);
  const char last = high_free ? b[i] : static_cast<char>(b[i] - 1);
  if (first <= last) alts.push_back(seq(digit_set(first, last), digits_rep(rest, rest)));
  if (!high_free) {
    alts.push_back(
        seq(digit_set(b[i], b[i]), group(fixed_between(std::string(rest, '0'), b.substr(i + 1)))));
  }
  const std::string body = join_alts(alts);
  return prefix.empty() ? body : seq(prefix, alts.size() > 1 ? group(body) : body);
}

/// Integers written without leading zeros, from lo to hi (no upper end when `open`), at
/// most kMaxDigits digits.
std::string int_between(const std::string& lo, const std::string& hi, bool open) {
  if (lo.size() > kMaxDigits) return "";
  open = open || hi.size() > kMaxDigits;
  if (!open && compare_int(lo, hi) > 0) return "";
  const size_t top = open ? kMaxDigits : hi.size();
  std::vector<std::string> alts;
  size_t full_from = 0, full_to = 0;  // lengths of which every number is in
  for (size_t n = lo.size(); n <= top; ++n) {
    std::string smallest = n == 1 ? "0" : "1";
    if (n > 1) smallest.append(n - 1, '0');
    const std::string a = n == lo.size() ? lo : smallest;
    const std::string b = !open && n == hi.size() ? hi : std::string(n, '9');
    if (n >= 2 && a == smallest && b == std::string(n, '9')) {
      if (full_from == 0) full_from = n;
      full_to = n;
      continue;
    }
    alts.push_back(fixed_between(a, b));
  }
  if (full_from != 0) alts.push_back("[1-9] " + digits_rep(full_from - 1, full_to - 1));
  return join_alts(alts);
}

/// One bound of a fraction's digits (compared as if padded with zeros), while the digits
/// so far equal the bound's (`on`).
struct FracSide {
  const std::string* digits = nullptr;
  bool on = false;
  bool strict = false;
};

char digit_at(const FracSide& s, size_t i) { return i < s.digits->size() ? (*s.digits)[i] : '0'; }

/// A lower bound that every continuation meets is off.
FracSide settled(FracSide lo, size_t i) {
  if (lo.on && !lo.strict && all_of_char(*lo.digits, i, '0')) lo.on = false;
  return lo;
}

/// True when the fraction may end after i digits.
bool can_stop(FracSide lo, const FracSide& hi, size_t i) {
  lo = settled(lo, i);
  if (lo.on) return false;
  return !(hi.on && hi.strict && all_of_char(*hi.digits, i, '0'));
}

FracSide off(FracSide s) {
  s.on = false;
  return s;
}

/// The fraction digits from position i on, at least one; nullopt when none may follow.
std::optional<std::string> more_digits(FracSide lo, const FracSide& hi, size_t i) {
  lo = settled(lo, i);
  if (i >= kMaxDigits) return std::nullopt;
  if (!lo.on && !hi.on) return digits_rep(1, kMaxDigits - i);
  if (!lo.on && all_of_char(*hi.digits, i, '0')) {  // past the upper bound's digits: zeros
    if (hi.strict) return std::nullopt;
    const size_t n = kMaxDigits - i;
    return n == 1 ? lit("0") : lit("0") + "{1," + std::to_string(n) + "}";
  }
  const char a = lo.on ? digit_at(lo, i) : '0', b = hi.on ? digit_at(hi, i) : '9';
  if (a > b) return std::nullopt;
  std::vector<std::string> alts;
  const auto then = [&](char d, const FracSide& l, const FracSide& h) {  // digit d, the rest
    const std::optional<std::string> rest = more_digits(l, h, i + 1);
    const bool stop = can_stop(l, h, i + 1);
    if (!rest && !stop) return;
    alts.push_back(seq(lit(std::string(1, d)), rest ? group(*rest) + (stop ? "?" : "") : ""));
  };
  if (lo.on && hi.on && a == b) {
    then(a, lo, hi);
  } else {
    char free_lo = '0', free_hi = '9';
    if (lo.on) {
      then(a, lo, off(hi));
      free_lo = static_cast<char>(a + 1);
    }
    if (hi.on) {
      then(b, off(lo), hi);
      free_hi = static_cast<char>(b - 1);
    }
    if (free_lo <= free_hi)
      alts.push_back(seq(digit_set(free_lo, free_hi), digits_rep(0, kMaxDigits - i - 1)));
  }
  if (alts.empty()) return std::nullopt;
  return join_alts(alts);
}

/// What follows an integer part that equals a bound's: "" (nothing), an optional or a
/// required fraction; nullopt when nothing may.
std::optional<std::string> fraction_after(const FracSide& lo, const FracSide& hi, bool integer) {
  const bool stop = can_stop(lo, hi, 0);
  if (integer) return stop ? std::optional<std::string>("") : std::nullopt;
  const std::optional<std::string> more = more_digits(lo, hi, 0);
  if (!more) return stop ? std::optional<std::string>("") : std::nullopt;
  const std::string f = "\".\" " + group(*more);
  return stop ? group(f) + "?" : f;
}

/// A bound on the magnitude of a number.
struct Side {
  bool present = false;
  std::string int_part = "0";
  std::string frac;
  bool strict = false;
};

Side side_of(const NumberBound& b) { return {true, b.value.int_part, b.value.frac, b.strict}; }

/// Non-negative numbers within [lo, hi] (lo always present).
std::optional<std::string> non_negative(const Side& lo, const Side& hi, bool integer) {
  if (lo.int_part.size() > kMaxDigits) return std::nullopt;
  const bool open = !hi.present || hi.int_part.size() > kMaxDigits;
  const int c = open ? -1 : compare_int(lo.int_part, hi.int_part);
  if (c > 0) return std::nullopt;
  const FracSide flo{&lo.frac, true, lo.strict}, fhi{&hi.frac, !open, hi.strict};
  std::vector<std::string> alts;
  if (c == 0) {
    if (auto f = fraction_after(flo, fhi, integer)) alts.push_back(seq(lit(lo.int_part), *f));
  } else {
    if (auto f = fraction_after(flo, off(fhi), integer)) alts.push_back(seq(lit(lo.int_part), *f));
    const std::string next = increment(lo.int_part);
    std::string middle;
    if (open) {
      middle = int_between(next, "", true);
    } else if (const std::string prev = decrement(hi.int_part); compare_int(next, prev) <= 0) {
      middle = int_between(next, prev, false);
    }
    if (!middle.empty()) {
      alts.push_back(
          seq(group(middle), integer ? "" : "( \".\" " + digits_rep(1, kMaxDigits) + " )?"));
    }
    if (!open) {
      if (auto f = fraction_after(off(flo), fhi, integer))
        alts.push_back(seq(lit(hi.int_part), *f));
    }
  }
  if (alts.empty()) return std::nullopt;
  return join_alts(alts);
}

}  // namespace

Decimal to_decimal(const Json& number) {
  if (number.is_number_unsigned()) return parse_decimal(std::to_string(number.get<uint64_t>()));
  if (number.is_number_integer()) return parse_decimal(std::to_string(number.get<int64_t>()));
  return parse_decimal(Json(number.get<double>()).dump());
}

int compare(const Decimal& a, const Decimal& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  const int m = compare_magnitude(a, b);
  return a.negative ? -m : m;
}

Result<NumberBounds> number_bounds(const Json& s, const std::string& ptr) {
  NumberBounds b;
  const auto tighten = [](NumberBound& cur, const NumberBound& cand, int sign) {
    const int c = cur.present ? compare(cand.value, cur.value) * sign : 1;
    if (c > 0 || (c == 0 && cand.strict)) cur = cand;
  };
  for (const auto& [inclusive, exclusive, sign] :
       {std::make_tuple("minimum", "exclusiveMinimum", 1),
        std::make_tuple("maximum", "exclusiveMaximum", -1)}) {
    NumberBound& side = sign > 0 ? b.lo : b.hi;
    if (s.contains(inclusive)) {
      if (!s[inclusive].is_number())
        return schema_error(ptr, std::string("'") + inclusive + "' must be a number");
      side = NumberBound{true, false, to_decimal(s[inclusive])};
    }
    if (!s.contains(exclusive)) continue;
    const Json& e = s[exclusive];
    if (e.is_boolean()) {  // draft 4: makes `minimum` / `maximum` exclusive
      if (e.get<bool>() && side.present) side.strict = true;
    } else if (e.is_number()) {
      tighten(side, NumberBound{true, true, to_decimal(e)}, sign);
    } else {
      return schema_error(ptr, std::string("'") + exclusive +
                                   "' must be a number (or, as in "
                                   "draft 4, a boolean beside '" +
                                   inclusive + "')");
    }
  }
  return b;
}

bool in_bounds(const Decimal& v, const NumberBounds& b) {
  if (b.lo.present) {
    const int c = compare(v, b.lo.value);
    if (c < 0 || (c == 0 && b.lo.strict)) return false;
  }
  if (b.hi.present) {
    const int c = compare(v, b.hi.value);
    if (c > 0 || (c == 0 && b.hi.strict)) return false;
  }
  return true;
}

std::string range_gbnf(const NumberBounds& b, bool integer) {
  std::vector<std::string> alts;
  if (!b.hi.present || !b.hi.value.negative) {  // x >= 0
    const Side lo =
        b.lo.present && !b.lo.value.negative ? side_of(b.lo) : Side{true, "0", "", false};
    const Side hi = b.hi.present ? side_of(b.hi) : Side{};
    if (auto e = non_negative(lo, hi, integer)) alts.push_back(*e);
  }
  if (!b.lo.present || b.lo.value.negative) {  // x < 0: "-" and |x| > 0 within the mirror
    const Side lo = b.hi.present && b.hi.value.negative ? side_of(b.hi) : Side{true, "0", "", true};
    const Side hi = b.lo.present ? side_of(b.lo) : Side{};
    if (auto e = non_negative(lo, hi, integer)) alts.push_back("\"-\" " + group(*e));
  }
  return join_alts(alts);
}

}  // namespace tessera::grammar::schema
