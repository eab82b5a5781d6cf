#ifndef TAILSWEEP_CORE_ENERGY_DISTANCE_H_
#define TAILSWEEP_CORE_ENERGY_DISTANCE_H_

// The energy distance between point sets (science.md section 4), in any
// dimension: the squared V-statistic with p = 1,
//   ED(X, Y) = 2/(n m) sum_ij |x_i - y_j| - 1/n^2 sum_ii' |x_i - x_i'|
//                                          - 1/m^2 sum_jj' |y_j - y_j'|.
//
// Never materialises an n x m matrix. On the CPU the pair sums run in the
// vectorised kernels of pairwise_kernels.h over blocks of `tile` rows, in
// parallel, with O(n + m) extra memory and a result that does not depend on
// the thread count. On other devices (or when asked) blocks of `tile` rows
// of x meet all of y as torch ops: O(tile * (n + m) * d) memory.

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace tailsweep {

struct EnergyOptions {
  enum class Backend { kAuto, kCpuKernel, kTorchTiles };
  // Rows of x per block. Default: 256.
  int64_t tile = 256;
  // kAuto uses the CPU kernels for CPU tensors and torch tiles elsewhere.
  // Default: kAuto.
  Backend backend = Backend::kAuto;
};

// ED between x [n, d] and y [m, d], computed in double whatever their dtype.
// InvalidArgument when either is not a 2-D floating tensor with at least one
// row, when their dimensions differ, or when options.tile < 1.
absl::StatusOr<double> EnergyDistance(const at::Tensor& x, const at::Tensor& y,
                                      const EnergyOptions& options = {});

// Differentiable ED for training. x [n, d], y [m, d] gives a scalar; batched
// x [B, n, d], y [B, m, d] gives [B], one distance per trial. Returned in x's
// dtype (sums accumulate in double). Gradients flow to x and y:
//   dED/dx_i = 2/(n m) sum_j u(x_i - y_j) - 2/n^2 sum_i' u(x_i - x_i'),
// with u(v) = v/|v| and u(0) = 0, so coincident points give 0, never NaN.
// REQUIRES: shapes as above, same dtype and device (TORCH_CHECKed).
at::Tensor EnergyDistanceLoss(const at::Tensor& x, const at::Tensor& y,
                              const EnergyOptions& options = {});

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_ENERGY_DISTANCE_H_
