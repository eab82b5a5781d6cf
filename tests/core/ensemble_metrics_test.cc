#include "core/ensemble_metrics.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "core/reference.h"
#include "core/sampling.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

TEST(SpreadRatio, ScalesWithThePredictionAndDetectsCollapse) {
  TaskSampler sampler(
      {OperatorKind::kShearedSwap, MarginalFamily::kMirroredPareto}, 1);
  const EnsembleBatch batch =
      sampler.Next(3, 4000, at::TensorOptions().dtype(at::kDouble));
  const at::Tensor same = SpreadRatio(batch.target, batch.target);
  EXPECT_TRUE(at::allclose(same, at::ones({3}, at::kDouble)));
  EXPECT_TRUE(at::allclose(SpreadRatio(batch.target * 3.0 + 7.0, batch.target),
                           at::full({3}, 3.0, at::kDouble)));
  // A collapsed output: every point near one location.
  const at::Tensor collapsed = at::randn({4000, 2}, at::kDouble) * 1e-3;
  EXPECT_LT(SpreadRatio(collapsed, batch.target[0]).item<double>(), 0.05);
  // Median over axes: axis spreads 1 and 3 give 2.
  const at::Tensor t = at::stack(
      {at::arange(101, at::kDouble), at::arange(101, at::kDouble)}, 1);
  const at::Tensor p = t * at::tensor({1.0, 3.0}, at::kDouble);
  EXPECT_DOUBLE_EQ(SpreadRatio(p, t).item<double>(), 2.0);
  EXPECT_TRUE(at::allclose(Spread(t), at::full({2}, 50.0, at::kDouble)));
}

TEST(HillErrors, StatisticIsNearZeroForIidOutputsAndPositiveForLightTails) {
  TaskSampler sampler(
      {OperatorKind::kShearedSwap, MarginalFamily::kMirroredPareto}, 2);
  const at::TensorOptions dbl = at::TensorOptions().dtype(at::kDouble);
  HillErrors iid, light;
  for (int i = 0; i < 40; ++i) {
    const std::vector<Instance> one = sampler.DrawInstances(1);
    const at::Tensor target = sampler.Sample(one, Side::kTarget, 4096, dbl)[0];
    const at::Tensor second = sampler.Sample(one, Side::kTarget, 4096, dbl)[0];
    const at::Tensor third = sampler.Sample(one, Side::kTarget, 4096, dbl)[0];
    TS_ASSERT_OK(AddHillErrors(third, target, second, 0.1, &iid));
    // A Gaussian with the target's spread has no heavy tail at all.
    const at::Tensor gaussian =
        at::randn({4096, 2}, at::kDouble) * Spread(target);
    TS_ASSERT_OK(AddHillErrors(gaussian, target, second, 0.1, &light));
  }
  ASSERT_EQ(iid.model.size(), 80u);
  EXPECT_LT(std::fabs(HillErrorStatistic(iid)), 0.05);
  EXPECT_GT(HillErrorStatistic(light), 0.5);
}

TEST(SamplingReference, DeterministicPositiveAndShrinksWithN) {
  const Task task{OperatorKind::kMatrixInverse,
                  MarginalFamily::kMirroredPareto};
  ReferenceOptions small;
  small.n = 256;
  small.trials = 24;
  small.seed = 3;
  TS_ASSERT_OK_AND_ASSIGN(Reference a, SamplingReference(task, small));
  TS_ASSERT_OK_AND_ASSIGN(Reference b, SamplingReference(task, small));
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_EQ(a.distances.size(), 24u);
  EXPECT_GT(a.median, 0);
  ReferenceOptions large = small;
  large.n = 4096;
  TS_ASSERT_OK_AND_ASSIGN(Reference c, SamplingReference(task, large));
  // The V-statistic of two iid samples shrinks like 1/n.
  EXPECT_LT(c.median, a.median / 4);
  small.n = 1;
  TS_EXPECT_CODE(SamplingReference(task, small),
                 absl::StatusCode::kInvalidArgument);
  small.n = 10;
  small.trials = 0;
  TS_EXPECT_CODE(SamplingReference(task, small),
                 absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tailsweep
