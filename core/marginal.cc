#include "core/marginal.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace tailsweep {

absl::StatusOr<MarginalFamily> ParseMarginalFamily(absl::string_view name) {
  if (name == "mirrored_pareto") return MarginalFamily::kMirroredPareto;
  if (name == "gaussian") return MarginalFamily::kGaussian;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown marginal '", name, "'; allowed: mirrored_pareto, gaussian"));
}

absl::string_view MarginalFamilyName(MarginalFamily family) {
  switch (family) {
    case MarginalFamily::kMirroredPareto:
      return "mirrored_pareto";
    case MarginalFamily::kGaussian:
      return "gaussian";
  }
  return "unknown";
}

Marginal Marginal::MirroredPareto(double index, double scale) {
  Marginal m;
  m.family = MarginalFamily::kMirroredPareto;
  m.index = index;
  m.scale = scale;
  return m;
}

Marginal Marginal::Gaussian(double mean, double std) {
  Marginal m;
  m.family = MarginalFamily::kGaussian;
  m.mean = mean;
  m.std = std;
  return m;
}

namespace {

absl::Status RequirePositive(absl::string_view what, double value) {
  if (std::isfinite(value) && value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " must be a finite number > 0 (got ", value, ")"));
}

}  // namespace

absl::Status Marginal::Validate() const {
  if (family == MarginalFamily::kMirroredPareto) {
    if (absl::Status s = RequirePositive("index", index); !s.ok()) return s;
    return RequirePositive("scale", scale);
  }
  if (!std::isfinite(mean)) {
    return absl::InvalidArgumentError(
        absl::StrCat("mean must be finite (got ", mean, ")"));
  }
  return RequirePositive("std", std);
}

double Marginal::Cdf(double z) const {
  if (family == MarginalFamily::kGaussian) {
    return 0.5 * std::erfc(-(z - mean) / (std * std::sqrt(2.0)));
  }
  const double half_tail = 0.5 * std::pow(1.0 + std::fabs(z) / scale, -index);
  return z < 0 ? half_tail : 1.0 - half_tail;
}

double Marginal::Density(double z) const {
  if (family == MarginalFamily::kGaussian) {
    const double t = (z - mean) / std;
    return std::exp(-0.5 * t * t) / (std * std::sqrt(2.0 * M_PI));
  }
  return index / (2.0 * scale) *
         std::pow(1.0 + std::fabs(z) / scale, -(index + 1.0));
}

double Marginal::Quantile(double u) const {
  if (family == MarginalFamily::kGaussian) {
    // Bisection on the standard normal CDF: robust in both tails, exact to
    // the last bit of the bracket; used by tests and tools, not hot paths.
    double lo = -40.0, hi = 40.0, t = 0.0;
    for (int i = 0; i < 200; ++i) {
      t = 0.5 * (lo + hi);
      if (t == lo || t == hi) break;
      (0.5 * std::erfc(-t / std::sqrt(2.0)) < u ? lo : hi) = t;
    }
    return mean + std * t;
  }
  const double m = std::fmin(u, 1.0 - u);
  const double magnitude = scale * (std::pow(2.0 * m, -1.0 / index) - 1.0);
  return u < 0.5 ? -magnitude : magnitude;
}

}  // namespace tailsweep
