#include "core/kernel_attention.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

namespace tailsweep {
namespace {

const AttentionKernel kAllKernels[] = {
    AttentionKernel::kSoftmax, AttentionKernel::kQuadratic,
    AttentionKernel::kLinear, AttentionKernel::kLog};

// Max |a - b| relative to max |b|.
double RelativeDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() /
         std::max(b.abs().max().item<double>(), 1e-300);
}

TEST(AttentionKernel, ValuesAndDerivativesAreC1AtZeroAndMatchDefinitions) {
  const at::Tensor s =
      at::tensor({-30.0, -2.0, -1e-9, 0.0, 1e-9, 0.5, 3.0, 40.0}, at::kDouble);
  for (AttentionKernel kernel : kAllKernels) {
    const at::Tensor phi = KernelValue(kernel, s);
    const at::Tensor dphi = KernelDerivative(kernel, s);
    const std::string name(AttentionKernelName(kernel));
    EXPECT_DOUBLE_EQ(phi[3].item<double>(), 1.0) << name;
    EXPECT_DOUBLE_EQ(dphi[3].item<double>(), 1.0) << name;
    // Both sides of 0 agree to first order: continuous value and slope.
    EXPECT_NEAR(phi[2].item<double>(), phi[4].item<double>(), 3e-9) << name;
    EXPECT_NEAR(dphi[2].item<double>(), dphi[4].item<double>(), 3e-9) << name;
    // exp(s) below zero for every kernel; strictly positive everywhere.
    EXPECT_DOUBLE_EQ(phi[1].item<double>(), std::exp(-2.0)) << name;
    EXPECT_TRUE((phi > 0).all().item<bool>()) << name;
    // The derivative is the derivative (central differences).
    const double h = 1e-6;
    const at::Tensor fd =
        (KernelValue(kernel, s + h) - KernelValue(kernel, s - h)) / (2 * h);
    EXPECT_TRUE(at::allclose(dphi.slice(0, 0, 2), fd.slice(0, 0, 2), 1e-6))
        << name;
    EXPECT_TRUE(at::allclose(dphi.slice(0, 5), fd.slice(0, 5), 1e-6)) << name;
  }
  const at::Tensor x = at::tensor({3.0}, at::kDouble);
  EXPECT_DOUBLE_EQ(KernelValue(AttentionKernel::kQuadratic, x).item<double>(),
                   8.5);
  EXPECT_DOUBLE_EQ(KernelValue(AttentionKernel::kLinear, x).item<double>(),
                   4.0);
  EXPECT_DOUBLE_EQ(KernelValue(AttentionKernel::kLog, x).item<double>(),
                   1 + std::log(4.0));
  EXPECT_FALSE(ParseAttentionKernel("relu").ok());
  EXPECT_EQ(*ParseAttentionKernel("log"), AttentionKernel::kLog);
}

struct Case {
  int64_t n, m, query_tile, key_tile;
  double score_scale;
};

class TiledAttention
    : public ::testing::TestWithParam<std::tuple<AttentionKernel, Case>> {};

// Relative differences between the tiled attention, run in `type`, and the
// naive one in double: the output, then the gradients of q, k and v.
std::vector<double> TiledAgainstNaive(AttentionKernel kernel, const Case& c,
                                      at::ScalarType type) {
  at::manual_seed(7);
  const at::TensorOptions dbl = at::TensorOptions().dtype(at::kDouble);
  const at::Tensor q0 = at::randn({2, 3, c.n, 4}, dbl) * c.score_scale;
  const at::Tensor k0 = at::randn({2, 3, c.m, 4}, dbl) * c.score_scale;
  const at::Tensor v0 = at::randn({2, 3, c.m, 4}, dbl);
  const at::Tensor upstream = at::randn({2, 3, c.n, 4}, dbl);
  std::vector<at::Tensor> tiled_in, naive_in;
  for (const at::Tensor& t : {q0, k0, v0}) {
    tiled_in.push_back(
        t.to(type, /*non_blocking=*/false, /*copy=*/true).requires_grad_(true));
    naive_in.push_back(t.clone().requires_grad_(true));
  }
  const at::Tensor tiled =
      KernelAttention(tiled_in[0], tiled_in[1], tiled_in[2], kernel,
                      {c.query_tile, c.key_tile});
  const at::Tensor naive =
      NaiveKernelAttention(naive_in[0], naive_in[1], naive_in[2], kernel);
  std::vector<double> diffs = {RelativeDiff(tiled.to(at::kDouble), naive)};
  (tiled * upstream.to(type)).sum().backward();
  (naive * upstream).sum().backward();
  for (int i = 0; i < 3; ++i) {
    diffs.push_back(
        RelativeDiff(tiled_in[i].grad().to(at::kDouble), naive_in[i].grad()));
  }
  return diffs;
}

TEST_P(TiledAttention, EqualsNaiveForwardAndEveryInputGradient) {
  const auto [kernel, c] = GetParam();
  const std::vector<double> diffs = TiledAgainstNaive(kernel, c, at::kDouble);
  for (size_t i = 0; i < diffs.size(); ++i) {
    EXPECT_LT(diffs[i], 1e-9)
        << (i == 0 ? "output" : "a gradient") << " #" << i;
  }
}

// In float32 on the CPU the slower-growing kernels take kernel_tile.h's fused
// passes: the same attention and gradients, to float32 accuracy, as the
// naive double one.
TEST_P(TiledAttention, Float32EqualsNaiveDoubleForwardAndEveryInputGradient) {
  const auto [kernel, c] = GetParam();
  const std::vector<double> diffs = TiledAgainstNaive(kernel, c, at::kFloat);
  EXPECT_LT(diffs[0], 2e-5) << "output";
  for (size_t i = 1; i < diffs.size(); ++i) {
    EXPECT_LT(diffs[i], 2e-4) << "gradient of "
                              << "qkv"[i - 1];
  }
}

INSTANTIATE_TEST_SUITE_P(
    KernelsAndTiles, TiledAttention,
    ::testing::Combine(
        ::testing::ValuesIn(kAllKernels),
        ::testing::Values(Case{37, 37, 5, 7, 1.5},    // ragged tiles
                          Case{37, 29, 64, 64, 1.5},  // one tile
                          Case{20, 33, 1, 3, 4.0},    // large scores
                          Case{16, 16, 4, 8, 0.3},
                          // tiles of 300 KB and more: one head at a time
                          Case{300, 300, 256, 1024, 1.0})),
    [](const auto& info) {
      const Case& c = std::get<1>(info.param);
      return std::string(AttentionKernelName(std::get<0>(info.param))) + "_n" +
             std::to_string(c.n) + "_m" + std::to_string(c.m) + "_tiles" +
             std::to_string(c.query_tile) + "x" + std::to_string(c.key_tile);
    });

TEST(TiledAttention, SoftmaxStaysFiniteWithHugeScores) {
  at::manual_seed(1);
  const at::Tensor q = at::randn({1, 1, 40, 8}, at::kFloat) * 60;
  const at::Tensor k = at::randn({1, 1, 40, 8}, at::kFloat) * 60;
  const at::Tensor v = at::randn({1, 1, 40, 8}, at::kFloat);
  const at::Tensor out =
      KernelAttention(q, k, v, AttentionKernel::kSoftmax, {16, 16});
  EXPECT_TRUE(at::isfinite(out).all().item<bool>());
  EXPECT_LT(RelativeDiff(
                out, NaiveKernelAttention(q, k, v, AttentionKernel::kSoftmax)),
            1e-4);
}

}  // namespace
}  // namespace tailsweep

namespace tailsweep {
namespace {

// Heads run in parallel on the CPU; each head's sums stay on one thread, so
// the result is bit-identical for any thread count, and no autograd graph
// is recorded inside the worker threads.
TEST(TiledAttention, BitIdenticalAcrossThreadCounts) {
  at::manual_seed(2);
  const at::Tensor q = at::randn({2, 4, 50, 8}).requires_grad_(true);
  const at::Tensor k = at::randn({2, 4, 50, 8}).requires_grad_(true);
  const at::Tensor v = at::randn({2, 4, 50, 8}).requires_grad_(true);
  auto run = [&](int threads) {
    at::set_num_threads(threads);
    q.mutable_grad() = at::Tensor();
    const at::Tensor out =
        KernelAttention(q, k, v, AttentionKernel::kLinear, {16, 16});
    out.square().sum().backward();
    return std::make_pair(out.detach(), q.grad().clone());
  };
  const int threads = at::get_num_threads();
  const auto one = run(1);
  const auto two = run(2);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one.first, two.first));
  EXPECT_TRUE(at::equal(one.second, two.second));
}

}  // namespace
}  // namespace tailsweep
