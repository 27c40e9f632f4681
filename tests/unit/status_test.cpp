// Result<T> checks its accessors in every build: value() of an error aborts with the
// error's message instead of running on as undefined behaviour (Release has no assert).
#include <gtest/gtest.h>

#include <string>

#include "tessera/status.h"

namespace tessera {
namespace {

Result<int> parse_digit(char c) {
  if (c < '0' || c > '9') return Status::error(std::string("not a digit: '") + c + "'");
  return c - '0';
}

TEST(Result, HoldsAValueOrAnError) {
  Result<int> seven = parse_digit('7');
  ASSERT_TRUE(seven);
  EXPECT_EQ(*seven, 7);
  EXPECT_EQ(seven.value(), 7);
  Result<int> bad = parse_digit('x');
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.status().message(), "not a digit: 'x'");
}

TEST(ResultDeathTest, ValueOfAnErrorAbortsNamingTheError) {
  Result<int> bad = parse_digit('x');
  EXPECT_DEATH((void)bad.value(), "value\\(\\) of a Result that holds an error: not a digit: 'x'");
  EXPECT_DEATH((void)*bad, "not a digit");
  const Result<std::string> text = Status::error("no text");
  EXPECT_DEATH((void)text->size(), "no text");
}

TEST(ResultDeathTest, AnErrorMadeFromAnOkStatusAborts) {
  EXPECT_DEATH(Result<int>{Status::ok()}, "a Result made from an ok Status");
}

}  // namespace
}  // namespace tessera
