#ifndef TAILSWEEP_CORE_STATISTICS_H_
#define TAILSWEEP_CORE_STATISTICS_H_

// Summary statistics of the evaluation (science.md sections 4 and 6).
// Torch-free, deterministic, thread-compatible.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace tailsweep {

// REQUIRES (all four): values non-empty.
double Mean(const std::vector<double>& values);
double Median(std::vector<double> values);
// Linear interpolation between order statistics (numpy's default, "type 7").
// REQUIRES: 0 <= q <= 1.
double Quantile(std::vector<double> values, double q);
// Sample standard deviation (divisor n - 1); 0 for a single value.
double SampleStd(const std::vector<double>& values);

// Distance ratio ED(prediction, target) / delta, elementwise.
std::vector<double> DistanceRatios(const std::vector<double>& distances,
                                   double delta);

enum class Statistic { kMean, kMedian };

struct Interval {
  double low = 0;
  double high = 0;
};

struct BootstrapOptions {
  // Resamples drawn. Default: 2000.
  int resamples = 2000;
  // Coverage of the percentile interval. Default: 0.95.
  double level = 0.95;
  // Seed of the resampling stream (mt19937_64, so every platform agrees).
  uint64_t seed = 0;
};

// Percentile bootstrap interval of `statistic` over `values` (e.g. the
// ratios of the evaluation instances). InvalidArgument when values is empty,
// resamples < 1, or level is outside (0, 1).
absl::StatusOr<Interval> BootstrapInterval(const std::vector<double>& values,
                                           Statistic statistic,
                                           const BootstrapOptions& options);

// Hill estimate of the tail index from the k largest of |values|:
//   1 / ( (1/k) sum_{i<k} log(X_(i) / X_(k)) ),  X_(0) >= X_(1) >= ...
// InvalidArgument unless 1 <= k < values.size() and X_(k) > 0.
absl::StatusOr<double> HillEstimate(const std::vector<double>& values,
                                    int64_t k);

// k = ceil(fraction * n), at least 1 and at most n - 1.
int64_t HillOrderStatistics(int64_t n, double fraction);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_STATISTICS_H_
