// Each kind's results table (JobKindDef::summarize) and the table's own
// rules: grouping over seeds, pivots, JSON both ways.

#include "core/schema/results_table.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/schema/command_job.h"
#include "core/schema/job_kinds.h"
#include "core/schema/job_result.h"
#include "tests/testing/results.h"

namespace tailsweep {
namespace {

ResultsTable Summarize(absl::string_view kind,
                       const std::vector<ResultJob>& jobs, bool over_seeds) {
  return (*KindDefNamed(kind))->summarize(jobs, over_seeds);
}

// The cell of `row` under column `name` (which must exist).
const ResultValue& At(const ResultsTable& t, size_t row,
                      absl::string_view name) {
  const std::optional<size_t> c = t.ColumnIndex(name);
  EXPECT_TRUE(c.has_value()) << name;
  return t.rows.at(row).at(c.value_or(0));
}
double Number(const ResultsTable& t, size_t row, absl::string_view name) {
  return NumberOf(At(t, row, name));
}

ResultJob Done(const std::string& kernel, const std::string& seed,
               const std::string& result) {
  return {"id-" + kernel + seed,
          {{"kernel", kernel}, {"seed", seed}},
          JobState::kDone,
          testing::TestResult(result)};
}

TEST(TrainResults, OverSeedsTakesMediansOfTheSeedsAndCountsCollapses) {
  std::vector<ResultJob> jobs = {
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
  jobs.push_back(
      {"q", {{"kernel", "log"}, {"seed", "2"}}, JobState::kQueued, ""});
  const ResultsTable t = Summarize("train", jobs, /*over_seeds=*/true);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.columns[0].name, "kernel");
  EXPECT_EQ(t.columns[0].role, ColumnRole::kKey);
  EXPECT_FALSE(t.ColumnIndex("seed").has_value());
  EXPECT_EQ(std::get<std::string>(At(t, 0, "kernel")), "softmax");
  EXPECT_EQ(std::get<int64_t>(At(t, 0, "jobs")), 3);
  EXPECT_EQ(std::get<int64_t>(At(t, 0, "done")), 3);
  EXPECT_DOUBLE_EQ(Number(t, 0, "ratio_median"), 4.0);
  EXPECT_DOUBLE_EQ(Number(t, 0, "ratio_mean"), (3.5 + 5.5 + 4.0) / 3);
  EXPECT_DOUBLE_EQ(Number(t, 0, "ratio_ci_low"), 3.0);
  EXPECT_DOUBLE_EQ(Number(t, 0, "seed_min"), 3.0);
  EXPECT_DOUBLE_EQ(Number(t, 0, "seed_max"), 5.0);
  EXPECT_EQ(std::get<int64_t>(At(t, 0, "collapsed")), 2);
  EXPECT_EQ(std::get<int64_t>(At(t, 0, "diverged")), 1);
  EXPECT_DOUBLE_EQ(Number(t, 0, "collapse_step"), 40.0);
  EXPECT_FALSE(std::get<bool>(At(t, 0, "bold")));
  EXPECT_TRUE(std::isnan(Number(t, 0, "hill_stat")));
  EXPECT_EQ(std::get<std::string>(At(t, 0, "ratio")),
            "4.000 [3.000, 5.000] *2/3 !1/3 n=3 (3.000-5.000)");

  EXPECT_EQ(std::get<int64_t>(At(t, 1, "jobs")), 3);
  EXPECT_EQ(std::get<int64_t>(At(t, 1, "done")), 2);
  EXPECT_DOUBLE_EQ(Number(t, 1, "ratio_median"), (0.9 + 1.3) / 2);
  EXPECT_DOUBLE_EQ(Number(t, 1, "ratio_ci_low"), (0.7 + 0.9) / 2);
  EXPECT_TRUE(std::get<bool>(At(t, 1, "bold")));
  EXPECT_TRUE(std::isnan(Number(t, 1, "collapse_step")));
}

// Early-stopped runs are counted per cell with the steps they did not run
// (their config's steps less steps_done).
TEST(TrainResults, CountsRunsThatStoppedEarlyAndTheStepsTheySaved) {
  const ResultsTable t = Summarize(
      "train",
      {Done("softmax", "0",
            R"({"collapsed": true, "collapse_step": 30, "steps_done": 40,
                "early_stop": "collapse", "config": {"steps": 100}})"),
       Done("softmax", "1",
            R"({"diverged": true, "diverged_step": 7, "steps_done": 7,
                "early_stop": "diverged", "config": {"steps": 100}})"),
       Done("softmax", "2", R"({"steps_done": 100, "config": {"steps": 100}})"),
       Done("log", "0", R"({"steps_done": 100, "config": {"steps": 100}})")},
      /*over_seeds=*/true);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(std::get<int64_t>(At(t, 0, "stopped_early")), 2);
  EXPECT_EQ(std::get<int64_t>(At(t, 0, "steps_saved")), 60 + 93);
  EXPECT_EQ(std::get<int64_t>(At(t, 1, "stopped_early")), 0);
}

TEST(TrainResults, PerSeedKeepsEveryJobAndEmptyCellsHaveNoValues) {
  const ResultsTable t = Summarize(
      "train",
      {Done("log", "0", R"({"ratio_median": 0.9, "ratio_ci_low": 0.8})"),
       Done("log", "1", R"({"ratio_median": 1.1, "ratio_ci_low": 1.0})"),
       {"f", {{"kernel", "linear"}, {"seed", "0"}}, JobState::kFailed, ""}},
      /*over_seeds=*/false);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(std::get<std::string>(At(t, 1, "seed")), "1");
  EXPECT_DOUBLE_EQ(Number(t, 1, "ratio_median"), 1.1);
  EXPECT_TRUE(std::get<bool>(At(t, 1, "bold")));  // the interval reaches 1
  EXPECT_EQ(std::get<int64_t>(At(t, 2, "failed")), 1);
  EXPECT_TRUE(std::isnan(Number(t, 2, "ratio_median")));
  EXPECT_EQ(std::get<std::string>(At(t, 2, "ratio")), "failed");
}

TEST(ResultsPivot, RowsWithoutTheKeyColumnsByItsValues) {
  ResultsTable t;
  t.AddColumn("norm", ColumnType::kText, ColumnRole::kKey);
  t.AddColumn("kernel", ColumnType::kText, ColumnRole::kKey);
  t.rows = {{std::string("post"), std::string("softmax")},
            {std::string("post"), std::string("log")},
            {std::string("pre"), std::string("log")}};
  const ResultsPivot p = PivotOf(t, "kernel");
  EXPECT_EQ(p.columns, (std::vector<std::string>{"softmax", "log"}));
  ASSERT_EQ(p.rows.size(), 2u);
  EXPECT_EQ(p.rows[0].label, "norm=post");
  EXPECT_EQ(p.rows[0].cells, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.rows[1].label, "norm=pre");
  EXPECT_EQ(p.rows[1].cells, (std::vector<int>{-1, 2}));
  const ResultsPivot none = PivotOf(t, "colour");
  EXPECT_EQ(none.columns, (std::vector<std::string>{"-"}));
  EXPECT_EQ(none.rows.size(), 3u);
}

ResultJob TailsJob(const std::string& seed, double ed_noise) {
  TailsRow a;
  a.seam = 0.9;
  a.n = 1024;
  a.index = 1.5;
  TailsRow b = a;
  b.index = 2.0;
  b.ed_noise = ed_noise;
  return {"t" + seed,
          {{"seam", "0.9"}, {"n", "1024"}, {"seed", seed}},
          JobState::kDone,
          TailsResultJson({a, b})};
}

TEST(TailsResults, OneRowPerIndexWithMediansOverSeeds) {
  const std::vector<ResultJob> jobs = {
      TailsJob("0", 1.0),
      TailsJob("1", 3.0),
      TailsJob("2", 10.0),
      {"q",
       {{"seam", "0.9"}, {"n", "1024"}, {"seed", "3"}},
       JobState::kQueued,
       ""}};
  const ResultsTable over = Summarize("tails", jobs, true);
  ASSERT_EQ(over.rows.size(), 2u);
  // The grid's seam and n give way to the row's own (typed) columns.
  EXPECT_EQ(over.columns[*over.ColumnIndex("seam")].type, ColumnType::kNumber);
  EXPECT_EQ(Number(over, 1, "index"), 2.0);
  EXPECT_EQ(Number(over, 1, "ed_noise"), 3.0);
  EXPECT_EQ(std::get<int64_t>(At(over, 1, "n")), 1024);
  EXPECT_EQ(std::get<int64_t>(At(over, 1, "seeds")), 3);
  const ResultsTable per = Summarize("tails", jobs, false);
  ASSERT_EQ(per.rows.size(), 6u);
  EXPECT_EQ(std::get<std::string>(At(per, 5, "seed")), "2");
  EXPECT_EQ(Number(per, 5, "ed_noise"), 10.0);
  EXPECT_EQ(std::get<int64_t>(At(per, 5, "seeds")), 1);
}

// A command job's stored result: the child's, and what the coordinator
// judged over its metrics.
ResultJob CommandJob(const std::string& lr, const std::string& seed,
                     double loss, bool diverged) {
  const std::string result = CommandResultWithSummary(
      CommandResultJson("null", 0, 0), {{"loss", 3, 2, loss, loss, loss, 0}},
      {{"diverged", diverged}});
  return {
      "c" + lr + seed, {{"lr", lr}, {"seed", seed}}, JobState::kDone, result};
}

TEST(CommandResults, MetricsAsMediansOverSeedsAndOutcomesAsFractions) {
  const std::vector<ResultJob> jobs = {
      CommandJob("0.1", "0", 1.0, false),
      CommandJob("0.1", "1", 3.0, true),
      CommandJob("0.1", "2", 2.0, true),
      CommandJob("1", "0", 9.0, true),
      {"q", {{"lr", "1"}, {"seed", "1"}}, JobState::kFailed, ""}};
  const ResultsTable t = Summarize("command", jobs, true);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.columns[*t.ColumnIndex("loss")].type, ColumnType::kNumber);
  EXPECT_EQ(Number(t, 0, "loss"), 2.0);
  EXPECT_EQ(std::get<Fraction>(At(t, 0, "diverged")), (Fraction{2, 3}));
  EXPECT_EQ(std::get<Fraction>(At(t, 1, "diverged")), (Fraction{1, 1}));
  EXPECT_EQ(std::get<int64_t>(At(t, 1, "failed")), 1);
  // Outcomes by name, for a search.
  const JobOutcomes o =
      (*KindDefNamed("command"))->outcomes(jobs[1].result_json);
  EXPECT_TRUE(o.holds.at("diverged"));
  EXPECT_EQ(o.facts.at("loss"), 3.0);
}

// A command's free-form grid key named like a count keeps its name; the
// count gives way.
TEST(CommandResults, AKeyNamedLikeACountColumnKeepsItsName) {
  const ResultsTable t = Summarize(
      "command",
      {{"a", {{"done", "yes"}, {"seed", "0"}}, JobState::kQueued, ""}}, true);
  ASSERT_EQ(t.columns[0].name, "done");
  EXPECT_EQ(t.columns[0].role, ColumnRole::kKey);
  EXPECT_EQ(std::get<std::string>(At(t, 0, "done")), "yes");
  EXPECT_EQ(std::get<int64_t>(At(t, 0, "n_done")), 0);
  EXPECT_EQ(std::get<int64_t>(At(t, 0, "jobs")), 1);
}

TEST(ResultsTableJson, ReadsBackWhatItWroteWithTheProtocolsNumberWords) {
  ResultsTable t;
  t.AddColumn("k", ColumnType::kText, ColumnRole::kKey);
  t.AddColumn("n", ColumnType::kInteger);
  t.AddColumn("x", ColumnType::kNumber);
  t.AddColumn("b", ColumnType::kBoolean);
  t.AddColumn("f", ColumnType::kFraction);
  t.AddColumn("d", ColumnType::kText, ColumnRole::kDisplay);
  t.headline = "d";
  t.note = "what";
  t.rows = {{std::string("a"), int64_t{3}, std::nan(""), true, Fraction{1, 4},
             std::string("shown")},
            {ResultValue(), int64_t{0}, std::numeric_limits<double>::infinity(),
             false, Fraction{0, 0}, ResultValue()}};
  const nlohmann::json doc = ResultsTableJson(t);
  EXPECT_EQ(doc["rows"][0][2], "nan");
  EXPECT_EQ(doc["rows"][1][2], "inf");
  EXPECT_EQ(doc["rows"][0][4], nlohmann::json({{"count", 1}, {"of", 4}}));
  EXPECT_TRUE(doc["rows"][1][0].is_null());
  absl::StatusOr<ResultsTable> back = ResultsTableFromJson(doc);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ResultsTableJson(*back), doc);
  // Records: no display column, a fraction as its number.
  const nlohmann::json records = ResultRecordsJson(t);
  EXPECT_FALSE(records[0].contains("d"));
  EXPECT_EQ(records[0]["f"], 0.25);
  EXPECT_EQ(records[1]["f"], "nan");
  // A cell of the wrong type is refused, naming the column's type.
  nlohmann::json bad = doc;
  bad["rows"][0][1] = "three";
  EXPECT_NE(ResultsTableFromJson(bad).status().message().find("integer"),
            std::string::npos);
}

}  // namespace
}  // namespace tailsweep
