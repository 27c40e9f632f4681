// The keyword `format`: strings walked at random through each format's grammar all pass
// a validator written from the format's standard (std::chrono for calendar dates,
// inet_pton for addresses, regexes of the RFCs' ABNF); invalid strings are refused; all
// dates of some years and all addresses of a small alphabet are accepted exactly when
// valid.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <string>

#include "grammar_walk.h"
#include "runtime/grammar/json_schema_formats.h"
#include "tessera/json_schema.h"

namespace tessera {
namespace {

using nlohmann::json;

std::shared_ptr<const Grammar> format_grammar(const std::string& format,
                                              const std::string& extra = "") {
  const std::string schema = R"({"type": "string", "format": ")" + format + "\"" + extra + "}";
  return test::schema_grammar(schema);
}

bool accepts_string(const std::shared_ptr<const Grammar>& g, const std::string& s) {
  GrammarMatcher m(g);
  return m.accept_text(json(s).dump()) && m.can_end();
}

bool full_match(const std::string& s, const char* re) {
  return std::regex_match(s, std::regex(re));
}

int number(const std::string& s, size_t at, size_t len) { return std::stoi(s.substr(at, len)); }

bool valid_date(const std::string& s) {
  if (!full_match(s, R"(\d{4}-\d{2}-\d{2})")) return false;
  const std::chrono::year_month_day d{std::chrono::year(number(s, 0, 4)),
                                      std::chrono::month(static_cast<unsigned>(number(s, 5, 2))),
                                      std::chrono::day(static_cast<unsigned>(number(s, 8, 2)))};
  return d.ok();
}

// RFC 3339 full-time; a leap second (60) is valid there, though the grammar writes none.
bool valid_time(const std::string& s) {
  std::smatch m;
  if (!std::regex_match(s, m,
                        std::regex(R"((\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|z|[+-](\d{2}):(\d{2})))")))
    return false;
  if (std::stoi(m[1]) > 23 || std::stoi(m[2]) > 59 || std::stoi(m[3]) > 60) return false;
  return !m[6].matched || (std::stoi(m[6]) <= 23 && std::stoi(m[7]) <= 59);
}

bool valid_date_time(const std::string& s) {
  const size_t t = s.find_first_of("Tt");
  return t != std::string::npos && valid_date(s.substr(0, t)) && valid_time(s.substr(t + 1));
}

bool valid_duration(const std::string& s) {  // RFC 3339 appendix A
  return full_match(
      s, R"(P((\d+D|\d+M(\d+D)?|\d+Y(\d+M(\d+D)?)?)(T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S))?)"
         R"(|T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S)|\d+W))");
}

bool valid_hostname(const std::string& s) {  // RFC 1123
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  for (;;) {
    const size_t dot = s.find('.', start);
    const std::string label =
        s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (label.size() > 63 || !full_match(label, "[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?"))
      return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

bool valid_email(const std::string& s) {  // RFC 5321 Mailbox: dot-atom "@" domain
  const size_t at = s.rfind('@');
  if (at == std::string::npos || s.size() > 254) return false;
  const std::string local = s.substr(0, at);
  return local.size() <= 64 &&
         full_match(local,
                    R"([A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*)") &&
         valid_hostname(s.substr(at + 1));
}

bool valid_ipv4(const std::string& s) {
  in_addr a;
  return inet_pton(AF_INET, s.c_str(), &a) == 1;
}

bool valid_ipv6(const std::string& s) {
  in6_addr a;
  return s.find('%') == std::string::npos && inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

bool valid_uuid(const std::string& s) {
  return full_match(s,
                    "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
}

/// uuid1 ... uuid5: that version nibble and the RFC 4122 variant.
bool valid_uuid_version(const std::string& s, char version) {
  return valid_uuid(s) && s[14] == version &&
         std::string("89abAB").find(s[19]) != std::string::npos;
}

struct FormatCase {
  std::string name;
  bool (*valid)(const std::string&);
  std::vector<std::string> good;         // valid strings the grammar must take
  std::vector<std::string> bad;          // invalid strings it must refuse
  std::vector<std::string> beyond = {};  // valid, but outside the grammar's bounded subset
};

const std::vector<FormatCase>& format_cases() {
  static const std::vector<FormatCase> cases = {
      {"date",
       valid_date,
       {"2024-02-29", "2000-02-29", "0000-02-29", "1999-12-31", "2023-04-30", "0001-01-01"},
       {"2023-02-29", "1900-02-29", "2024-02-30", "2023-04-31", "2023-13-01", "2023-00-10",
        "2023-01-00", "2023-1-01", "20231-01-01", "2023/01/01", " 2023-01-01", "2023-01-01T"}},
      {"time",
       valid_time,
       {"00:00:00Z", "23:59:59.123456789-05:30", "12:34:56+14:00", "08:00:00.5Z"},
       {"24:00:00Z", "12:60:00Z", "12:00:61Z", "12:00:00", "12:00:00+24:00", "12:00:00+01:60",
        "12:00:00.Z", "1:00:00Z"},
       {"12:00:00z", "12:00:00.1234567890Z", "23:59:60Z"}},
      {"date-time",
       valid_date_time,
       {"2024-02-29T23:59:59Z", "1970-01-01T00:00:00.000+00:00"},
       {"2023-02-29T00:00:00Z", "2024-01-01 00:00:00Z", "2024-01-01T00:00:00"},
       {"2024-01-01t00:00:00Z"}},
      {"duration",
       valid_duration,
       {"P1Y2M3DT4H5M6S", "PT0S", "P1W", "P3D", "PT36H", "P1M", "PT1M", "P1Y", "P2MT1H"},
       {"P", "PT", "P1H", "P1DT", "P1W2D", "1D", "P1.5D", "PT1H1S", "P1Y1D", "p1d"},
       {"P1234567890D"}},
      {"email",
       valid_email,
       {"a@b", "user.name+tag@example.co.uk", "x_y-z@a-b.c", "#!$%&'*+/=?^_`{|}~-@x.org"},
       {"a@", "@b", "a..b@c", ".a@b", "a.@b", "a@-b", "a@b-", "a@b..c", "a b@c", "a\"b@c", "a@b@c",
        "a@b.c."},
       {std::string(33, 'a') + "@b", "a@b.c.d.e.f.g.h"}},
      {"hostname",
       valid_hostname,
       {"a", "example.com", "a-b.c-d.e", "xn--bcher-kva.example", "1.2.3.4", "A.B"},
       {"", "-a", "a-", "a..b", ".a", "a.", "a_b.c", "a b"},
       {std::string(31, 'a'), "a.b.c.d.e.f.g.h.i"}},
      {"ipv4",
       valid_ipv4,
       {"0.0.0.0", "255.255.255.255", "192.168.1.10", "10.0.0.1"},
       {"256.0.0.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1.2.3.-4", "1.2.3.4 ", "a.b.c.d",
        "1..2.3"}},
      {"ipv6",
       valid_ipv6,
       {"::", "::1", "1::", "fe80::1", "2001:db8::8a2e:370:7334", "::ffff:1.2.3.4",
        "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:1.2.3.4", "ABCD:EF01::", "1::2:3:4:5:6:7"},
       {":", ":::", "1::2::3", "1:2:3:4:5:6:7:8:9", "12345::", "g::", "1:2:3:4:5:6:7", "::1.2.3",
        "1.2.3.4", "fe80::1%eth0", "::ffff:01.2.3.4", "1:2:3:4:5:6:7:8::"}},
      {"uuid",
       valid_uuid,
       {"123e4567-e89b-12d3-a456-426614174000", "00000000-0000-0000-0000-000000000000",
        "ABCDEFAB-CDEF-ABCD-EFAB-CDEFABCDEFAB"},
       {"123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400",
        "123e4567-e89b-12d3-a456-4266141740000", "g23e4567-e89b-12d3-a456-426614174000",
        "{123e4567-e89b-12d3-a456-426614174000}"}},
      {"uuid4",
       [](const std::string& s) { return valid_uuid_version(s, '4'); },
       {"123e4567-e89b-42d3-a456-426614174000"},
       {"123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-42d3-c456-426614174000"}},
  };
  return cases;
}

TEST(JsonSchemaFormat, EveryFormatHasACase) {
  std::set<std::string> tested;
  for (const FormatCase& c : format_cases()) tested.insert(c.name);
  for (const grammar::schema::StringFormat& f : grammar::schema::string_formats()) {
    if (f.name.rfind("uuid", 0) == 0 && f.name.size() == 5) continue;  // uuid4 stands for them
    EXPECT_TRUE(tested.count(f.name)) << f.name << " has no test case";
  }
}

TEST(JsonSchemaFormat, StringsWalkedThroughTheGrammarAreValid) {
  const std::vector<uint32_t> alphabet = test::test_alphabet();
  std::mt19937 rng(5);
  for (const FormatCase& c : format_cases()) {
    SCOPED_TRACE("format " + c.name);
    const auto g = format_grammar(c.name);
    ASSERT_TRUE(g);
    const grammar::schema::StringFormat* f = grammar::schema::find_format(c.name);
    ASSERT_NE(f, nullptr);
    std::set<std::string> seen;
    for (int i = 0; i < 150; ++i) {
      const test::GrammarWalk walk = test::random_walk(g, alphabet, rng, 0.1, 400);
      ASSERT_FALSE(walk.stuck) << "dead end after " << walk.text;
      if (!walk.ended) continue;
      const json value = json::parse(walk.text);
      const std::string s = value.get<std::string>();
      EXPECT_TRUE(c.valid(s)) << "generated " << walk.text;
      EXPECT_EQ(value.dump(), walk.text);
      const size_t n = test::code_points(s).size();
      EXPECT_GE(n, f->min_length) << s;
      EXPECT_LE(n, f->max_length) << s;
      seen.insert(s);
    }
    EXPECT_GE(seen.size(), 100u) << "the walks found too few strings";
  }
}

TEST(JsonSchemaFormat, ValidStringsAreTakenAndInvalidOnesRefused) {
  for (const FormatCase& c : format_cases()) {
    SCOPED_TRACE("format " + c.name);
    const auto g = format_grammar(c.name);
    for (const std::string& s : c.good) {
      EXPECT_TRUE(c.valid(s)) << "the test's own example is invalid: " << s;
      EXPECT_TRUE(accepts_string(g, s)) << s;
    }
    for (const std::string& s : c.bad) {
      EXPECT_FALSE(c.valid(s)) << "the test's own counter-example is valid: " << s;
      EXPECT_FALSE(accepts_string(g, s)) << s;
    }
    for (const std::string& s : c.beyond) {
      EXPECT_TRUE(c.valid(s)) << s;
      EXPECT_FALSE(accepts_string(g, s)) << s;
    }
  }
}

TEST(JsonSchemaFormat, EveryDateOfSomeYears) {
  // Every month 00-13 and day 00-32 of years around leap-year rules: taken iff valid.
  const auto g = format_grammar("date");
  for (const int year : {0, 4, 100, 1896, 1900, 1999, 2000, 2023, 2024, 2100, 2400, 9999}) {
    for (int month = 0; month <= 13; ++month) {
      for (int day = 0; day <= 32; ++day) {
        char s[16];
        std::snprintf(s, sizeof(s), "%04d-%02d-%02d", year, month, day);
        EXPECT_EQ(accepts_string(g, s), valid_date(s)) << s;
      }
    }
  }
}

TEST(JsonSchemaFormat, RandomAddressesExactlyWhenValid) {
  // Random strings made of address parts: the grammar takes each iff inet_pton does.
  std::mt19937 rng(9);
  const auto pick = [&](const std::string& letters, size_t most) {
    std::string out;
    for (size_t n = rng() % (most + 1); n > 0; --n) out += letters[rng() % letters.size()];
    return out;
  };
  const std::vector<std::string> octets = {"0",   "00",  "01",  "9",   "10",  "99",
                                           "100", "199", "200", "249", "250", "255",
                                           "256", "259", "260", "300", "999", ""};
  const auto ipv4_like = [&] {  // 3 to 5 parts, near the octets' limits or random digits
    std::string s;
    for (size_t parts = 3 + rng() % 3, i = 0; i < parts; ++i) {
      if (i) s += '.';
      s += rng() % 2 ? octets[rng() % octets.size()] : pick("0123456789", 3 + (rng() % 8 == 0));
    }
    if (rng() % 8 == 0) s.insert(rng() % (s.size() + 1), 1, "a:. "[rng() % 4]);
    return s;
  };
  const auto ipv6_like = [&] { return pick("01fA:.:", 18); };
  for (const auto& [name, valid, make] :
       {std::make_tuple("ipv4", valid_ipv4, std::function<std::string()>(ipv4_like)),
        std::make_tuple("ipv6", valid_ipv6, std::function<std::string()>(ipv6_like))}) {
    SCOPED_TRACE(name);
    const auto g = format_grammar(name);
    size_t taken = 0;
    for (int i = 0; i < 20000; ++i) {
      const std::string s = make();
      const bool ok = valid(s);
      EXPECT_EQ(accepts_string(g, s), ok) << s;
      taken += ok;
    }
    EXPECT_GT(taken, 200u);
  }
}

TEST(JsonSchemaFormat, LengthsPatternsAndUnknownFormats) {
  // Lengths every string of the format meets add nothing; others cannot be combined.
  const auto uuid = format_grammar("uuid", R"(, "minLength": 36, "maxLength": 40)");
  EXPECT_TRUE(accepts_string(uuid, "123e4567-e89b-12d3-a456-426614174000"));
  const auto error = [](const std::string& schema) {
    Result<std::string> g = json_schema_to_grammar(schema);
    return g.is_ok() ? std::string("(compiled)") : g.status().message();
  };
  EXPECT_EQ(error(R"({"type": "string", "format": "email", "maxLength": 20})"),
            "json schema: (root): 'maxLength' beside 'format' \"email\" (strings of 3 to 249 "
            "characters): cannot be combined in one grammar unless every such string meets them");
  EXPECT_EQ(error(R"({"type": "string", "format": "date", "minLength": 11})"),
            "json schema: (root): 'minLength' beside 'format' \"date\" (strings of 10 to 10 "
            "characters): no string matches both");
  EXPECT_EQ(
      error(R"({"type": "string", "format": "date", "pattern": "^2"})"),
      "json schema: (root): 'pattern' beside 'format' \"date\" cannot be combined in one grammar");
  EXPECT_EQ(error(R"({"type": "string", "format": 3})"),
            "json schema: (root): 'format' must be a string");
  // A format tessera has no rule for is an annotation (JSON Schema's default): any string.
  const auto uri = format_grammar("uri");
  EXPECT_TRUE(accepts_string(uri, "not a uri"));
  const auto uri_pattern = format_grammar("uri", R"(, "pattern": "^https://")");
  EXPECT_TRUE(accepts_string(uri_pattern, "https://x"));
  EXPECT_FALSE(accepts_string(uri_pattern, "http://x"));
  // Formats constrain strings only.
  Result<std::string> integer = json_schema_to_grammar(R"({"type": "integer", "format": "int32"})");
  EXPECT_TRUE(integer.is_ok());
}

TEST(JsonSchemaFormat, EnumValuesAreCheckedAgainstTheFormat) {
  Result<std::string> text =
      json_schema_to_grammar(R"({"enum": ["2024-02-29", "2023-02-29", "x", 5], "format": "date"})");
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  const auto g = *Grammar::parse(*text, "schema");
  const auto takes = [&](const char* doc) {
    GrammarMatcher m(g);
    return m.accept_text(doc) && m.can_end();
  };
  EXPECT_TRUE(takes("\"2024-02-29\""));
  EXPECT_TRUE(takes("5"));
  EXPECT_FALSE(takes("\"2023-02-29\""));
  EXPECT_FALSE(takes("\"x\""));
}

}  // namespace
}  // namespace tessera
