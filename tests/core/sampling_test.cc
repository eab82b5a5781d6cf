#include "core/sampling.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/instance.h"
#include "core/marginal.h"

namespace tailsweep {
namespace {

// Kolmogorov-Smirnov critical value at level 0.001:
// sqrt(-ln(0.0005) / 2) / sqrt(n).
double KsCritical(int64_t n) {
  return std::sqrt(-std::log(0.0005) / 2.0) / std::sqrt(static_cast<double>(n));
}

double KsStatistic(const at::Tensor& samples, const Marginal& law) {
  const at::Tensor sorted = std::get<0>(samples.to(at::kDouble).sort());
  const double* x = sorted.data_ptr<double>();
  const int64_t n = sorted.numel();
  double d = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double f = law.Cdf(x[i]);
    d = std::max({d, f - static_cast<double>(i) / n,
                  static_cast<double>(i + 1) / n - f});
  }
  return d;
}

TEST(Marginal, ClosedFormsAreConsistent) {
  for (const Marginal& m :
       {Marginal::MirroredPareto(1.1, 0.5), Marginal::MirroredPareto(2.0, 2.0),
        Marginal::Gaussian(-0.3, 1.7)}) {
    for (double u : {1e-9, 0.01, 0.3, 0.5, 0.77, 0.999, 1 - 1e-9}) {
      EXPECT_NEAR(m.Cdf(m.Quantile(u)), u, 1e-13) << u;
    }
    // The density is the derivative of the CDF (central differences).
    for (double z : {-3.0, -0.4, 0.2, 5.0}) {
      const double h = 1e-6;
      EXPECT_NEAR((m.Cdf(z + h) - m.Cdf(z - h)) / (2 * h), m.Density(z), 1e-7);
    }
  }
  const Marginal p = Marginal::MirroredPareto(1.5, 1.0);
  EXPECT_DOUBLE_EQ(p.Cdf(0), 0.5);
  EXPECT_DOUBLE_EQ(p.Density(0), 0.75);  // a / (2 lam), continuous at 0
  EXPECT_DOUBLE_EQ(p.Cdf(-1.0), 0.5 * std::pow(2.0, -1.5));
}

TEST(Marginal, ValidateNamesTheParameter) {
  EXPECT_EQ(Marginal::MirroredPareto(0, 1).Validate().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_NE(Marginal::MirroredPareto(-1, 1).Validate().message().find("index"),
            std::string::npos);
  EXPECT_NE(Marginal::MirroredPareto(1, 0).Validate().message().find("scale"),
            std::string::npos);
  EXPECT_NE(Marginal::Gaussian(0, -1).Validate().message().find("std"),
            std::string::npos);
  EXPECT_TRUE(Marginal::Gaussian(0, 1).Validate().ok());
  EXPECT_EQ(ParseMarginalFamily("pareto").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseOperator("swap").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SampleMarginal, MatchesClosedFormCdf) {
  const int64_t n = 100000;
  uint64_t seed = 11;
  for (const Marginal& m :
       {Marginal::MirroredPareto(1.1, 0.5), Marginal::MirroredPareto(1.5, 1.0),
        Marginal::MirroredPareto(2.0, 2.0), Marginal::Gaussian(0.7, 1.3)}) {
    at::Generator gen = MakeCpuGenerator(seed++);
    const at::Tensor s = SampleMarginal(m, n, gen);
    ASSERT_EQ(s.numel(), n);
    EXPECT_TRUE(at::isfinite(s).all().item<bool>());
    EXPECT_LT(KsStatistic(s, m), KsCritical(n))
        << MarginalFamilyName(m.family) << " " << m.index << " " << m.scale;
  }
}

TEST(SampleMarginal, ReproducibleFromSeed) {
  const Marginal m = Marginal::MirroredPareto(1.3, 1.0);
  at::Generator a = MakeCpuGenerator(5), b = MakeCpuGenerator(5),
                c = MakeCpuGenerator(6);
  const at::Tensor x = SampleMarginal(m, 1000, a);
  EXPECT_TRUE(at::equal(x, SampleMarginal(m, 1000, b)));
  EXPECT_FALSE(at::equal(x, SampleMarginal(m, 1000, c)));
}

TEST(DrawInstance, FollowsThePriors) {
  at::Generator gen = MakeCpuGenerator(1);
  for (int i = 0; i < 200; ++i) {
    const Instance p = DrawInstance(
        {OperatorKind::kShearedSwap, MarginalFamily::kMirroredPareto}, gen);
    EXPECT_GE(p.axes[0].index, 1.1);
    EXPECT_LE(p.axes[0].index, 2.0);
    EXPECT_GE(p.axes[0].scale, 0.5);
    EXPECT_LE(p.axes[0].scale, 1.0);
    EXPECT_GE(p.axes[1].scale, 1.0);
    EXPECT_LE(p.axes[1].scale, 2.0);
    EXPECT_LE(std::fabs(p.op_params[0]), 1.0);
    // A_out = A_in E: the columns swap.
    EXPECT_DOUBLE_EQ(p.a_out[0], p.a_in[1]);
    EXPECT_DOUBLE_EQ(p.a_out[1], p.a_in[0]);
    const Instance g = DrawInstance(
        {OperatorKind::kMatrixInverse, MarginalFamily::kGaussian}, gen);
    EXPECT_LE(std::fabs(g.axes[0].mean), 1.0);
    EXPECT_GE(g.axes[1].std, 1.0);
    EXPECT_GE(g.a_in[0], 1.0);
    EXPECT_LE(std::fabs(g.a_in[1]), 0.5);
    const Mat2 identity = Multiply(g.a_in, g.a_out);
    EXPECT_NEAR(identity[0], 1, 1e-12);
    EXPECT_NEAR(identity[1], 0, 1e-12);
    EXPECT_NEAR(identity[3], 1, 1e-12);
  }
  EXPECT_FALSE(IsIdentifiable(
      {OperatorKind::kMatrixInverse, MarginalFamily::kGaussian}));
  EXPECT_TRUE(IsIdentifiable(
      {OperatorKind::kMatrixInverse, MarginalFamily::kMirroredPareto}));
}

// A task's tail-index prior moves both axes' index and nothing else: the
// same uniforms are consumed, so the instances' other parameters agree.
TEST(DrawInstance, TakesTheTailIndexFromTheTasksPrior) {
  at::Generator standard = MakeCpuGenerator(5), heavy = MakeCpuGenerator(5);
  Task heavier{OperatorKind::kShearedSwap, MarginalFamily::kMirroredPareto};
  heavier.prior.tail_index = {1.05, 1.25};
  double lowest = 10, highest = 0;
  for (int i = 0; i < 200; ++i) {
    const Instance a = DrawInstance(
        {OperatorKind::kShearedSwap, MarginalFamily::kMirroredPareto},
        standard);
    const Instance b = DrawInstance(heavier, heavy);
    for (int axis = 0; axis < 2; ++axis) {
      lowest = std::min(lowest, b.axes[axis].index);
      highest = std::max(highest, b.axes[axis].index);
      // The same uniform, mapped onto the other interval.
      EXPECT_NEAR((b.axes[axis].index - 1.05) / 0.2,
                  (a.axes[axis].index - 1.1) / 0.9, 1e-12);
      EXPECT_EQ(a.axes[axis].scale, b.axes[axis].scale);
    }
    EXPECT_EQ(a.a_in, b.a_in);
  }
  EXPECT_GE(lowest, 1.05);
  EXPECT_LE(highest, 1.25);
  EXPECT_LT(lowest, 1.07);
  EXPECT_GT(highest, 1.23);
}

// Every other range of the prior moves its own parameter, from the same
// uniforms, and nothing else.
TEST(DrawInstance, TakesScalesMeansAndDeviationsFromTheTasksPrior) {
  for (MarginalFamily family :
       {MarginalFamily::kMirroredPareto, MarginalFamily::kGaussian}) {
    Task standard{OperatorKind::kShearedSwap, family}, moved = standard;
    moved.prior.scale1 = moved.prior.sd1 = {10, 11};
    moved.prior.scale2 = moved.prior.sd2 = {20, 24};
    moved.prior.mean = {5, 7};
    at::Generator a_gen = MakeCpuGenerator(9), b_gen = MakeCpuGenerator(9);
    for (int i = 0; i < 50; ++i) {
      const Instance a = DrawInstance(standard, a_gen);
      const Instance b = DrawInstance(moved, b_gen);
      // Axis 1's default range is [0.5, 1], axis 2's [1, 2], the mean's
      // [-1, 1]; the tail index is unchanged.
      const bool gaussian = family == MarginalFamily::kGaussian;
      auto spread = [&](const Marginal& m) {
        return gaussian ? m.std : m.scale;
      };
      EXPECT_NEAR(spread(b.axes[0]), 10 + (spread(a.axes[0]) - 0.5) * 2, 1e-12);
      EXPECT_NEAR(spread(b.axes[1]), 20 + (spread(a.axes[1]) - 1) * 4, 1e-12);
      for (int axis = 0; axis < 2; ++axis) {
        if (gaussian) {
          EXPECT_NEAR(b.axes[axis].mean, 6 + a.axes[axis].mean, 1e-12);
        } else {
          EXPECT_EQ(b.axes[axis].index, a.axes[axis].index);
        }
      }
      EXPECT_EQ(a.op_params, b.op_params);
    }
  }
}

// Undoing an instance's matrix recovers independent latents with the
// instance's marginals, for input and target alike.
TEST(TaskSampler, EnsemblesHaveTheInstanceLawAfterUndoingTheMatrix) {
  const int64_t n = 100000;
  for (OperatorKind op :
       {OperatorKind::kShearedSwap, OperatorKind::kMatrixInverse}) {
    for (MarginalFamily family :
         {MarginalFamily::kMirroredPareto, MarginalFamily::kGaussian}) {
      TaskSampler sampler({op, family}, 7);
      const EnsembleBatch batch =
          sampler.Next(2, n, at::TensorOptions().dtype(at::kDouble));
      ASSERT_EQ(batch.input.sizes(), at::IntArrayRef({2, n, 2}));
      for (int64_t b = 0; b < 2; ++b) {
        const Instance& inst = batch.instances[b];
        for (Side side : {Side::kInput, Side::kTarget}) {
          const Mat2 inv =
              Inverse(side == Side::kInput ? inst.a_in : inst.a_out);
          const at::Tensor points =
              side == Side::kInput ? batch.input[b] : batch.target[b];
          const at::Tensor inv_t =
              at::tensor({inv[0], inv[1], inv[2], inv[3]}, at::kDouble)
                  .view({2, 2});
          const at::Tensor latent = at::matmul(points, inv_t.t());
          for (int axis = 0; axis < 2; ++axis) {
            EXPECT_LT(KsStatistic(latent.select(1, axis), inst.axes[axis]),
                      KsCritical(n))
                << OperatorName(op) << " " << MarginalFamilyName(family)
                << " side " << static_cast<int>(side) << " axis " << axis;
          }
          // Independent axes: rank correlation near zero.
          const at::Tensor r0 =
              latent.select(1, 0).argsort().argsort().to(at::kDouble);
          const at::Tensor r1 =
              latent.select(1, 1).argsort().argsort().to(at::kDouble);
          const double rho =
              at::corrcoef(at::stack({r0, r1})).index({0, 1}).item<double>();
          EXPECT_LT(std::fabs(rho), 0.02);
        }
      }
      // Input and target latents are independent draws, not one sample.
      EXPECT_FALSE(at::allclose(batch.input, batch.target));
    }
  }
}

TEST(TaskSampler, ReproducibleAndConvertsDtype) {
  const Task task{OperatorKind::kShearedSwap, MarginalFamily::kMirroredPareto};
  TaskSampler a(task, 3), b(task, 3);
  const EnsembleBatch x = a.Next(4, 64, at::TensorOptions().dtype(at::kFloat));
  const EnsembleBatch y = b.Next(4, 64, at::TensorOptions().dtype(at::kFloat));
  EXPECT_EQ(x.input.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(x.input, y.input));
  EXPECT_TRUE(at::equal(x.target, y.target));
  // The next draw differs from the first.
  EXPECT_FALSE(at::equal(a.Next(4, 64, at::kFloat).input, x.input));
}

}  // namespace
}  // namespace tailsweep
