#ifndef TAILSWEEP_CORE_MARGINAL_H_
#define TAILSWEEP_CORE_MARGINAL_H_

// The one-dimensional marginal laws of the benchmark measures
// (science.md section 2), in closed form. Torch-free; sampling lives in
// sampling.h.
//
// Mirrored Pareto with index a > 0 and scale lam > 0:
//   P(|z| > t) = (1 + t/lam)^-a, fair sign, density continuous at 0.
// Gaussian with mean m and standard deviation s > 0.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tailsweep {

enum class MarginalFamily { kMirroredPareto, kGaussian };

// "mirrored_pareto" or "gaussian"; InvalidArgument names the allowed values.
absl::StatusOr<MarginalFamily> ParseMarginalFamily(absl::string_view name);
absl::string_view MarginalFamilyName(MarginalFamily family);

// A value type; copyable, thread-compatible. Only the fields of its family
// are meaningful.
struct Marginal {
  MarginalFamily family = MarginalFamily::kMirroredPareto;
  double index = 1.5;  // mirrored Pareto tail index a
  double scale = 1.0;  // mirrored Pareto scale lam
  double mean = 0.0;   // Gaussian mean m
  double std = 1.0;    // Gaussian standard deviation s

  static Marginal MirroredPareto(double index, double scale);
  static Marginal Gaussian(double mean, double std);

  // OK when the parameters are finite and index, scale, std are > 0;
  // otherwise InvalidArgument naming the parameter and the allowed range.
  absl::Status Validate() const;

  // REQUIRES: Validate().ok(). Quantile requires 0 < u < 1.
  double Cdf(double z) const;
  double Density(double z) const;
  double Quantile(double u) const;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_MARGINAL_H_
