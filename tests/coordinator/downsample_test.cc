// DownsampleMinMax: curves cut to a budget keep their ends and extremes.

#include "coordinator/downsample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tailsweep {
namespace {

std::vector<MetricPoint> Series(int n) {
  std::vector<MetricPoint> out;
  for (int i = 0; i < n; ++i) out.push_back({"loss", 10 * (i + 1), 1.0});
  return out;
}

std::vector<int64_t> Steps(const std::vector<MetricPoint>& points) {
  std::vector<int64_t> out;
  for (const MetricPoint& p : points) out.push_back(p.step);
  return out;
}

TEST(DownsampleMinMax, ASeriesWithinTheBudgetComesBackAsItIs) {
  EXPECT_EQ(Steps(DownsampleMinMax(Series(5), 5)),
            (std::vector<int64_t>{10, 20, 30, 40, 50}));
  EXPECT_TRUE(DownsampleMinMax({}, 4).empty());
}

TEST(DownsampleMinMax, KeepsTheEndsAndEachBucketsLowAndHighInStepOrder) {
  std::vector<MetricPoint> s = Series(1000);
  s[500].value = 50;    // a spike
  s[700].value = 1e-6;  // the collapse
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  s[900].value = kNaN;  // the diverged step
  const std::vector<MetricPoint> out = DownsampleMinMax(s, 100);
  ASSERT_LE(out.size(), 100u);
  EXPECT_GE(out.size(), 50u);
  EXPECT_EQ(out.front().step, 10);
  EXPECT_EQ(out.back().step, 10000);
  bool spike = false, collapse = false, nan = false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(out[i - 1].step, out[i].step);
    }
    spike |= out[i].value == 50;
    collapse |= out[i].value == 1e-6;
    nan |= std::isnan(out[i].value);
  }
  EXPECT_TRUE(spike);
  EXPECT_TRUE(collapse);
  EXPECT_TRUE(nan);
}

TEST(DownsampleMinMax, AllNonFiniteBucketsKeepOnePoint) {
  std::vector<MetricPoint> s = Series(100);
  for (MetricPoint& p : s) p.value = std::numeric_limits<double>::infinity();
  const std::vector<MetricPoint> out = DownsampleMinMax(s, 10);
  EXPECT_LE(out.size(), 10u);
  EXPECT_GE(out.size(), 6u);
}

}  // namespace
}  // namespace tailsweep
