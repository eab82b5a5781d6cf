#include "coordinator/aggregate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/schema/job_result.h"
#include "tests/testing/results.h"

namespace tailsweep {
namespace {

JobRow Done(const std::string& kernel, const std::string& seed,
            const std::string& result) {
  JobRow r;
  r.cell = {{"kernel", kernel}, {"seed", seed}};
  r.state = JobState::kDone;
  r.result_json = testing::TestResult(result);
  return r;
}

TEST(Summarize, OverSeedsTakesMediansOfTheSeedsAndCountsCollapses) {
  const std::vector<JobRow> jobs = {
      Done("softmax", "0",
           R"({"ratio_median": 3.0, "ratio_mean": 3.5, "ratio_ci_low": 2.0,
               "ratio_ci_high": 4.0, "collapsed": true, "collapse_step": 30})"),
      Done("log", "0",
           R"({"ratio_median": 0.9, "ratio_mean": 0.8, "ratio_ci_low": 0.7,
               "ratio_ci_high": 1.1})"),
      Done("softmax", "1",
           R"({"ratio_median": 5.0, "ratio_mean": 5.5, "ratio_ci_low": 4.0,
               "ratio_ci_high": 6.0, "collapsed": true, "collapse_step": 50})"),
      Done("log", "1",
           R"({"ratio_median": 1.3, "ratio_mean": 1.2, "ratio_ci_low": 0.9,
               "ratio_ci_high": 1.6})"),
      Done("softmax", "2",
           R"({"ratio_median": 4.0, "ratio_mean": 4.0, "ratio_ci_low": 3.0,
               "ratio_ci_high": 5.0, "diverged": true})"),
  };
  JobRow queued;
  queued.cell = {{"kernel", "log"}, {"seed", "2"}};
  std::vector<JobRow> all = jobs;
  all.push_back(queued);

  const std::vector<CellSummary> rows = Summarize(all, /*over_seeds=*/true);
  ASSERT_EQ(rows.size(), 2u);
  const CellSummary& softmax = rows[0];
  EXPECT_EQ(softmax.cell, (KeyValues{{"kernel", "softmax"}}));
  EXPECT_EQ(softmax.jobs, 3);
  EXPECT_EQ(softmax.done, 3);
  EXPECT_DOUBLE_EQ(softmax.ratio_median, 4.0);
  EXPECT_DOUBLE_EQ(softmax.ratio_mean, (3.5 + 5.5 + 4.0) / 3);
  EXPECT_DOUBLE_EQ(softmax.ratio_ci_low, 3.0);
  EXPECT_DOUBLE_EQ(softmax.seed_min, 3.0);
  EXPECT_DOUBLE_EQ(softmax.seed_max, 5.0);
  EXPECT_EQ(softmax.collapsed, 2);
  EXPECT_EQ(softmax.diverged, 1);
  EXPECT_DOUBLE_EQ(softmax.collapse_step, 40.0);
  EXPECT_FALSE(softmax.bold);
  EXPECT_TRUE(std::isnan(softmax.hill_stat));

  const CellSummary& log = rows[1];
  EXPECT_EQ(log.jobs, 3);
  EXPECT_EQ(log.done, 2);
  EXPECT_DOUBLE_EQ(log.ratio_median, (0.9 + 1.3) / 2);
  EXPECT_DOUBLE_EQ(log.ratio_ci_low, (0.7 + 0.9) / 2);
  EXPECT_TRUE(log.bold);
  EXPECT_TRUE(std::isnan(log.collapse_step));
}

// Early-stopped runs are counted per cell with the steps they did not run
// (their config's steps less steps_done).
TEST(Summarize, CountsRunsThatStoppedEarlyAndTheStepsTheySaved) {
  const std::vector<JobRow> jobs = {
      Done("softmax", "0",
           R"({"collapsed": true, "collapse_step": 30, "steps_done": 40,
               "early_stop": "collapse", "config": {"steps": 100}})"),
      Done("softmax", "1",
           R"({"diverged": true, "diverged_step": 7, "steps_done": 7,
               "early_stop": "diverged", "config": {"steps": 100}})"),
      Done("softmax", "2", R"({"steps_done": 100, "config": {"steps": 100}})"),
      Done("log", "0", R"({"steps_done": 100, "config": {"steps": 100}})"),
  };
  const std::vector<CellSummary> rows = Summarize(jobs, /*over_seeds=*/true);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].stopped_early, 2);
  EXPECT_EQ(rows[0].steps_saved, 60 + 93);
  EXPECT_EQ(rows[1].stopped_early, 0);
  EXPECT_EQ(rows[1].steps_saved, 0);
}

TEST(Summarize, PerSeedKeepsEveryJobAndEmptyCellsHaveNoValues) {
  JobRow failed;
  failed.cell = {{"kernel", "linear"}, {"seed", "0"}};
  failed.state = JobState::kFailed;
  const std::vector<CellSummary> rows = Summarize(
      {Done("log", "0", R"({"ratio_median": 0.9, "ratio_ci_low": 0.8})"),
       Done("log", "1", R"({"ratio_median": 1.1, "ratio_ci_low": 1.0})"),
       failed},
      /*over_seeds=*/false);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].cell, (KeyValues{{"kernel", "log"}, {"seed", "1"}}));
  EXPECT_DOUBLE_EQ(rows[1].ratio_median, 1.1);
  EXPECT_TRUE(rows[1].bold);  // the interval reaches 1
  EXPECT_EQ(rows[2].failed, 1);
  EXPECT_TRUE(std::isnan(rows[2].ratio_median));
}

TEST(Pivot, RowsWithoutTheKeyColumnsByItsValues) {
  std::vector<CellSummary> s(3);
  s[0].cell = {{"norm", "post"}, {"kernel", "softmax"}};
  s[1].cell = {{"norm", "post"}, {"kernel", "log"}};
  s[2].cell = {{"norm", "pre"}, {"kernel", "log"}};
  const PivotTable t = Pivot(s, "kernel");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"softmax", "log"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].label, "norm=post");
  EXPECT_EQ(t.rows[0].cells, (std::vector<int>{0, 1}));
  EXPECT_EQ(t.rows[1].label, "norm=pre");
  EXPECT_EQ(t.rows[1].cells, (std::vector<int>{-1, 2}));
  const PivotTable none = Pivot(s, "colour");
  EXPECT_EQ(none.columns, (std::vector<std::string>{"-"}));
  EXPECT_EQ(none.rows.size(), 3u);
}

JobRow TailsJob(const std::string& seed, double ed_noise) {
  JobRow r;
  r.cell = {{"seam", "0.9"}, {"n", "1024"}, {"seed", seed}};
  r.state = JobState::kDone;
  TailsRow a;
  a.seam = 0.9;
  a.n = 1024;
  a.index = 1.5;
  TailsRow b = a;
  b.index = 2.0;
  b.ed_noise = ed_noise;
  r.result_json = TailsResultJson({a, b});
  return r;
}

TEST(SummarizeTails, OneRowPerIndexWithMediansOverSeeds) {
  JobRow queued;
  queued.cell = {{"seam", "0.9"}, {"n", "1024"}, {"seed", "3"}};
  const std::vector<JobRow> jobs = {TailsJob("0", 1.0), TailsJob("1", 3.0),
                                    TailsJob("2", 10.0), queued};
  const std::vector<TailsSummary> over = SummarizeTails(jobs, true);
  ASSERT_EQ(over.size(), 2u);
  EXPECT_EQ(over[1].cell, (KeyValues{{"seam", "0.9"}, {"n", "1024"}}));
  EXPECT_EQ(over[1].row.index, 2.0);
  EXPECT_EQ(over[1].row.ed_noise, 3.0);
  EXPECT_EQ(over[1].seeds, 3);
  const std::vector<TailsSummary> per = SummarizeTails(jobs, false);
  ASSERT_EQ(per.size(), 6u);
  EXPECT_EQ(per[5].row.ed_noise, 10.0);
  EXPECT_EQ(per[5].seeds, 1);
}

}  // namespace
}  // namespace tailsweep
