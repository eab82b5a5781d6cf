#include "core/energy_distance.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <vector>

#include "core/energy_1d.h"
#include "core/marginal.h"
#include "core/sampling.h"
#include "tests/testing/brute_force.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

using Backend = EnergyOptions::Backend;

std::vector<double> ToVector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(),
                             c.data_ptr<double>() + c.numel());
}

// Heavy-tailed points [n, d]: the regime the project exists for.
at::Tensor HeavyPoints(int64_t n, int64_t d, uint64_t seed) {
  at::Generator gen = MakeCpuGenerator(seed);
  std::vector<at::Tensor> cols;
  for (int64_t k = 0; k < d; ++k) {
    cols.push_back(SampleMarginal(Marginal::MirroredPareto(1.3, 1.0), n, gen));
  }
  return at::stack(cols, 1);
}

double RelativeError(double a, double b) {
  return std::fabs(a - b) / std::max(std::fabs(b), 1e-300);
}

class EnergyAgreement : public ::testing::TestWithParam<int64_t> {};

TEST_P(EnergyAgreement, TiledMatchesBruteForceInEveryBackendAndTile) {
  const int64_t d = GetParam();
  const at::Tensor x = HeavyPoints(301, d, 1);
  const at::Tensor y = HeavyPoints(257, d, 2) + 0.25;
  const double brute = testing::BruteForceEnergy(ToVector(x), ToVector(y), d);
  for (Backend backend : {Backend::kCpuKernel, Backend::kTorchTiles}) {
    for (int64_t tile : {1, 7, 64, 256, 1000}) {
      TS_ASSERT_OK_AND_ASSIGN(double ed, EnergyDistance(x, y, {tile, backend}));
      EXPECT_LT(RelativeError(ed, brute), 1e-10)
          << "d=" << d << " tile=" << tile << " ed=" << ed
          << " brute=" << brute;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dimensions, EnergyAgreement,
                         ::testing::Values(1, 2, 3, 5));

TEST(EnergyDistance, OneDimensionalSortMatchesTiledAndBruteForce) {
  for (int64_t n : {1, 2, 17, 1000}) {
    const at::Tensor x = HeavyPoints(n, 1, 10 + n);
    const at::Tensor y = HeavyPoints(n + 5, 1, 20 + n) * 2.0;
    const double sorted = EnergyDistance1D(ToVector(x), ToVector(y));
    const double brute = testing::BruteForceEnergy(ToVector(x), ToVector(y), 1);
    TS_ASSERT_OK_AND_ASSIGN(double tiled, EnergyDistance(x, y));
    EXPECT_LT(RelativeError(sorted, brute), 1e-10) << n;
    EXPECT_LT(RelativeError(tiled, brute), 1e-10) << n;
  }
}

TEST(EnergyDistance, OneDimensionalHandlesTies) {
  const std::vector<double> x = {0, 0, 1, 1, 2};
  const std::vector<double> y = {0, 1, 1, 3};
  EXPECT_LT(
      RelativeError(EnergyDistance1D(x, y), testing::BruteForceEnergy(x, y, 1)),
      1e-14);
  EXPECT_EQ(EnergyDistance1D(x, x), 0.0);
}

TEST(EnergyDistance, ZeroOnIdenticalSetsSymmetricPositiveOtherwise) {
  const at::Tensor x = HeavyPoints(500, 2, 3);
  const at::Tensor y = HeavyPoints(400, 2, 4);
  TS_ASSERT_OK_AND_ASSIGN(double self, EnergyDistance(x, x));
  TS_ASSERT_OK_AND_ASSIGN(double xy, EnergyDistance(x, y));
  TS_ASSERT_OK_AND_ASSIGN(double yx, EnergyDistance(y, x));
  const double scale = testing::MeanDistance(ToVector(x), ToVector(x), 2);
  EXPECT_LE(std::fabs(self), 1e-13 * scale);
  EXPECT_LT(RelativeError(xy, yx), 1e-12);
  EXPECT_GT(xy, 0.0);
  // A permutation of the same multiset is the same set.
  TS_ASSERT_OK_AND_ASSIGN(double permuted, EnergyDistance(x, x.flip(0)));
  EXPECT_LE(std::fabs(permuted), 1e-13 * scale);
}

TEST(EnergyDistance, ResultDoesNotDependOnThreadCount) {
  const at::Tensor x = HeavyPoints(2000, 2, 5);
  const at::Tensor y = HeavyPoints(1500, 2, 6);
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  TS_ASSERT_OK_AND_ASSIGN(double one, EnergyDistance(x, y));
  at::set_num_threads(std::max(2, threads));
  TS_ASSERT_OK_AND_ASSIGN(double many, EnergyDistance(x, y));
  at::set_num_threads(threads);
  EXPECT_EQ(one, many);
}

TEST(EnergyDistance, RejectsBadShapes) {
  const at::Tensor x = at::zeros({4, 2}, at::kDouble);
  TS_EXPECT_CODE(EnergyDistance(x, at::zeros({4, 3}, at::kDouble)),
                 absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(EnergyDistance(x, at::zeros({0, 2}, at::kDouble)),
                 absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(EnergyDistance(at::zeros({4}, at::kDouble), x),
                 absl::StatusCode::kInvalidArgument);
  TS_EXPECT_CODE(EnergyDistance(x, x, {0, Backend::kAuto}),
                 absl::StatusCode::kInvalidArgument);
}

// Central finite differences of the V-statistic in double.
at::Tensor FiniteDifferenceGradient(const at::Tensor& x, const at::Tensor& y) {
  at::Tensor g = at::zeros_like(x);
  const double h = 1e-6;
  for (int64_t i = 0; i < x.size(0); ++i) {
    for (int64_t k = 0; k < x.size(1); ++k) {
      at::Tensor plus = x.clone(), minus = x.clone();
      plus[i][k] += h;
      minus[i][k] -= h;
      g[i][k] =
          (testing::BruteForceEnergy(ToVector(plus), ToVector(y), x.size(1)) -
           testing::BruteForceEnergy(ToVector(minus), ToVector(y), x.size(1))) /
          (2 * h);
    }
  }
  return g;
}

TEST(EnergyDistanceLoss, GradientMatchesFiniteDifferences) {
  for (Backend backend : {Backend::kCpuKernel, Backend::kTorchTiles}) {
    for (int64_t d : {1, 2, 3}) {
      const at::Tensor x0 = at::randn({9, d}, at::kDouble);
      const at::Tensor y0 = at::randn({7, d}, at::kDouble) + 0.5;
      const at::Tensor x = x0.clone().requires_grad_(true);
      const at::Tensor y = y0.clone().requires_grad_(true);
      at::Tensor loss = EnergyDistanceLoss(x, y, {3, backend});
      loss.backward();
      EXPECT_TRUE(
          at::allclose(x.grad(), FiniteDifferenceGradient(x0, y0), 1e-6, 1e-8));
      EXPECT_TRUE(
          at::allclose(y.grad(), FiniteDifferenceGradient(y0, x0), 1e-6, 1e-8));
      EXPECT_NEAR(loss.item<double>(),
                  testing::BruteForceEnergy(ToVector(x0), ToVector(y0), d),
                  1e-12);
    }
  }
}

// The naive loss a user would write: autograd through torch::cdist.
TEST(EnergyDistanceLoss, TiledGradientEqualsTheNaiveOne) {
  const at::Tensor x0 = at::randn({3, 60, 2}, at::kDouble) * 2;
  const at::Tensor y0 = at::randn({3, 45, 2}, at::kDouble);
  const at::Tensor upstream = at::rand({3}, at::kDouble);
  for (Backend backend : {Backend::kCpuKernel, Backend::kTorchTiles}) {
    const at::Tensor xt = x0.clone().requires_grad_(true);
    const at::Tensor xn = x0.clone().requires_grad_(true);
    (EnergyDistanceLoss(xt, y0, {16, backend}) * upstream).sum().backward();
    // compute_mode 2: exact differences, not the |x|^2 + |y|^2 - 2xy
    // expansion, whose rounding would dominate a 1e-9 comparison.
    auto cdist = [](const at::Tensor& a, const at::Tensor& b) {
      return at::cdist(a, b, 2.0, /*compute_mode=*/2);
    };
    const at::Tensor naive = 2 * cdist(xn, y0).mean({1, 2}) -
                             cdist(xn, xn).mean({1, 2}) -
                             cdist(y0, y0).mean({1, 2});
    (naive * upstream).sum().backward();
    EXPECT_TRUE(at::allclose(xt.grad(), xn.grad(), 1e-9, 1e-12))
        << (xt.grad() - xn.grad()).abs().max();
  }
}

TEST(EnergyDistanceLoss, GradientIsFiniteAndZeroWhereEveryPointCoincides) {
  for (Backend backend : {Backend::kCpuKernel, Backend::kTorchTiles}) {
    // Duplicated points inside x, and x equal to y.
    const at::Tensor base = at::randn({5, 2}, at::kDouble);
    const at::Tensor x = at::cat({base, base}).requires_grad_(true);
    const at::Tensor y = at::cat({base, base});
    at::Tensor loss = EnergyDistanceLoss(x, y, {4, backend});
    loss.backward();
    EXPECT_TRUE(at::isfinite(x.grad()).all().item<bool>());
    EXPECT_LT(x.grad().abs().max().item<double>(), 1e-12);
    // A collapsed ensemble (all points equal) also has a finite gradient.
    const at::Tensor collapsed =
        at::zeros({6, 2}, at::kDouble).requires_grad_(true);
    EnergyDistanceLoss(collapsed, base, {4, backend}).backward();
    EXPECT_TRUE(at::isfinite(collapsed.grad()).all().item<bool>());
  }
}

TEST(EnergyDistanceLoss, BatchedMatchesPerTrialAndFloatIsClose) {
  const at::Tensor x = at::randn({3, 50, 2}, at::kDouble);
  const at::Tensor y = at::randn({3, 40, 2}, at::kDouble) * 2;
  const at::Tensor batched = EnergyDistanceLoss(x, y);
  ASSERT_EQ(batched.sizes(), at::IntArrayRef({3}));
  for (int64_t b = 0; b < 3; ++b) {
    TS_ASSERT_OK_AND_ASSIGN(double one, EnergyDistance(x[b], y[b]));
    EXPECT_NEAR(batched[b].item<double>(), one, 1e-12);
    const at::Tensor single =
        EnergyDistanceLoss(x[b].to(at::kFloat), y[b].to(at::kFloat));
    EXPECT_EQ(single.scalar_type(), at::kFloat);
    EXPECT_NEAR(single.item<double>(), one, 1e-5 * (1 + one));
  }
}

}  // namespace
}  // namespace tailsweep
