#include "core/statistics.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "absl/strings/str_cat.h"

namespace tailsweep {

double Mean(const std::vector<double>& values) {
  double total = 0;
  for (double v : values) total += v;
  return total / static_cast<double>(values.size());
}

double Median(std::vector<double> values) { return Quantile(values, 0.5); }

double Quantile(std::vector<double> values, double q) {
  const double position = q * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(position));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  std::nth_element(values.begin(), values.begin() + lo, values.end());
  const double low = values[lo];
  if (hi == lo) return low;
  // The next order statistic is the minimum of the upper part.
  const double high = *std::min_element(values.begin() + hi, values.end());
  return low + (position - static_cast<double>(lo)) * (high - low);
}

double SampleStd(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const double mean = Mean(values);
  double total = 0;
  for (double v : values) total += (v - mean) * (v - mean);
  return std::sqrt(total / static_cast<double>(values.size() - 1));
}

std::vector<double> DistanceRatios(const std::vector<double>& distances,
                                   double delta) {
  std::vector<double> out;
  out.reserve(distances.size());
  for (double d : distances) out.push_back(d / delta);
  return out;
}

namespace {

// Uniform index in [0, n) without modulo bias; platform-independent.
size_t UniformIndex(std::mt19937_64& rng, size_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t r;
  do {
    r = rng();
  } while (r >= limit);
  return static_cast<size_t>(r % n);
}

}  // namespace

absl::StatusOr<Interval> BootstrapInterval(const std::vector<double>& values,
                                           Statistic statistic,
                                           const BootstrapOptions& options) {
  if (values.empty()) {
    return absl::InvalidArgumentError("bootstrap needs at least one value");
  }
  if (options.resamples < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bootstrap resamples must be >= 1 (got ", options.resamples, ")"));
  }
  if (!(options.level > 0 && options.level < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bootstrap level must be in (0, 1) (got ", options.level, ")"));
  }
  std::mt19937_64 rng(options.seed);
  std::vector<double> resample(values.size());
  std::vector<double> estimates;
  estimates.reserve(options.resamples);
  for (int r = 0; r < options.resamples; ++r) {
    for (double& v : resample) v = values[UniformIndex(rng, values.size())];
    estimates.push_back(statistic == Statistic::kMean ? Mean(resample)
                                                      : Median(resample));
  }
  const double tail = (1.0 - options.level) / 2.0;
  return Interval{Quantile(estimates, tail), Quantile(estimates, 1.0 - tail)};
}

absl::StatusOr<double> HillEstimate(const std::vector<double>& values,
                                    int64_t k) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (k < 1 || k >= n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Hill estimate needs 1 <= k < n (got k = ", k, ", n = ", n, ")"));
  }
  std::vector<double> magnitudes;
  magnitudes.reserve(n);
  for (double v : values) magnitudes.push_back(std::fabs(v));
  // Largest first: positions [0, k) hold the k largest, position k the next.
  std::nth_element(magnitudes.begin(), magnitudes.begin() + k, magnitudes.end(),
                   std::greater<double>());
  const double threshold = magnitudes[k];
  if (!(threshold > 0) || !std::isfinite(threshold)) {
    return absl::InvalidArgumentError(
        "Hill estimate needs a positive, finite (k+1)-th largest |value|");
  }
  double total = 0;
  for (int64_t i = 0; i < k; ++i) total += std::log(magnitudes[i] / threshold);
  return static_cast<double>(k) / total;
}

int64_t HillOrderStatistics(int64_t n, double fraction) {
  const int64_t k = static_cast<int64_t>(std::ceil(fraction * n));
  return std::clamp<int64_t>(k, 1, std::max<int64_t>(1, n - 1));
}

}  // namespace tailsweep
