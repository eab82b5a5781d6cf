// The collapse rule (core/training_signals.h) on spread-ratio curves
// recorded through the product: the probe sweep of issue 12 (post-norm
// sheared swap on mirrored Pareto, no symlog, N = 512, d = 64, 6 layers,
// 4 heads, batch 2, warm-up 100, lr 5e-3, 1500 steps, seed 0), softmax and
// log, one point every 20 steps (`tailsweep curves probe-collapse --metric
// spread_ratio`).

#include <gtest/gtest.h>

#include <cmath>
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

TEST(CollapseRules, EachRuleJudgesTheSameCurveItsOwnWay) {
  // Logged every 20 steps: one dip (step 40), then a stretch of three
  // (100-140), a NaN (a diverged output counts as below) and a recovery.
  const std::vector<std::pair<int64_t, double>> logged = {
      {20, 0.9},   {40, 0.01},  {60, 0.5},   {80, 0.04},
      {100, 0.03}, {120, 0.02}, {140, 0.01}, {160, 0.8}};
  CollapseOnsets o = JudgeCollapse(/*any_step_onset=*/33, logged, 0.05,
                                   /*final_step=*/160, /*eval_spread=*/0.3);
  EXPECT_EQ(o.any_step, 33);     // a step between two logged ones
  EXPECT_EQ(o.logged_step, 40);  // the first logged dip
  EXPECT_EQ(o.logged_run, 80);   // 80, 100, 120 in a row
  EXPECT_EQ(o.final_eval, -1);   // 0.3 is not below 0.25
  EXPECT_EQ(OnsetUnder(o, CollapseRule::kLoggedRun), 80);
  EXPECT_EQ(OnsetUnder(o, CollapseRule::kFinalEval), -1);
  // Two in a row, a NaN third: three; a final spread below 0.25 (or NaN).
  o = JudgeCollapse(-1, {{20, 0.01}, {40, 0.02}, {60, std::nan("")}}, 0.05, 60,
                    std::nan(""));
  EXPECT_EQ(o.any_step, -1);
  EXPECT_EQ(o.logged_run, 20);
  EXPECT_EQ(o.final_eval, 60);
  // Dips of two, never three: no sustained collapse.
  o = JudgeCollapse(5, {{20, 0.01}, {40, 0.02}, {60, 0.9}, {80, 0.01}}, 0.05,
                    80, 1.0);
  EXPECT_EQ(o.logged_step, 20);
  EXPECT_EQ(o.logged_run, -1);
}

TEST(CollapseRules, TheRecordedSoftmaxProbeUnderEachRule) {
  // The softmax probe above, logged every 20 steps: below 0.05 at steps
  // 480 and 500 only (0.007, 0.015), then back up. Collapsed under
  // any_step and logged_step, not under logged_3 (the default): two logged
  // steps are not three.
  const auto curve = Curve("probe_spread_softmax.csv");
  CollapseTracker t(0.05);
  for (const auto& [step, spread] : curve) t.Observe(step, spread);
  const CollapseOnsets o =
      JudgeCollapse(t.onset(), curve, 0.05, curve.back().first, 0.5);
  EXPECT_EQ(o.logged_step, 480);
  EXPECT_EQ(o.logged_step, t.onset());
  EXPECT_EQ(o.logged_run, -1);
  const auto log = Curve("probe_spread_log.csv");
  const CollapseOnsets healthy =
      JudgeCollapse(-1, log, 0.05, log.back().first, 1.0);
  EXPECT_EQ(healthy.logged_step, -1);
  EXPECT_EQ(healthy.logged_run, -1);
}

}  // namespace
}  // namespace tailsweep
