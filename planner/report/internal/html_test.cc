#include "planner/report/internal/html.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "planner/units.h"

namespace moetune::planner::report_internal {
namespace {

TEST(EscapeTest, EscapesMarkupAndQuotes) {
  EXPECT_EQ(Escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(Escape("plain text 1.5"), "plain text 1.5");
  EXPECT_EQ(Escape("DeepSeek-V3 \xC3\xA9"), "DeepSeek-V3 \xC3\xA9");  // UTF-8 kept
}

TEST(EscapeTest, ReplacesControlCharacters) {
  EXPECT_EQ(Escape(std::string("a\x01" "b\tc\n", 6)), "a\xEF\xBF\xBD" "b\tc\n");
  EXPECT_EQ(Escape(std::string("x\0y", 3)), "x\xEF\xBF\xBDy");
}

TEST(DataNumTest, SixSignificantDigits) {
  EXPECT_EQ(DataNum(0.9), "0.9");
  EXPECT_EQ(DataNum(18204.444444), "18204.4");
  EXPECT_EQ(DataNum(68 * units::kGiB), "7.30144e+10");  // 68 x 2^30
  EXPECT_EQ(DataNum(-0.0), "0");
  EXPECT_EQ(DataNum(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(DataNum(std::numeric_limits<double>::infinity()), "inf");
}

TEST(PxTest, TwoDecimalsTrimmed) {
  EXPECT_EQ(Px(12.5), "12.5");
  EXPECT_EQ(Px(3), "3");
  EXPECT_EQ(Px(1.23456), "1.23");
  EXPECT_EQ(Px(-0.001), "0");
  EXPECT_EQ(Px(std::nan("")), "0");
}

TEST(HumanTest, Figures) {
  EXPECT_EQ(HumanSeconds(1.2345), "1.234 s");  // %.3f rounds half-even-ish
  EXPECT_EQ(HumanSeconds(0.0852), "85.2 ms");
  EXPECT_EQ(HumanSeconds(0.00042), "420 us");
  EXPECT_EQ(HumanGiB(71.25 * units::kGiB), "71.2 GiB");
  EXPECT_EQ(HumanCount(1234567.6), "1,234,568");
  EXPECT_EQ(HumanCount(999), "999");
  EXPECT_EQ(HumanCount(-1000), "-1,000");
  EXPECT_EQ(HumanPercent(0.4123), "41.2%");
  EXPECT_EQ(HumanPercent(0.4, 0), "40%");
}

}  // namespace
}  // namespace moetune::planner::report_internal
