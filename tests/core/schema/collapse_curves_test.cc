// The collapse rule (core/training_signals.h) on spread-ratio curves
// recorded through the product: the probe sweep of issue 12 (post-norm
// sheared swap on mirrored Pareto, no symlog, N = 512, d = 64, 6 layers,
// 4 heads, batch 2, warm-up 100, lr 5e-3, 1500 steps, seed 0), softmax and
// log, one point every 20 steps (`tailsweep curves probe-collapse --metric
// spread_ratio`).

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/training_signals.h"

namespace tailsweep {
namespace {

// "step,value" lines.
std::vector<std::pair<int64_t, double>> Curve(const std::string& name) {
  std::ifstream in(std::string(TAILSWEEP_SOURCE_DIR) + "/tests/core/testdata/" +
                   name);
  EXPECT_TRUE(in) << name;
  std::vector<std::pair<int64_t, double>> out;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string step, value;
    std::getline(row, step, ',');
    std::getline(row, value);
    out.emplace_back(std::stoll(step), std::stod(value));
  }
  return out;
}

TEST(CollapseCurves, SoftmaxsSpreadHittingZeroIsACollapseThoughItRecovers) {
  const auto curve = Curve("probe_spread_softmax.csv");
  ASSERT_GT(curve.size(), 50u);
  CollapseTracker t(0.05);
  int64_t first_below = -1;
  for (const auto& [step, spread] : curve) {
    t.Observe(step, spread);
    if (first_below < 0 && spread < 0.05) first_below = step;
  }
  ASSERT_GT(first_below, 0) << "the recorded run must reach the threshold";
  EXPECT_TRUE(t.collapsed());
  EXPECT_EQ(t.onset(), first_below);
  // It recovered after: the old rule ("below to the end") called it healthy.
  EXPECT_GT(curve.back().second, 0.05);
}

TEST(CollapseCurves, TheLogKernelTwinIsHealthy) {
  const auto curve = Curve("probe_spread_log.csv");
  ASSERT_GT(curve.size(), 50u);
  CollapseTracker t(0.05);
  for (const auto& [step, spread] : curve) t.Observe(step, spread);
  EXPECT_FALSE(t.collapsed());
  // Its final evaluation's spread ratio was 1.19 (softmax's 0.99, with a
  // distance ratio of 9.1 against log's 2.5).
  EXPECT_EQ(CollapseOnsetAfterEvaluation(t.onset(), curve.back().first, 1.19),
            -1);
}

}  // namespace
}  // namespace tailsweep
