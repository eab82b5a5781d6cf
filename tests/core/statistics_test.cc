#include "core/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/energy_1d.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

TEST(Statistics, QuantilesMatchNumpyLinearInterpolation) {
  const std::vector<double> v = {5, 1, 4, 2, 3};
  EXPECT_DOUBLE_EQ(Median(v), 3);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Quantile(v, 0.25), 2);
  EXPECT_DOUBLE_EQ(Quantile(v, 0.1), 1.4);
  EXPECT_DOUBLE_EQ(Quantile(v, 1.0), 5);
  EXPECT_DOUBLE_EQ(Mean(v), 3);
  EXPECT_DOUBLE_EQ(SampleStd({1, 2, 3, 4}), std::sqrt(5.0 / 3.0));
  EXPECT_EQ(DistanceRatios({2, 4}, 2), (std::vector<double>{1, 2}));
}

TEST(Hill, RecoversTheIndexOfExactParetoSamples) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (double index : {1.1, 1.5, 2.0, 3.0}) {
    std::vector<double> x(100000);
    for (double& v : x) v = std::pow(1.0 - uniform(rng), -1.0 / index);
    TS_ASSERT_OK_AND_ASSIGN(
        double h, HillEstimate(x, HillOrderStatistics(x.size(), 0.1)));
    EXPECT_LT(std::fabs(h - index) / index, 0.05) << index << " got " << h;
  }
}

TEST(Hill, RejectsBadK) {
  TS_EXPECT_CODE(HillEstimate({1, 2, 3}, 0),
                 absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(HillEstimate({1, 2, 3}, 3),
                 absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(HillEstimate({0, 0, 5}, 2),
                 absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HillOrderStatistics(16384, 0.1), 1639);
  EXPECT_EQ(HillOrderStatistics(10, 0.0), 1);
}

TEST(Bootstrap, IntervalsCoverAKnownMeanAboutNinetyFivePercent) {
  std::mt19937_64 rng(2);
  std::normal_distribution<double> normal(3.0, 2.0);
  const int repeats = 400;
  int covered = 0;
  for (int r = 0; r < repeats; ++r) {
    std::vector<double> sample(80);
    for (double& v : sample) v = normal(rng);
    TS_ASSERT_OK_AND_ASSIGN(
        Interval ci,
        BootstrapInterval(sample, Statistic::kMean, {1000, 0.95, uint64_t(r)}));
    covered += ci.low <= 3.0 && 3.0 <= ci.high;
  }
  const double coverage = static_cast<double>(covered) / repeats;
  // Percentile intervals under-cover slightly at n = 80; binomial sd ~ 0.011.
  EXPECT_GT(coverage, 0.91);
  EXPECT_LT(coverage, 0.98);
}

TEST(Bootstrap, DeterministicAndValidated) {
  const std::vector<double> v = {1, 5, 2, 8, 3};
  TS_ASSERT_OK_AND_ASSIGN(
      Interval a, BootstrapInterval(v, Statistic::kMedian, {500, 0.9, 4}));
  TS_ASSERT_OK_AND_ASSIGN(
      Interval b, BootstrapInterval(v, Statistic::kMedian, {500, 0.9, 4}));
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  EXPECT_LE(a.low, a.high);
  TS_EXPECT_CODE(BootstrapInterval({}, Statistic::kMean, {}),
                 absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(BootstrapInterval(v, Statistic::kMean, {0, 0.95, 0}),
                 absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(BootstrapInterval(v, Statistic::kMean, {10, 1.0, 0}),
                 absl::StatusCode::kInvalidArgument);
}

double BruteForceUnbiased(const std::vector<double>& a,
                          const std::vector<double>& b) {
  const double n = a.size(), m = b.size();
  double ab = 0, aa = 0, bb = 0;
  for (double x : a)
    for (double y : b) ab += std::fabs(x - y);
  for (double x : a)
    for (double y : a) aa += std::fabs(x - y);
  for (double x : b)
    for (double y : b) bb += std::fabs(x - y);
  return 2 * ab / (n * m) - aa / (n * (n - 1)) - bb / (m * (m - 1));
}

TEST(HillErrorStatistic, UnbiasedEnergyMatchesBruteForceAndCentresOnZero) {
  std::mt19937_64 rng(3);
  std::exponential_distribution<double> law(1.0);
  const std::vector<double> a = {0.3, 1.2, 0.3, 2.5};
  const std::vector<double> b = {0.1, 0.9, 4.0};
  EXPECT_NEAR(UnbiasedEnergyDistance1D(a, b), BruteForceUnbiased(a, b), 1e-14);
  // Same law: the mean over trials is ~0 and some estimates are negative.
  double total = 0;
  int negative = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> x(20), y(30);
    for (double& v : x) v = law(rng);
    for (double& v : y) v = law(rng);
    const double e = UnbiasedEnergyDistance1D(x, y);
    total += e;
    negative += e < 0;
  }
  EXPECT_LT(std::fabs(total / trials), 0.01);
  EXPECT_GT(negative, trials / 10);
  // Different laws: clearly positive.
  std::vector<double> x(200), y(200);
  for (double& v : x) v = law(rng);
  for (double& v : y) v = 3 * law(rng);
  EXPECT_GT(UnbiasedEnergyDistance1D(x, y), 0.5);
}

}  // namespace
}  // namespace tailsweep
