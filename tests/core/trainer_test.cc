#include "core/trainer.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "core/checkpoint.h"
#include "core/evaluation.h"
#include "core/job_runner.h"
#include "core/point_csv.h"
#include "core/schema/checkpoint_name.h"
#include "core/schema/job_result.h"
#include "core/schema/status_macros.h"
#include "tests/testing/memory_sink.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tiny_job.h"

namespace tailsweep {
namespace {

using testing::MemorySink;
using testing::TinyJob;

double MeanLoss(const std::vector<StepMetrics>& m, size_t begin, size_t end) {
  double total = 0;
  for (size_t i = begin; i < end; ++i) total += m[i].loss;
  return total / (end - begin);
}

TEST(LearningRate, WarmsUpLinearlyThenDecaysByCosineToZero) {
  JobConfig c;
  c.lr = 1.0;
  c.warmup = 10;
  c.steps = 110;
  EXPECT_DOUBLE_EQ(LearningRate(c, 1), 0.1);
  EXPECT_DOUBLE_EQ(LearningRate(c, 10), 1.0);
  EXPECT_NEAR(LearningRate(c, 60), 0.5, 1e-12);
  EXPECT_NEAR(LearningRate(c, 110), 0.0, 1e-12);
  c.warmup = 0;
  EXPECT_NEAR(LearningRate(c, 1), 1.0, 1e-3);
}

TEST(CollapseTracker, OnsetIsTheFirstStepBelowThresholdRecoveryOrNot) {
  CollapseTracker t(0.05);
  t.Observe(1, 0.9);
  EXPECT_FALSE(t.collapsed());
  t.Observe(2, 0.01);
  t.Observe(3, 0.5);  // a partial recovery does not undo it
  t.Observe(4, 0.001);
  EXPECT_TRUE(t.collapsed());
  EXPECT_EQ(t.onset(), 2);
  CollapseTracker nan(0.05);
  nan.Observe(7, std::nan(""));  // a diverged output has no spread left
  EXPECT_EQ(nan.onset(), 7);
}

TEST(CollapseTracker, AFinalEvaluationWithLittleSpreadLeftIsACollapseAtTheEnd) {
  EXPECT_EQ(CollapseOnsetAfterEvaluation(320, 3000, 0.9), 320);
  EXPECT_EQ(CollapseOnsetAfterEvaluation(-1, 3000, 0.15), 3000);
  EXPECT_EQ(CollapseOnsetAfterEvaluation(-1, 3000, std::nan("")), 3000);
  EXPECT_EQ(CollapseOnsetAfterEvaluation(-1, 3000, 0.62), -1);
}

class TinyTraining
    : public ::testing::TestWithParam<
          std::tuple<OperatorKind, AttentionKernel, NormPlacement>> {};

TEST_P(TinyTraining, LowersTheLoss) {
  JobConfig c = TinyJob();
  std::tie(c.op, c.kernel, c.norm) = GetParam();
  // 64 points a cloud: half the cost of TinyJob()'s 128, and the loss still
  // falls to 0.34-0.51 of its start in every cell (0.8 is asserted).
  c.n_points = 64;
  MemorySink sink;
  TrainerEnv env;
  env.sink = &sink;
  TS_ASSERT_OK_AND_ASSIGN(auto trainer, Trainer::Create(c, torch::kCPU, env));
  TS_ASSERT_OK_AND_ASSIGN(TrainOutcome outcome, trainer->Run());
  ASSERT_EQ(sink.metrics.size(), 200u);  // steps / log_every
  EXPECT_FALSE(outcome.diverged);
  // Each step draws fresh heavy-tailed instances, so single losses are
  // noisy: compare the means of the first and the last 25 steps.
  const double first = MeanLoss(sink.metrics, 0, 25);
  const double last = MeanLoss(sink.metrics, 175, 200);
  EXPECT_LT(last, 0.8 * first) << first << " -> " << last;
  ASSERT_EQ(sink.metrics[0].attention_entropy.size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(
    EveryKernelAndNorm, TinyTraining,
    ::testing::Combine(
        ::testing::Values(OperatorKind::kShearedSwap,
                          OperatorKind::kMatrixInverse),
        ::testing::Values(AttentionKernel::kSoftmax,
                          AttentionKernel::kQuadratic, AttentionKernel::kLinear,
                          AttentionKernel::kLog),
        ::testing::Values(NormPlacement::kPost, NormPlacement::kPre)),
    [](const auto& info) {
      return std::string(OperatorName(std::get<0>(info.param))) + "_" +
             std::string(AttentionKernelName(std::get<1>(info.param))) + "_" +
             std::string(NormPlacementName(std::get<2>(info.param)));
    });

// Metrics that must match bit for bit (everything but the wall time).
void ExpectSameMetrics(const StepMetrics& a, const StepMetrics& b) {
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.loss, b.loss) << a.step;
  EXPECT_EQ(a.lr, b.lr) << a.step;
  EXPECT_EQ(a.grad_norm, b.grad_norm) << a.step;
  EXPECT_EQ(a.spread_ratio, b.spread_ratio) << a.step;
  EXPECT_EQ(a.attention_entropy, b.attention_entropy) << a.step;
  EXPECT_EQ(a.attention_max_weight, b.attention_max_weight) << a.step;
}

class TrainerFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("tailsweep_train_"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(TrainerFiles, ResumedRunMatchesTheUninterruptedOneBitForBit) {
  JobConfig c = TinyJob();
  c.steps = 30;
  c.warmup = 5;
  c.checkpoint_every = 10;
  c.kernel = AttentionKernel::kSoftmax;
  c.symlog = true;
  MemorySink whole;
  TrainerEnv env;
  env.sink = &whole;
  TS_ASSERT_OK_AND_ASSIGN(auto a, Trainer::Create(c, torch::kCPU, env));
  TS_ASSERT_OK(a->Run());

  // A crash at step 15: the last checkpoint is step 10.
  MemorySink first;
  env.sink = &first;
  env.checkpoint_dir = dir_;
  env.on_loss = [](int64_t step, torch::Tensor&) {
    if (step == 15) throw std::runtime_error("killed");
  };
  TS_ASSERT_OK_AND_ASSIGN(auto b, Trainer::Create(c, torch::kCPU, env));
  EXPECT_THROW(b->Run().IgnoreError(), std::runtime_error);
  TS_ASSERT_OK_AND_ASSIGN(CheckpointFile newest, NewestCheckpointIn(dir_));
  EXPECT_EQ(newest.path, CheckpointPath(dir_, 10));

  MemorySink resumed;
  env.sink = &resumed;
  env.on_loss = nullptr;
  TS_ASSERT_OK_AND_ASSIGN(auto r, Trainer::Create(c, torch::kCPU, env));
  TS_ASSERT_OK(r->ResumeFrom(newest.path));
  EXPECT_EQ(r->step(), 10);
  TS_ASSERT_OK(r->Run());
  ASSERT_EQ(resumed.metrics.size(), 20u);
  for (size_t i = 0; i < resumed.metrics.size(); ++i) {
    ExpectSameMetrics(resumed.metrics[i], whole.metrics[10 + i]);
  }
  // No temp file is left behind; the last step was checkpointed.
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().extension(), ".pt") << e.path();
  }
  EXPECT_TRUE(std::filesystem::exists(CheckpointPath(dir_, 30)));
  // A checkpoint of another config is refused.
  JobConfig other = c;
  other.lr = 1e-2;
  TS_ASSERT_OK_AND_ASSIGN(auto o, Trainer::Create(other, torch::kCPU, env));
  TS_EXPECT_CODE(o->ResumeFrom(newest.path),
                 absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(o->ResumeFrom(dir_ + "/missing.pt"),
                 absl::StatusCode::kNotFound);
}

TEST(Trainer, NonFiniteLossMarksTheRunDivergedAndEndsItCleanly) {
  JobConfig c = TinyJob();
  c.steps = 40;
  MemorySink sink;
  TrainerEnv env;
  env.sink = &sink;
  env.on_loss = [](int64_t step, torch::Tensor& loss) {
    if (step == 7) loss = loss * NAN;
  };
  JobRunOptions options;
  options.trainer = env;
  TS_ASSERT_OK_AND_ASSIGN(JobResult result, RunJob(c, options));
  EXPECT_TRUE(result.training.diverged);
  EXPECT_EQ(result.training.diverged_step, 7);
  EXPECT_EQ(result.training.steps_done, 7);
  EXPECT_EQ(result.training.early_stop, kEarlyStopDiverged);
  ASSERT_EQ(sink.metrics.size(), 7u);
  EXPECT_TRUE(std::isnan(sink.metrics.back().loss));
  // The weights were not touched by the bad step, so evaluation is finite.
  EXPECT_TRUE(std::isfinite(result.evaluation->ratio_median));
}

TEST(Trainer, CollapsedOutputIsReportedWithItsOnset) {
  JobConfig c = TinyJob();
  c.steps = 60;
  MemorySink sink;
  TrainerEnv env;
  env.sink = &sink;
  env.on_prediction = [](int64_t step, torch::Tensor& prediction) {
    if (step >= 25) prediction = prediction * 1e-4;
  };
  TS_ASSERT_OK_AND_ASSIGN(auto t, Trainer::Create(c, torch::kCPU, env));
  TS_ASSERT_OK_AND_ASSIGN(TrainOutcome outcome, t->Run());
  EXPECT_TRUE(outcome.collapsed);
  EXPECT_EQ(outcome.collapse_step, 25);
  EXPECT_FALSE(outcome.diverged);
  EXPECT_LT(sink.metrics.back().spread_ratio, 0.05);
}

// Early stopping (stop_after_collapse: K): the run ends K steps after its
// onset, checkpointed there, and says why; resumed from that checkpoint it
// ends at once, the same. Without the key it runs every step.
TEST_F(TrainerFiles, StopAfterCollapseEndsTheRunKStepsAfterItsOnset) {
  JobConfig c = TinyJob();
  c.steps = 60;
  c.checkpoint_every = 50;
  c.stop_after_collapse = 5;
  MemorySink sink;
  TrainerEnv env;
  env.sink = &sink;
  env.checkpoint_dir = dir_;
  env.on_prediction = [](int64_t step, torch::Tensor& prediction) {
    if (step >= 25) prediction = prediction * 1e-4;
  };
  TS_ASSERT_OK_AND_ASSIGN(auto t, Trainer::Create(c, torch::kCPU, env));
  TS_ASSERT_OK_AND_ASSIGN(TrainOutcome outcome, t->Run());
  EXPECT_TRUE(outcome.collapsed);
  EXPECT_EQ(outcome.collapse_step, 25);
  EXPECT_EQ(outcome.steps_done, 30);
  EXPECT_EQ(outcome.early_stop, kEarlyStopCollapse);
  EXPECT_FALSE(outcome.stopped);
  // Its curve up to then: every logged step (TinyJob logs every step).
  ASSERT_FALSE(sink.metrics.empty());
  EXPECT_EQ(sink.metrics.back().step, 30);
  ASSERT_TRUE(std::filesystem::exists(CheckpointPath(dir_, 30)));

  MemorySink resumed;
  env.sink = &resumed;
  TS_ASSERT_OK_AND_ASSIGN(auto r, Trainer::Create(c, torch::kCPU, env));
  TS_ASSERT_OK(r->ResumeFrom(CheckpointPath(dir_, 30)));
  TS_ASSERT_OK_AND_ASSIGN(TrainOutcome again, r->Run());
  EXPECT_EQ(again.steps_done, 30);
  EXPECT_EQ(again.early_stop, kEarlyStopCollapse);
  EXPECT_TRUE(resumed.metrics.empty());

  // K = 0 ends at the onset itself; "never" (the default) runs on.
  c.stop_after_collapse = 0;
  env.checkpoint_dir.clear();
  env.sink = &sink;
  TS_ASSERT_OK_AND_ASSIGN(auto z, Trainer::Create(c, torch::kCPU, env));
  TS_ASSERT_OK_AND_ASSIGN(TrainOutcome at_onset, z->Run());
  EXPECT_EQ(at_onset.steps_done, 25);
  c.stop_after_collapse = -1;
  TS_ASSERT_OK_AND_ASSIGN(auto n, Trainer::Create(c, torch::kCPU, env));
  TS_ASSERT_OK_AND_ASSIGN(TrainOutcome full, n->Run());
  EXPECT_EQ(full.steps_done, 60);
  EXPECT_TRUE(full.early_stop.empty());
}

TEST(Trainer, SinkFailureStopsTheRunWithItsStatus) {
  JobConfig c = TinyJob();
  MemorySink sink;
  sink.fail_after = 3;
  TrainerEnv env;
  env.sink = &sink;
  TS_ASSERT_OK_AND_ASSIGN(auto t, Trainer::Create(c, torch::kCPU, env));
  TS_EXPECT_CODE(t->Run(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(t->step(), 4);
  env.sink = nullptr;
  TS_EXPECT_CODE(Trainer::Create(c, torch::kCPU, env),
                 absl::StatusCode::kInvalidArgument);
  c.heads = 5;
  env.sink = &sink;
  TS_EXPECT_CODE(Trainer::Create(c, torch::kCPU, env),
                 absl::StatusCode::kInvalidArgument);
}

TEST_F(TrainerFiles, StopRequestCheckpointsAndReturns) {
  JobConfig c = TinyJob();
  c.steps = 50;
  MemorySink sink;
  TrainerEnv env;
  env.sink = &sink;
  env.checkpoint_dir = dir_;
  int64_t polls = 0;
  env.stop_requested = [&] { return ++polls == 12; };
  TS_ASSERT_OK_AND_ASSIGN(auto t, Trainer::Create(c, torch::kCPU, env));
  TS_ASSERT_OK_AND_ASSIGN(TrainOutcome outcome, t->Run());
  EXPECT_TRUE(outcome.stopped);
  EXPECT_EQ(outcome.steps_done, 12);
  EXPECT_TRUE(std::filesystem::exists(CheckpointPath(dir_, 12)));
}

TEST_F(TrainerFiles, EvaluationIsPairedDeterministicAndReportsHillForPareto) {
  JobConfig c = TinyJob();
  c.steps = 10;
  c.warmup = 5;
  c.eval_instances = 6;
  MemorySink sink;
  JobRunOptions options;
  options.trainer.sink = &sink;
  options.trainer.checkpoint_dir = dir_;
  TS_ASSERT_OK_AND_ASSIGN(JobResult a, RunJob(c, options));
  const EvalResult& e = *a.evaluation;
  ASSERT_EQ(e.ratios.size(), 6u);
  EXPECT_GT(e.delta, 0);
  EXPECT_LE(e.ratio_ci_low, e.ratio_median);
  EXPECT_LE(e.ratio_median, e.ratio_ci_high);
  EXPECT_TRUE(e.hill_stat.has_value());
  // The checkpoint evaluates to the same numbers.
  TS_ASSERT_OK_AND_ASSIGN(
      CheckpointEval again,
      EvaluateCheckpoint(CheckpointPath(dir_, 10), 0, torch::kCPU));
  EXPECT_EQ(again.evaluation.ratios, e.ratios);
  EXPECT_EQ(again.state.step, 10);
  TS_EXPECT_CODE(EvaluateCheckpoint(dir_ + "/none.pt", 0, torch::kCPU),
                 absl::StatusCode::kNotFound);
  // Gaussian: no Hill statistic.
  c.marginal = MarginalFamily::kGaussian;
  options.trainer.checkpoint_dir.clear();
  TS_ASSERT_OK_AND_ASSIGN(JobResult g, RunJob(c, options));
  EXPECT_FALSE(g.evaluation->hill_stat.has_value());
  // Resume without a checkpoint is refused.
  options.resume = true;
  options.trainer.checkpoint_dir = dir_ + "/empty";
  TS_EXPECT_CODE(RunJob(c, options), absl::StatusCode::kFailedPrecondition);
}

TEST_F(TrainerFiles, PeriodicEvaluationsLeaveTheRunUnchanged) {
  JobConfig c = TinyJob();
  c.steps = 10;
  c.warmup = 5;
  c.log_every = 2;
  c.checkpoint_every = 4;
  c.eval_instances = 4;
  auto run = [&](const JobConfig& config, const std::string& dir) {
    MemorySink sink;
    JobRunOptions options;
    options.trainer.sink = &sink;
    options.trainer.checkpoint_dir = dir;
    absl::StatusOr<JobResult> result = RunJob(config, options);
    EXPECT_TRUE(result.ok()) << result.status();
    return sink.metrics;
  };
  const std::vector<StepMetrics> plain = run(c, "");
  c.eval_every = 4;
  const std::vector<StepMetrics> evaluated = run(c, dir_);

  ASSERT_EQ(evaluated.size(), plain.size());
  std::vector<int64_t> eval_steps;
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(evaluated[i].loss, plain[i].loss) << "step " << plain[i].step;
    EXPECT_EQ(evaluated[i].grad_norm, plain[i].grad_norm);
    EXPECT_FALSE(plain[i].eval.has_value());
    if (evaluated[i].eval) eval_steps.push_back(evaluated[i].step);
  }
  // Steps 4 and 8; the final model (step 10) is the job runner's to evaluate.
  EXPECT_EQ(eval_steps, (std::vector<int64_t>{4, 8}));
  // It is the same evaluation as that of the checkpoint at that step.
  TS_ASSERT_OK_AND_ASSIGN(
      CheckpointEval at8,
      EvaluateCheckpoint(CheckpointPath(dir_, 8), 0, torch::kCPU));
  const EvalSummary& periodic = *evaluated[3].eval;
  ASSERT_EQ(evaluated[3].step, 8);
  EXPECT_EQ(periodic.ratio_median, at8.evaluation.ratio_median);
  EXPECT_EQ(periodic.spread_ratio, at8.evaluation.spread_ratio);
  EXPECT_EQ(periodic.eval_instances, 4);
}

}  // namespace
}  // namespace tailsweep

namespace tailsweep {
namespace {

// precision float64 and bfloat16: the model's parameters have that type,
// training starts from float32's initial weights (float32 init, converted),
// the loss falls, and a checkpoint evaluates and resumes bit for bit.
class Precisions : public ::testing::TestWithParam<Precision> {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("tailsweep_prec_"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_P(Precisions, TrainFromFloat32sWeightsEvaluateAndResume) {
  JobConfig c = TinyJob();
  c.steps = 60;
  c.checkpoint_every = 30;
  MemorySink base_sink;
  TrainerEnv env;
  env.sink = &base_sink;
  TS_ASSERT_OK_AND_ASSIGN(auto base, Trainer::Create(c, torch::kCPU, env));
  c.precision = GetParam();
  MemorySink sink;
  env.sink = &sink;
  env.checkpoint_dir = dir_;
  TS_ASSERT_OK_AND_ASSIGN(auto t, Trainer::Create(c, torch::kCPU, env));
  const torch::ScalarType type = ModelScalarType(GetParam());
  for (const torch::Tensor& p : t->model()->parameters()) {
    EXPECT_EQ(p.scalar_type(), type);
  }
  // The same initial weights, to the precision's rounding.
  const auto base_params = base->model()->parameters();
  const auto params = t->model()->parameters();
  ASSERT_EQ(base_params.size(), params.size());
  const double tolerance = GetParam() == Precision::kBFloat16 ? 1e-2 : 0;
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(torch::allclose(params[i].to(torch::kDouble),
                                base_params[i].to(torch::kDouble), tolerance,
                                1e-6));
  }
  TS_ASSERT_OK_AND_ASSIGN(TrainOutcome outcome, t->Run());
  EXPECT_FALSE(outcome.diverged);
  EXPECT_LT(MeanLoss(sink.metrics, 45, 60),
            0.8 * MeanLoss(sink.metrics, 0, 15));
  TS_ASSERT_OK_AND_ASSIGN(
      CheckpointEval eval,
      EvaluateCheckpoint(CheckpointPath(dir_, 60), 0, torch::kCPU));
  EXPECT_TRUE(std::isfinite(eval.evaluation.ratio_median));

  MemorySink resumed;
  env.sink = &resumed;
  TS_ASSERT_OK_AND_ASSIGN(auto r, Trainer::Create(c, torch::kCPU, env));
  TS_ASSERT_OK(r->ResumeFrom(CheckpointPath(dir_, 30)));
  TS_ASSERT_OK(r->Run());
  ASSERT_EQ(resumed.metrics.size(), 30u);
  for (size_t i = 0; i < resumed.metrics.size(); ++i) {
    ExpectSameMetrics(resumed.metrics[i], sink.metrics[30 + i]);
  }
}

INSTANTIATE_TEST_SUITE_P(OffTheDefault, Precisions,
                         ::testing::Values(Precision::kFloat64,
                                           Precision::kBFloat16),
                         [](const auto& info) {
                           return std::string(PrecisionName(info.param));
                         });

}  // namespace
}  // namespace tailsweep
