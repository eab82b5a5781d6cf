#include "core/symlog.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace tailsweep {
namespace {

TEST(Symlog, InverseRoundTripsAndKnownValues) {
  const at::Tensor x =
      at::tensor({-1e6, -3.5, -1e-12, 0.0, 2e-9, 1.0, 42.0, 1e8}, at::kDouble);
  EXPECT_TRUE(at::allclose(InverseSymlog(Symlog(x)), x, 1e-12, 0));
  const at::Tensor y = Symlog(x);
  EXPECT_DOUBLE_EQ(y[5].item<double>(), std::log(2.0));
  EXPECT_DOUBLE_EQ(y[1].item<double>(), -std::log(4.5));
  EXPECT_EQ(y[3].item<double>(), 0.0);
}

TEST(Symlog, DerivativesAreExactIncludingZero) {
  const at::Tensor x =
      at::tensor({-5.0, -0.5, 0.0, 0.5, 5.0}, at::kDouble).requires_grad_(true);
  Symlog(x).sum().backward();
  const at::Tensor expected = 1.0 / (1.0 + x.detach().abs());
  EXPECT_TRUE(at::allclose(x.grad(), expected));
  EXPECT_EQ(x.grad()[2].item<double>(), 1.0);

  const at::Tensor y =
      at::tensor({-2.0, 0.0, 3.0}, at::kDouble).requires_grad_(true);
  InverseSymlog(y).sum().backward();
  EXPECT_TRUE(at::allclose(y.grad(), y.detach().abs().exp()));
  EXPECT_EQ(y.grad()[1].item<double>(), 1.0);
}

}  // namespace
}  // namespace tailsweep
