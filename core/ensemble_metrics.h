#ifndef TAILSWEEP_CORE_ENSEMBLE_METRICS_H_
#define TAILSWEEP_CORE_ENSEMBLE_METRICS_H_

// Metrics of a predicted ensemble against its target (science.md 6).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace tailsweep {

// Per-axis interquartile range (numpy's linear quantiles) of points [n, d]
// or [B, n, d]; returns [d] or [B, d], in double.
at::Tensor Spread(const at::Tensor& points);

// Spread ratio: the median over axes of spread(prediction) / spread(target).
// Collapse is this ratio staying below 0.05. Shapes [n, d] give a scalar,
// [B, n, d] give [B]; double. REQUIRES: equal ranks and dims.
at::Tensor SpreadRatio(const at::Tensor& prediction, const at::Tensor& target);

// Hill tail-index estimate of each coordinate of points [n, d] from the top
// k = ceil(fraction * n) order statistics of |coordinate|. One per axis.
absl::StatusOr<std::vector<double>> HillPerAxis(const at::Tensor& points,
                                                double fraction);

// The Hill tail diagnostic (science.md 6, mirrored Pareto only). Per
// instance and axis: the model error |H(prediction) - H(target)| and the
// reference error |H(target) - H(target')| from a second, independent target
// ensemble. [choice] Both axes of every instance enter the pools.
struct HillErrors {
  std::vector<double> model;
  std::vector<double> reference;
};

// Appends one instance's errors (points [n, d] each). InvalidArgument when an
// estimate is undefined (see HillEstimate).
absl::Status AddHillErrors(const at::Tensor& prediction,
                           const at::Tensor& target,
                           const at::Tensor& second_target, double fraction,
                           HillErrors* errors);

// The statistic: the unbiased 1-D energy distance between the two pools; 0
// in expectation when the model's errors look like sampling noise, and it
// can be negative. REQUIRES: each pool holds at least 2 errors.
double HillErrorStatistic(const HillErrors& errors);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_ENSEMBLE_METRICS_H_
