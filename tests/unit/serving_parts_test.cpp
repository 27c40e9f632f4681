// The serving layer's small parts: stop strings over streamed text, prefix-cache bookkeeping.
#include <gtest/gtest.h>

#include "serving/prefix_cache.h"
#include "serving/stop_strings.h"

namespace tessera::serving {
namespace {

std::string feed(StopStrings& s, const std::vector<std::string>& pieces, bool* stopped) {
  std::string out;
  *stopped = false;
  for (const std::string& p : pieces) {
    StopStrings::Released r = s.push(p);
    out += r.text;
    if (r.stopped) {
      *stopped = true;
      return out;
    }
  }
  return out + s.flush();
}

TEST(StopStrings, StopSpanningPiecesIsNeverReleased) {
  StopStrings s({"<|end|>"});
  bool stopped = false;
  EXPECT_EQ(feed(s, {"Hello", " wor", "ld<", "|en", "d|>", "more"}, &stopped), "Hello world");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(s.matched(), "<|end|>");
}

TEST(StopStrings, PartialMatchIsReleasedWhenItTurnsOut) {
  StopStrings s({"STOP"});
  EXPECT_EQ(s.push("abc ST").text, "abc ");  // "ST" could start STOP
  EXPECT_EQ(s.push("ART").text, "START");
  EXPECT_EQ(s.push("S").text, "");
  EXPECT_EQ(s.flush(), "S");  // the end: what was held back is released
}

TEST(StopStrings, EarliestOfSeveralWinsAndNothingFollows) {
  StopStrings s({"\n\n", "ab", ""});
  StopStrings::Released r = s.push("xxab\n\nyy");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "xx");
  EXPECT_EQ(s.matched(), "ab");
  EXPECT_EQ(s.push("more").text, "");
  EXPECT_EQ(s.flush(), "");
}

TEST(StopStrings, NoStopsReleasesEverything) {
  StopStrings s;
  EXPECT_EQ(s.push("a").text, "a");
  EXPECT_EQ(s.push("\xc3\xa9").text, "\xc3\xa9");
}

TEST(PrefixCache, LongestPrefixCoveringAndLru) {
  PrefixCache c(4, 3);  // holders 4, 5, 6
  EXPECT_EQ(c.longest_prefix(std::vector<TokenId>{1, 2, 3}).holder, -1);
  EXPECT_EQ(c.free_holder(), 4);
  c.insert(4, {1, 2, 3, 4}, 0);
  EXPECT_EQ(c.free_holder(), 5);
  c.insert(5, {1, 2, 9}, 1);
  PrefixCache::Match m = c.longest_prefix(std::vector<TokenId>{1, 2, 3, 7});
  EXPECT_EQ(m.holder, 4);
  EXPECT_EQ(m.length, 3);
  m = c.longest_prefix(std::vector<TokenId>{1, 2, 9, 9});
  EXPECT_EQ(m.holder, 5);
  EXPECT_EQ(m.length, 3);
  EXPECT_EQ(m.origin, 1);
  EXPECT_EQ(c.covering(std::vector<TokenId>{1, 2}), 5);  // both cover; 5 was used last
  EXPECT_EQ(c.covering(std::vector<TokenId>{1, 2, 3, 4, 5}), -1);
  EXPECT_EQ(c.covered_by(std::vector<TokenId>{1, 2, 3, 4, 5}), std::vector<SeqId>{4});
  // LRU: 4 was used before 5's last use (covering touched 5).
  EXPECT_EQ(c.least_recently_used(), 4);
  c.longest_prefix(std::vector<TokenId>{1, 2, 3});
  EXPECT_EQ(c.least_recently_used(), 5);
  c.insert(6, {7}, 1);
  EXPECT_EQ(c.least_recently_used(1), 5);  // among slot 1's entries
  EXPECT_EQ(c.least_recently_used(0), 4);
  EXPECT_EQ(c.least_recently_used(2), -1);
  EXPECT_EQ(c.least_recently_used(1, 5), 6);  // 5 excepted
  // Among equal matches a preferred origin wins over a more recent entry.
  // {1, 2, 5} shares 2 tokens with both 4 (origin 0, used last) and 5 (origin 1).
  EXPECT_EQ(c.longest_prefix(std::vector<TokenId>{1, 2, 5}, [](SeqId o) { return o == 1; }).holder, 5);
  EXPECT_EQ(c.longest_prefix(std::vector<TokenId>{1, 2, 5}, [](SeqId o) { return o == 0; }).holder, 4);
  EXPECT_EQ(c.longest_prefix(std::vector<TokenId>{1, 2, 5}).holder, 4);  // the most recent
  EXPECT_EQ(c.free_holder(), -1);
  EXPECT_EQ(c.size(), 3);
  EXPECT_EQ(c.n_tokens(), 8);
  c.erase(5);
  EXPECT_EQ(c.free_holder(), 5);
  EXPECT_EQ(c.size(), 2);
}

TEST(PrefixCache, NoHoldersMeansNothingIsCached) {
  PrefixCache c(8, 0);
  EXPECT_EQ(c.free_holder(), -1);
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.least_recently_used(), -1);
}

}  // namespace
}  // namespace tessera::serving
