#include "core/kernel_tile.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/kernel_attention.h"

namespace tailsweep {
namespace {

const AttentionKernel kSlowerKernels[] = {AttentionKernel::kQuadratic,
                                          AttentionKernel::kLinear,
                                          AttentionKernel::kLog};

// Scores across every regime: exp's underflow, the seam at 0 from both
// sides, ordinary values, and huge positive ones.
std::vector<float> EdgeScores() {
  std::vector<float> s = {-1e30f, -200.0f, -87.5f, -87.0f, -20.0f, -1.0f,
                          -1e-8f, 0.0f,    1e-8f,  0.5f,   1.0f,   3.0f,
                          50.0f,  1e4f,    1e6f,   1e18f};
  at::manual_seed(3);
  const at::Tensor r = at::randn({1000}) * 6;
  for (int64_t i = 0; i < r.numel(); ++i) s.push_back(r[i].item<float>());
  return s;
}

// |fused - exact| / exact, the exact value in double; values below the
// smallest normal float count as equal when both are that small.
double WorstRelativeError(const std::vector<float>& fused,
                          const at::Tensor& exact) {
  double worst = 0;
  for (size_t i = 0; i < fused.size(); ++i) {
    const double want = exact[i].item<double>();
    if (want < 1.2e-38 && fused[i] <= 1.2e-38f) continue;
    worst = std::max(worst, std::abs(fused[i] - want) / want);
  }
  return worst;
}

TEST(KernelTile, PhiAndDerivativeMatchTheDefinitionsToFloatAccuracy) {
  const std::vector<float> s = EdgeScores();
  const int64_t n = static_cast<int64_t>(s.size());
  const at::Tensor exact_s = at::tensor(s, at::kFloat).to(at::kDouble);
  for (AttentionKernel kernel : kSlowerKernels) {
    const std::string name(AttentionKernelName(kernel));
    std::vector<float> phi(s.size());
    std::vector<float> g = s;  // becomes phi'
    KernelTilePhiAndDerivative(kernel, g.data(), phi.data(), n);
    EXPECT_LT(WorstRelativeError(phi, KernelValue(kernel, exact_s)), 3e-7)
        << name;
    EXPECT_LT(WorstRelativeError(g, KernelDerivative(kernel, exact_s)), 3e-7)
        << name;
    // Exactly 1 at 0 and exp below: C1 at the seam, as the definitions.
    EXPECT_EQ(phi[7], 1.0f) << name;
    EXPECT_EQ(g[7], 1.0f) << name;
    for (float value : phi) EXPECT_GT(value, 0.0f) << name;
  }
}

TEST(KernelTile, RowSumsAddToWhatIsThereAndShiftIsPerRow) {
  // 3 rows of 19 (not a multiple of the 8 summing lanes).
  at::manual_seed(4);
  const at::Tensor scores = at::randn({3, 19}) * 3;
  for (AttentionKernel kernel : kSlowerKernels) {
    at::Tensor s = scores.clone();
    std::vector<float> sums = {1.0f, 2.0f, 3.0f};
    KernelTilePhiRowSums(kernel, s.data_ptr<float>(), 3, 19, sums.data());
    const at::Tensor phi = KernelValue(kernel, scores.to(at::kDouble));
    EXPECT_TRUE(at::allclose(s.to(at::kDouble), phi, 3e-7, 0));
    const at::Tensor want = phi.sum(1) + at::tensor({1.0, 2.0, 3.0});
    for (int r = 0; r < 3; ++r) {
      EXPECT_NEAR(sums[r], want[r].item<double>(),
                  1e-5 * want[r].item<double>());
    }
    // The backward tile: phi and phi' from one pass, then the shifted
    // product with phi'.
    at::Tensor prime = scores.clone();
    at::Tensor phi_again = at::empty_like(scores);
    KernelTilePhiAndDerivative(kernel, prime.data_ptr<float>(),
                               phi_again.data_ptr<float>(), prime.numel());
    EXPECT_TRUE(at::equal(phi_again, s)) << "one phi, forward and backward";
    at::Tensor g = at::ones({3, 19});
    const std::vector<float> shift = {0.5f, -1.0f, 2.0f};
    TileShiftedProduct(prime.data_ptr<float>(), shift.data(),
                       g.data_ptr<float>(), 3, 19);
    const at::Tensor dphi = KernelDerivative(kernel, scores.to(at::kDouble));
    const at::Tensor factor = at::tensor({0.5, 2.0, -1.0}).unsqueeze(1);
    EXPECT_TRUE(at::allclose(g.to(at::kDouble), dphi * factor, 3e-7, 1e-7));
  }
}

}  // namespace
}  // namespace tailsweep
