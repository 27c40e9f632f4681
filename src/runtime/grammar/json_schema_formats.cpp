// The rules of the string formats: each matches exactly the strings valid under the
// format's standard, or, where a standard's limit spans the whole string (a host name's
// 253 characters, an address's 254), a subset whose parts are bounded so that every
// string stays within it. Written raw: none of these characters needs a JSON escape.
#include "runtime/grammar/json_schema_formats.h"

#include "runtime/grammar/json_schema_gbnf.h"

namespace tessera::grammar::schema {
namespace {

std::vector<FixedRule> make_format_rules() {
  std::vector<FixedRule> rules = {
      // RFC 3339 full-date: days per month, 29 February in leap years only (divisible by
      // 4, and centuries by 400; the year 0000 is one).
      {"date",
       R"(date-year "-" ( ( "0" [13578] | "1" [02] ) "-" ( date-day28 | "29" | "3" [01] ) | )"
       R"(( "0" [469] | "11" ) "-" ( date-day28 | "29" | "30" ) | "02-" date-day28 ) | )"
       R"(date-leap-year "-02-29")",
       {"date-year", "date-day28", "date-leap-year"}},
      {"date-year", "[0-9]{4}", {}},
      {"date-day28", R"("0" [1-9] | "1" [0-9] | "2" [0-8])", {}},
      {"date-leap-year",
       R"([0-9] [0-9] ( "0" [48] | [2468] [048] | [13579] [26] ) | ( [02468] [048] | [13579] [26] ) "00")",
       {}},
      // RFC 3339 full-time: the offset is required; seconds 00-59 (no leap second 60);
      // at most 9 fraction digits; "T" and "Z" in upper case.
      {"time",
       R"(time-hour ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? )"
       R"(( "Z" | [+-] time-hour ":" [0-5] [0-9] ))",
       {"time-hour"}},
      {"time-hour", R"([01] [0-9] | "2" [0-3])", {}},
      {"date-time", R"(date "T" time)", {"date", "time"}},
      // RFC 3339 appendix A (ISO 8601 durations), at most 9 digits per number.
      {"duration",
       R"("P" ( duration-date | duration-time | duration-num "W" ))",
       {"duration-date", "duration-time", "duration-num"}},
      {"duration-date",
       R"(( duration-num "D" | duration-num "M" ( duration-num "D" )? | )"
       R"(duration-num "Y" ( duration-num "M" ( duration-num "D" )? )? ) duration-time?)",
       {"duration-num", "duration-time"}},
      {"duration-time",
       R"("T" ( duration-num "H" ( duration-num "M" ( duration-num "S" )? )? | )"
       R"(duration-num "M" ( duration-num "S" )? | duration-num "S" ))",
       {"duration-num"}},
      {"duration-num", "[0-9]{1,9}", {}},
      // RFC 5321 Mailbox with a dot-atom local part (no quoted strings) and a host name
      // domain (no address literals): local part of at most 32 atext characters with
      // single dots between them (at most 63 characters), at most 6 domain labels.
      {"email",
       R"(email-local "@" hostname-label ( "." hostname-label ){0,5})",
       {"email-local", "hostname-label"}},
      {"email-local", R"(email-atext ( "."? email-atext ){0,31})", {"email-atext"}},
      {"email-atext", R"([a-zA-Z0-9!#$%&'*+/=?^_`{|}~-])", {}},
      // RFC 1123 host names: labels of letters, digits and inner hyphens; at most 8
      // labels of at most 30 characters, so at most 247 characters (the limit is 253).
      {"hostname", R"(hostname-label ( "." hostname-label ){0,7})", {"hostname-label"}},
      {"hostname-label", R"([a-zA-Z0-9] ( [a-zA-Z0-9-]{0,28} [a-zA-Z0-9] )?)", {}},
      // RFC 2673 dotted quad, no leading zeros.
      {"ipv4", R"(ipv4-octet "." ipv4-octet "." ipv4-octet "." ipv4-octet)", {"ipv4-octet"}},
      {"ipv4-octet", R"("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9])", {}},
      // RFC 4291 text forms, as RFC 3986's IPv6address spells them out (no zone).
      {"ipv6",
       R"(( ipv6-h16 ":" ){6} ipv6-ls32 | "::" ( ipv6-h16 ":" ){5} ipv6-ls32 | )"
       R"(ipv6-h16? "::" ( ipv6-h16 ":" ){4} ipv6-ls32 | )"
       R"(( ipv6-h16 ( ":" ipv6-h16 )? )? "::" ( ipv6-h16 ":" ){3} ipv6-ls32 | )"
       R"(( ipv6-h16 ( ":" ipv6-h16 ){0,2} )? "::" ( ipv6-h16 ":" ){2} ipv6-ls32 | )"
       R"(( ipv6-h16 ( ":" ipv6-h16 ){0,3} )? "::" ipv6-h16 ":" ipv6-ls32 | )"
       R"(( ipv6-h16 ( ":" ipv6-h16 ){0,4} )? "::" ipv6-ls32 | )"
       R"(( ipv6-h16 ( ":" ipv6-h16 ){0,5} )? "::" ipv6-h16 | )"
       R"(( ipv6-h16 ( ":" ipv6-h16 ){0,6} )? "::")",
       {"ipv6-h16", "ipv6-ls32"}},
      {"ipv6-h16", "[0-9a-fA-F]{1,4}", {}},
      {"ipv6-ls32", R"(ipv6-h16 ":" ipv6-h16 | ipv4)", {"ipv6-h16", "ipv4"}},
      // RFC 4122: 8-4-4-4-12 hex digits, either case.
      {"uuid",
       R"(uuid-hex{8} "-" uuid-hex{4} "-" uuid-hex{4} "-" uuid-hex{4} "-" uuid-hex{12})",
       {"uuid-hex"}},
      {"uuid-hex", "[0-9a-fA-F]", {}},
  };
  // uuid1 ... uuid5 (llama.cpp's names): that version, and the RFC 4122 variant.
  for (char v = '1'; v <= '5'; ++v) {
    rules.push_back({std::string("uuid") + v,
                     std::string(R"(uuid-hex{8} "-" uuid-hex{4} "-)") + v +
                         R"(" uuid-hex{3} "-" [89abAB] uuid-hex{3} "-" uuid-hex{12})",
                     {"uuid-hex"}});
  }
  for (const StringFormat& f : string_formats()) {
    const std::string content = f.rule.substr(0, f.rule.size() - std::string("-string").size());
    rules.push_back({f.rule, R"("\"" )" + content + R"( "\"")", {content}});
  }
  return rules;
}

}  // namespace

const std::vector<StringFormat>& string_formats() {
  static const std::vector<StringFormat> formats = [] {
    std::vector<StringFormat> out = {
        {"date", "date-string", 10, 10},
        {"time", "time-string", 9, 24},
        {"date-time", "date-time-string", 20, 35},
        {"duration", "duration-string", 3, 62},
        {"email", "email-string", 3, 249},
        {"hostname", "hostname-string", 1, 247},
        {"ipv4", "ipv4-string", 7, 15},
        {"ipv6", "ipv6-string", 2, 45},
        {"uuid", "uuid-string", 36, 36},
    };
    for (char v = '1'; v <= '5'; ++v)
      out.push_back({std::string("uuid") + v, std::string("uuid") + v + "-string", 36, 36});
    return out;
  }();
  return formats;
}

const StringFormat* find_format(std::string_view name) {
  for (const StringFormat& f : string_formats()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const std::vector<FixedRule>& format_rules() {
  static const std::vector<FixedRule> rules = make_format_rules();
  return rules;
}

}  // namespace tessera::grammar::schema
