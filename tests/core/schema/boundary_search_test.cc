// The boundary search's plan (core/schema/boundary_search.h), run against
// simulated outcomes: no processes, no store.

#include "core/schema/boundary_search.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/testing/results.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

constexpr char kSpec[] = R"(name: lr-boundary
kind: train
grid:
  kernel: [softmax, log]
fixed: {steps: 10, warmup: 2, n_points: 16}
search:
  key: lr
  range: [1e-3, 1e-2]
  tolerance: 0.1
  seeds: 4
  extra_seeds: 4
  max_probes: 12
)";

// The jobs of a search run to the end: every job asked for is "run" with
// `collapses(kernel, lr, seed)` until the plan asks for nothing more.
struct Simulation {
  SweepSpec spec;
  std::vector<SearchJob> jobs;
  std::set<std::string> ids;
  std::function<bool(const std::string&, double, int64_t)> collapses;

  void Add(const JobSpec& job) {
    if (!ids.insert(job.id).second) return;
    SearchJob j;
    j.cell = job.cell;
    jobs.push_back(j);
  }
  void RunQueued() {
    for (SearchJob& j : jobs) {
      if (j.state != JobState::kQueued) continue;
      std::string kernel, lr, seed;
      for (const auto& [k, v] : j.cell) {
        if (k == "kernel") kernel = v;
        if (k == "lr") lr = v;
        if (k == "seed") seed = v;
      }
      double x = 0;
      int64_t s = 0;
      ASSERT_TRUE(absl::SimpleAtod(lr, &x) && absl::SimpleAtoi(seed, &s));
      j.state = JobState::kDone;
      j.result_json = testing::TestResult(
          collapses(kernel, x, s) ? R"({"collapsed": true, "collapse_step": 5})"
                                  : "{}");
    }
  }
  // Rounds until nothing is asked for; the final plan.
  std::vector<CellSearch> Run(int* rounds) {
    absl::StatusOr<std::vector<JobSpec>> first = ExpandSweep(spec);
    EXPECT_TRUE(first.ok()) << first.status();
    for (const JobSpec& j : *first) Add(j);
    for (*rounds = 0; *rounds < 100; ++*rounds) {
      RunQueued();
      std::vector<CellSearch> plan = PlanSearch(spec, jobs);
      size_t before = jobs.size();
      for (const CellSearch& c : plan) {
        for (const auto& [probe, seed] : c.add) {
          absl::StatusOr<JobSpec> job = ProbeJob(spec, c.cell, probe, seed);
          EXPECT_TRUE(job.ok()) << job.status();
          if (job.ok()) Add(*job);
        }
      }
      if (jobs.size() == before) return plan;
    }
    ADD_FAILURE() << "the search never ended";
    return {};
  }
};

TEST(BoundarySearch, ASharpFlipIsBracketedWithinTheToleranceByBisection) {
  Simulation sim;
  TS_ASSERT_OK_AND_ASSIGN(sim.spec, ParseSweepSpec(kSpec, "spec"));
  // softmax collapses from lr 3.7e-3 on, log from 8e-3 on, every seed.
  sim.collapses = [](const std::string& kernel, double lr, int64_t) {
    return lr >= (kernel == "softmax" ? 3.7e-3 : 8e-3);
  };
  int rounds = 0;
  const std::vector<CellSearch> plan = sim.Run(&rounds);
  ASSERT_EQ(plan.size(), 2u);
  // An ideal bisection of [1e-3, 1e-2] down to hi/lo <= 1.1: both ends,
  // then ceil(log2(ln 10 / ln 1.1)) = 5 midpoints; 4 seeds each.
  const int64_t ideal = 4 * (2 + 5);
  for (const CellSearch& c : plan) {
    const double flip = c.cell[0].second == "softmax" ? 3.7e-3 : 8e-3;
    EXPECT_EQ(c.state, CellSearch::State::kFound) << c.cell[0].second;
    EXPECT_LT(c.bracket_lo, flip);
    EXPECT_GE(c.bracket_hi, flip);
    EXPECT_LE(c.bracket_hi / c.bracket_lo - 1, 0.1 + 1e-3);
    EXPECT_EQ(c.runs, ideal) << c.cell[0].second;
    EXPECT_TRUE(c.add.empty());
    for (const ProbePoint& p : c.probes) {
      EXPECT_EQ(p.yes + p.no, 4) << p.value;
      EXPECT_NE(p.verdict, ProbePoint::Verdict::kPending);
    }
  }
  // The plan of finished results asks for nothing again (idempotent).
  for (const CellSearch& c : PlanSearch(sim.spec, sim.jobs)) {
    EXPECT_TRUE(c.add.empty());
  }
}

TEST(BoundarySearch, ASplitVoteEarnsExtraSeedsOnceThenTheFractionDecides) {
  Simulation sim;
  TS_ASSERT_OK_AND_ASSIGN(sim.spec, ParseSweepSpec(kSpec, "spec"));
  // Near the flip, seeds disagree: at lr in [3e-3, 5e-3) only even seeds
  // collapse, so 2 of 4 and then 4 of 8: split, decided as "above".
  sim.collapses = [](const std::string&, double lr, int64_t seed) {
    if (lr >= 5e-3) return true;
    if (lr >= 3e-3) return seed % 2 == 0;
    return false;
  };
  int rounds = 0;
  const std::vector<CellSearch> plan = sim.Run(&rounds);
  ASSERT_FALSE(plan.empty());
  const CellSearch& c = plan[0];
  EXPECT_EQ(c.state, CellSearch::State::kFound);
  bool saw_extra = false;
  for (const ProbePoint& p : c.probes) {
    if (p.x >= 3e-3 && p.x < 5e-3) {
      EXPECT_EQ(p.yes + p.no, 8) << p.value;  // 4 + 4 extra, once
      EXPECT_EQ(p.verdict, ProbePoint::Verdict::kAbove) << p.value;
      saw_extra = true;
    } else {
      EXPECT_EQ(p.yes + p.no, 4) << p.value;
    }
  }
  EXPECT_TRUE(saw_extra);
  EXPECT_LT(c.bracket_lo, 3e-3);
  EXPECT_GE(c.bracket_hi, 3e-3);
}

TEST(BoundarySearch, AFallingOutcomeIsBracketedFromTheOtherSide) {
  // Collapse as the tail index falls: the outcome holds below the boundary.
  Simulation sim;
  std::string text = kSpec;
  text += "  direction: falling\n";
  TS_ASSERT_OK_AND_ASSIGN(sim.spec, ParseSweepSpec(text, "spec"));
  EXPECT_FALSE(sim.spec.search->rising);
  // Its stored form keeps the direction.
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec again,
                          ParseSweepSpec(SweepSpecYaml(sim.spec), "again"));
  EXPECT_FALSE(again.search->rising);
  sim.collapses = [](const std::string& kernel, double lr, int64_t) {
    if (kernel == "log") return true;  // everywhere: the flip is above
    return lr < 4.2e-3;
  };
  int rounds = 0;
  const std::vector<CellSearch> plan = sim.Run(&rounds);
  ASSERT_EQ(plan.size(), 2u);
  const CellSearch& softmax = plan[0];
  EXPECT_EQ(softmax.state, CellSearch::State::kFound);
  EXPECT_LT(softmax.bracket_lo, 4.2e-3);
  EXPECT_GE(softmax.bracket_hi, 4.2e-3);
  EXPECT_LE(softmax.bracket_hi / softmax.bracket_lo - 1, 0.1 + 1e-3);
  EXPECT_EQ(softmax.runs, 4 * (2 + 5));  // the ideal bisection's, as rising
  EXPECT_EQ(plan[1].state, CellSearch::State::kAboveRange);
  EXPECT_EQ(plan[1].runs, 8);

  // A direction that is neither is refused, naming both.
  std::string bad = kSpec;
  bad += "  direction: down\n";
  absl::StatusOr<SweepSpec> refused = ParseSweepSpec(bad, "spec.yaml");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::AllOf(::testing::HasSubstr("spec.yaml"),
                               ::testing::HasSubstr("direction 'down'"),
                               ::testing::HasSubstr("rising"),
                               ::testing::HasSubstr("falling")));
}

TEST(BoundarySearch, AFlipOutsideTheRangeEndsTheSearchAtItsEnds) {
  Simulation sim;
  TS_ASSERT_OK_AND_ASSIGN(sim.spec, ParseSweepSpec(kSpec, "spec"));
  sim.collapses = [](const std::string& kernel, double, int64_t) {
    return kernel == "softmax";  // always; log never
  };
  int rounds = 0;
  const std::vector<CellSearch> plan = sim.Run(&rounds);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].state, CellSearch::State::kBelowRange);
  EXPECT_EQ(plan[1].state, CellSearch::State::kAboveRange);
  for (const CellSearch& c : plan) {
    EXPECT_EQ(c.runs, 8);  // both ends only
    EXPECT_TRUE(std::isnan(c.estimate));
  }
}

TEST(BoundarySearch, PendingRunsAndFailedProbesStopTheNextStep) {
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec spec, ParseSweepSpec(kSpec, "spec"));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> first, ExpandSweep(spec));
  // 2 cells x 2 ends x 4 seeds, each job's cell: kernel, lr, seed.
  ASSERT_EQ(first.size(), 16u);
  EXPECT_EQ(first[0].cell,
            (KeyValues{{"kernel", "softmax"}, {"lr", "0.001"}, {"seed", "0"}}));
  std::vector<SearchJob> jobs;
  for (const JobSpec& j : first)
    jobs.push_back({j.cell, JobState::kQueued, {}});
  for (const CellSearch& c : PlanSearch(spec, jobs)) {
    EXPECT_EQ(c.state, CellSearch::State::kSearching);
    EXPECT_TRUE(c.add.empty());  // waiting for the ends
  }
  // Every run of softmax's low end failed: nothing to judge it by.
  for (SearchJob& j : jobs) {
    j.state = JobState::kDone;
    j.result_json = testing::TestResult();
    if (j.cell[0].second == "softmax" && j.cell[1].second == "0.001") {
      j.state = JobState::kFailed;
      j.result_json.clear();
    }
  }
  const std::vector<CellSearch> plan = PlanSearch(spec, jobs);
  EXPECT_EQ(plan[0].state, CellSearch::State::kNoResults);
  EXPECT_TRUE(plan[0].add.empty());
  EXPECT_EQ(plan[1].state, CellSearch::State::kAboveRange);
}

TEST(BoundarySearch, WilsonIntervalsTellFourOfFourFromTwoOfFour) {
  auto [lo0, hi0] = WilsonInterval(0, 4);
  EXPECT_DOUBLE_EQ(lo0, 0);
  EXPECT_NEAR(hi0, 0.490, 1e-3);
  auto [lo4, hi4] = WilsonInterval(4, 4);
  EXPECT_NEAR(lo4, 0.510, 1e-3);
  EXPECT_DOUBLE_EQ(hi4, 1);
  auto [lo2, hi2] = WilsonInterval(2, 4);
  EXPECT_LT(lo2, 0.5);
  EXPECT_GT(hi2, 0.5);
  auto [lo6, hi6] = WilsonInterval(6, 8);
  EXPECT_NEAR(lo6, 0.409, 1e-3);
  EXPECT_NEAR(hi6, 0.929, 1e-3);
}

TEST(BoundarySearch, SpecErrorsNameTheSearchKeyAndWhatIsAllowed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"key: seed\n  range: [1, 2]", "sets 'seed' itself"},
      {"key: norm\n  range: [1, 2]", "is not a number"},
      {"key: learning_rate\n  range: [1, 2]", "unknown key 'learning_rate'"},
      {"key: lr\n  range: [1e-2, 1e-3]", "needs lo < hi"},
      {"key: lr\n  range: [0, 1e-3]", "log scale needs lo > 0"},
      {"key: lr\n  range: [1e-3, 1e-2]\n  outcome: flipped",
       "allowed: collapsed, diverged, or ratio_above X"},
      {"key: lr\n  range: [1e-3, 1e-2]\n  seeds: 0",
       "'seeds' '0': allowed: a whole number from 1 to 64"},
      {"key: lr\n  range: [1e-3, 1e-2]\n  sides: 2", "unknown search key"},
      {"key: steps\n  range: [1e-3, 1e-2]", "key 'steps'"},
  };
  for (const auto& [search, expected] : cases) {
    const std::string text = absl::StrCat(
        "name: s\ngrid:\n  kernel: [softmax]\nsearch:\n  ", search, "\n");
    const absl::Status s = ParseSweepSpec(text, "spec.yaml").status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << search;
    EXPECT_NE(s.message().find(expected), std::string::npos)
        << search << " -> " << s;
    EXPECT_NE(s.message().find("spec.yaml:"), std::string::npos) << s;
  }
  // seed or the key also in grid or fixed.
  for (const char* text :
       {"name: s\ngrid:\n  seed: [0, 1]\nsearch: {key: lr, range: [1, 2]}\n",
        "name: s\ngrid:\n  kernel: [log]\nfixed: {lr: 1e-3}\n"
        "search: {key: lr, range: [1e-3, 1e-2]}\n"}) {
    const absl::Status s = ParseSweepSpec(text, "spec.yaml").status();
    EXPECT_NE(s.message().find("is set by the search"), std::string::npos) << s;
  }
  // A tails sweep has no yes/no outcome.
  const absl::Status tails = ParseSweepSpec(
                                 "name: t\nkind: tails\ngrid:\n  seed: [0]\n"
                                 "search: {key: n, range: [10, 100]}\n",
                                 "spec.yaml")
                                 .status();
  EXPECT_NE(tails.message().find("for train and command sweeps"),
            std::string::npos)
      << tails;
  // It round-trips through the YAML that overrides write.
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec spec, ParseSweepSpec(kSpec, "spec"));
  TS_ASSERT_OK_AND_ASSIGN(SweepSpec again,
                          ParseSweepSpec(SweepSpecYaml(spec), "again"));
  ASSERT_TRUE(again.search.has_value());
  EXPECT_EQ(again.search->key, "lr");
  EXPECT_DOUBLE_EQ(again.search->lo, 1e-3);
  EXPECT_EQ(again.search->max_probes, 12);
}

}  // namespace
}  // namespace tailsweep
