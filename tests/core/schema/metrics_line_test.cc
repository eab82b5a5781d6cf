#include "core/schema/metrics_line.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/schema/job_result.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

StepMetrics Sample() {
  StepMetrics m;
  m.step = 20;
  m.loss = 0.125;
  m.lr = 3e-3;
  m.grad_norm = 1.5;
  m.spread_ratio = 0.75;
  m.step_seconds = 0.01;
  m.attention_entropy = {3.5, 0.1};
  m.attention_max_weight = {0.2, 1.0};
  return m;
}

TEST(MetricsLine, RoundTripsEveryField) {
  const StepMetrics m = Sample();
  TS_ASSERT_OK_AND_ASSIGN(StepMetrics back, ParseMetricsLine(MetricsLine(m)));
  EXPECT_EQ(StepPoints(back), StepPoints(m));
  EXPECT_EQ(back.attention_entropy, m.attention_entropy);
}

TEST(MetricsLine, NonFiniteValuesAreExplicit) {
  StepMetrics m = Sample();
  m.loss = kNaN;
  m.grad_norm = kInf;
  m.attention_entropy = {-kInf, 1};
  const std::string line = MetricsLine(m);
  EXPECT_NE(line.find("\"loss\":\"nan\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"grad_norm\":\"inf\""), std::string::npos) << line;
  TS_ASSERT_OK_AND_ASSIGN(StepMetrics back, ParseMetricsLine(line));
  EXPECT_TRUE(std::isnan(back.loss));
  EXPECT_EQ(back.grad_norm, kInf);
  EXPECT_EQ(back.attention_entropy[0], -kInf);
}

TEST(MetricsLine, TornOrForeignLinesAreRefused) {
  const std::string line = MetricsLine(Sample());
  for (const std::string& bad :
       {line.substr(0, line.size() / 2), std::string("{}"),
        std::string("{\"step\": 0, \"loss\": 1}"), std::string("[1,2]"),
        std::string("{\"step\": 3, \"loss\": null, \"lr\": 1, \"grad_norm\": 1,"
                    " \"spread_ratio\": 1, \"step_seconds\": 1}")}) {
    TS_EXPECT_CODE(ParseMetricsLine(bad), absl::StatusCode::kInvalidArgument);
  }
}

TEST(MetricsLine, PointsNameEveryLayer) {
  const std::vector<MetricPoint> points = StepPoints(Sample());
  const std::vector<MetricPoint> expected = {
      {"loss", 20, 0.125},
      {"lr", 20, 3e-3},
      {"grad_norm", 20, 1.5},
      {"spread_ratio", 20, 0.75},
      {"step_seconds", 20, 0.01},
      {"attention_entropy/0", 20, 3.5},
      {"attention_entropy/1", 20, 0.1},
      {"attention_max_weight/0", 20, 0.2},
      {"attention_max_weight/1", 20, 1.0}};
  EXPECT_EQ(points, expected);
}

TEST(MetricsLine, APeriodicEvaluationRidesOnItsLine) {
  StepMetrics m = Sample();
  EvalSummary e;
  e.ratio_mean = 2.5;
  e.ratio_median = 2;
  e.ratio_ci_low = 1.5;
  e.ratio_ci_high = kNaN;
  e.spread_ratio = 0.5;
  e.delta = 0.01;
  e.eval_instances = 16;
  m.eval = e;
  const std::string line = MetricsLine(m);
  EXPECT_NE(line.find("\"eval\":{"), std::string::npos) << line;
  TS_ASSERT_OK_AND_ASSIGN(StepMetrics back, ParseMetricsLine(line));
  ASSERT_TRUE(back.eval.has_value());
  EXPECT_EQ(back.eval->eval_instances, 16);
  EXPECT_FALSE(back.eval->hill_stat.has_value());
  EXPECT_EQ(StepPoints(back), StepPoints(m));
  const std::vector<MetricPoint> points = StepPoints(m);
  const std::vector<MetricPoint> tail(points.end() - 6, points.end());
  const std::vector<MetricPoint> expected = {
      {"eval/ratio_mean", 20, 2.5},   {"eval/ratio_median", 20, 2},
      {"eval/ratio_ci_low", 20, 1.5}, {"eval/ratio_ci_high", 20, kNaN},
      {"eval/spread_ratio", 20, 0.5}, {"eval/delta", 20, 0.01}};
  EXPECT_EQ(tail, expected);

  // A line without one has none; a malformed one is refused by name.
  TS_ASSERT_OK_AND_ASSIGN(StepMetrics plain,
                          ParseMetricsLine(MetricsLine(Sample())));
  EXPECT_FALSE(plain.eval.has_value());
  std::string bad = line;
  bad.replace(bad.find("\"eval_instances\""), 16, "\"eval_instanceZ\"");
  const absl::StatusOr<StepMetrics> refused = ParseMetricsLine(bad);
  TS_EXPECT_CODE(refused, absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("eval_instances"),
            std::string::npos)
      << refused.status();
}

TEST(JobResult, TrainRoundTripsAndGivesItsPoints) {
  TrainResult r;
  r.steps_done = 100;
  r.final_loss = kNaN;
  r.diverged = true;
  r.diverged_step = 100;
  r.collapsed = true;
  r.collapse_step = 60;
  r.config = {{"kernel", "softmax"}, {"lr", "0.001"}, {"symlog", "false"}};
  EvalSummary e;
  e.ratio_mean = 2;
  e.ratio_median = 1.5;
  e.ratio_ci_low = 0.9;
  e.ratio_ci_high = 2.5;
  e.spread_ratio = 0.01;
  e.delta = 0.2;
  e.eval_instances = 8;
  e.hill_stat = 1.4;
  r.evaluation = e;
  r.collapse_rule = "logged_3";
  r.collapse_onsets = CollapseOnsets{40, 60, 60, -1};
  TS_ASSERT_OK_AND_ASSIGN(TrainResult back,
                          ParseTrainResult(TrainResultJson(r)));
  EXPECT_TRUE(std::isnan(back.final_loss));
  EXPECT_EQ(back.collapse_rule, "logged_3");
  ASSERT_TRUE(back.collapse_onsets.has_value());
  EXPECT_EQ(back.collapse_onsets->any_step, 40);
  EXPECT_EQ(back.collapse_onsets->logged_run, 60);
  EXPECT_EQ(back.collapse_onsets->final_eval, -1);
  EXPECT_EQ(back.config, r.config);
  EXPECT_EQ(ResultPoints(back), ResultPoints(r));
  const std::vector<MetricPoint> expected = {
      {"eval/ratio_mean", 100, 2},      {"eval/ratio_median", 100, 1.5},
      {"eval/ratio_ci_low", 100, 0.9},  {"eval/ratio_ci_high", 100, 2.5},
      {"eval/spread_ratio", 100, 0.01}, {"eval/delta", 100, 0.2},
      {"eval/hill_stat", 100, 1.4},     {"collapse_onset", 60, 60},
      {"diverged_onset", 100, 100}};
  EXPECT_EQ(ResultPoints(r), expected);
}

TEST(JobResult, WrongShapesAreRefusedNamingTheField) {
  absl::StatusOr<TrainResult> r = ParseTrainResult("{\"steps_done\": \"x\"}");
  TS_EXPECT_CODE(r, absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("steps_done"), std::string::npos);
  TS_EXPECT_CODE(ParseTrainResult("[1]"), absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(ParseTailsResult("{}"), absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(ParseTailsResult("[{\"seam\": 0.9}]"),
                 absl::StatusCode::kInvalidArgument);
}

TEST(JobResult, TailsRoundTrips) {
  TailsRow row;
  row.seam = 0.9;
  row.n = 1024;
  row.index = 1.5;
  row.ed_mean = 0.01;
  row.ed_sd = 0.002;
  row.w2_mean = 3;
  row.w2_sd = 1;
  row.ed_noise = 0;
  row.w2_noise = kNaN;
  TS_ASSERT_OK_AND_ASSIGN(std::vector<TailsRow> back,
                          ParseTailsResult(TailsResultJson({row})));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].n, 1024);
  EXPECT_EQ(back[0].ed_sd, 0.002);
  EXPECT_TRUE(std::isnan(back[0].w2_noise));
}

}  // namespace
}  // namespace tailsweep
