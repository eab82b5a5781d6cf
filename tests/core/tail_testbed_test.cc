#include "core/tail_testbed.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

TEST(SplicedPareto, MatchesReferenceMassAndDensityAtTheSeam) {
  for (double q0 : {0.9, 0.95, 0.99}) {
    for (double a : {1.1, 1.5, 2.5}) {
      const SplicedPareto law{1.5, q0, a};
      const double z0 = law.Seam();
      EXPECT_NEAR(law.Survival(z0), 1 - q0, 1e-12);
      EXPECT_NEAR(law.Survival(z0 * (1 + 1e-12)), 1 - q0, 1e-9);
      EXPECT_NEAR(law.Density(z0 * (1 + 1e-12)), 1.5 * std::pow(z0, -2.5),
                  1e-9);
      for (double u : {0.1, 0.5, q0, 0.999, 1 - 1e-10}) {
        EXPECT_NEAR(1 - law.Survival(law.Quantile(u)), u, 1e-9) << u;
      }
    }
  }
  // Index a* gives the reference itself.
  const SplicedPareto same{1.5, 0.9, 1.5};
  EXPECT_NEAR(same.Quantile(0.999), std::pow(0.001, -1 / 1.5), 1e-9);
}

TEST(TailTestbed, RejectsBadConfigs) {
  TailsConfig c;
  c.budgets = {64};
  c.indices = {1.2, 1.3};
  TS_EXPECT_CODE(RunTailTestbed(c), absl::StatusCode::kInvalidArgument);
  c.indices = {-1, 1.5};
  TS_EXPECT_CODE(RunTailTestbed(c), absl::StatusCode::kInvalidArgument);
  c.indices = {1.5};
  c.seams = {1.0};
  TS_EXPECT_CODE(RunTailTestbed(c), absl::StatusCode::kInvalidArgument);
  c.seams = {0.9};
  c.trials = 1;
  TS_EXPECT_CODE(RunTailTestbed(c), absl::StatusCode::kInvalidArgument);
  c.trials = 2;
  c.budgets = {1};
  TS_EXPECT_CODE(RunTailTestbed(c), absl::StatusCode::kInvalidArgument);
}

TEST(TailTestbed, DeterministicAndZeroNoiseAtTheReference) {
  TailsConfig c;
  c.budgets = {256};
  c.trials = 4;
  c.indices = {1.4, 1.5};
  c.seams = {0.9};
  TS_ASSERT_OK_AND_ASSIGN(auto a, RunTailTestbed(c));
  TS_ASSERT_OK_AND_ASSIGN(auto b, RunTailTestbed(c));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].ed_mean, b[0].ed_mean);
  EXPECT_EQ(a[1].ed_noise, 0.0);
  EXPECT_EQ(a[1].w2_noise, 0.0);
}

// The paper's finding (science.md 7): at a large budget the ED minimum sits
// at a* = 1.5 for every seam, and the separation of 1.3 from 1.5 in noise
// units grows with the budget.
TEST(TailTestbed, EnergyMinimumAtReferenceAndSeparationGrowsWithBudget) {
  TailsConfig c;
  c.indices = {1.3, 1.4, 1.5, 1.6, 1.7};
  c.seams = {0.9, 0.95, 0.99};
  c.budgets = {1024, 16384, 262144};
  c.trials = 12;
  c.seed = 1;
  TS_ASSERT_OK_AND_ASSIGN(std::vector<TailsRow> rows, RunTailTestbed(c));
  ASSERT_EQ(rows.size(), 45u);
  for (double seam : c.seams) {
    std::map<int64_t, double> separation;
    for (int64_t n : c.budgets) {
      double best_index = 0, best = INFINITY;
      for (const TailsRow& r : rows) {
        if (r.seam != seam || r.n != n) continue;
        if (r.ed_mean < best) best = r.ed_mean, best_index = r.index;
        if (r.index == 1.3) separation[n] = r.ed_noise;
      }
      if (n == 262144) {
        EXPECT_DOUBLE_EQ(best_index, 1.5) << "seam " << seam;
      }
    }
    EXPECT_LT(separation[1024], separation[16384]) << "seam " << seam;
    EXPECT_LT(separation[16384], separation[262144]) << "seam " << seam;
  }
}

}  // namespace
}  // namespace tailsweep
