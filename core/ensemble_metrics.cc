#include "core/ensemble_metrics.h"

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "core/energy_1d.h"
#include "core/statistics.h"

namespace tailsweep {
namespace {

// Linear-interpolated quantile q of sorted values along dim -2.
at::Tensor SortedQuantile(const at::Tensor& sorted, double q) {
  const int64_t n = sorted.size(-2);
  const double position = q * static_cast<double>(n - 1);
  const int64_t lo = static_cast<int64_t>(std::floor(position));
  const int64_t hi = std::min(lo + 1, n - 1);
  const double frac = position - static_cast<double>(lo);
  const at::Tensor low = sorted.select(-2, lo);
  return low + (sorted.select(-2, hi) - low) * frac;
}

}  // namespace

at::Tensor Spread(const at::Tensor& points) {
  const at::Tensor sorted = std::get<0>(points.to(at::kDouble).sort(-2));
  return SortedQuantile(sorted, 0.75) - SortedQuantile(sorted, 0.25);
}

at::Tensor SpreadRatio(const at::Tensor& prediction, const at::Tensor& target) {
  TORCH_CHECK(prediction.dim() == target.dim() &&
                  prediction.size(-1) == target.size(-1),
              "SpreadRatio: prediction and target differ in shape");
  const at::Tensor ratio =
      Spread(prediction) / Spread(target.to(prediction.device()));
  // The median of d values, averaging the middle two when d is even.
  const at::Tensor sorted = std::get<0>(ratio.sort(-1));
  const int64_t d = sorted.size(-1);
  const at::Tensor upper = sorted.select(-1, d / 2);
  if (d % 2 == 1) return upper;
  return (sorted.select(-1, d / 2 - 1) + upper) / 2.0;
}

absl::StatusOr<std::vector<double>> HillPerAxis(const at::Tensor& points,
                                                double fraction) {
  if (points.dim() != 2 || points.size(0) < 2) {
    return absl::InvalidArgumentError(
        "Hill estimate needs points [n, d] with n >= 2");
  }
  const at::Tensor cpu = points.to(at::kCPU, at::kDouble).t().contiguous();
  const int64_t n = cpu.size(1);
  const int64_t k = HillOrderStatistics(n, fraction);
  std::vector<double> out;
  for (int64_t axis = 0; axis < cpu.size(0); ++axis) {
    const double* p = cpu[axis].data_ptr<double>();
    absl::StatusOr<double> h = HillEstimate(std::vector<double>(p, p + n), k);
    if (!h.ok()) return h.status();
    out.push_back(*h);
  }
  return out;
}

absl::Status AddHillErrors(const at::Tensor& prediction,
                           const at::Tensor& target,
                           const at::Tensor& second_target, double fraction,
                           HillErrors* errors) {
  absl::StatusOr<std::vector<double>> h_pred =
      HillPerAxis(prediction, fraction);
  if (!h_pred.ok()) return h_pred.status();
  absl::StatusOr<std::vector<double>> h_target = HillPerAxis(target, fraction);
  if (!h_target.ok()) return h_target.status();
  absl::StatusOr<std::vector<double>> h_second =
      HillPerAxis(second_target, fraction);
  if (!h_second.ok()) return h_second.status();
  for (size_t axis = 0; axis < h_target->size(); ++axis) {
    errors->model.push_back(std::fabs((*h_pred)[axis] - (*h_target)[axis]));
    errors->reference.push_back(
        std::fabs((*h_target)[axis] - (*h_second)[axis]));
  }
  return absl::OkStatus();
}

double HillErrorStatistic(const HillErrors& errors) {
  return UnbiasedEnergyDistance1D(errors.model, errors.reference);
}

}  // namespace tailsweep
