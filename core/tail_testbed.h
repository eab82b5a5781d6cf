#ifndef TAILSWEEP_CORE_TAIL_TESTBED_H_
#define TAILSWEEP_CORE_TAIL_TESTBED_H_

// The tail-sensitivity testbed of science.md section 7 (no training).
//
// Reference: the Pareto on [1, inf) with index a* (survival z^-a*). A
// candidate with index a equals the reference below the seam
// z0 = Q_ref(q0) and above it has survival
//   (1 - q0) (1 + a* (z - z0) / (a z0))^(-a),
// matching the reference's mass and density at the seam.
//
// [choice] Each trial draws one reference sample and one set of candidate
// uniforms, shared by every seam and index of that trial (common random
// numbers: the curves over the index are smooth within a trial, and every
// quantile transform is monotone, so one sort serves all candidates).

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/schema/tails_row.h"

namespace tailsweep {

// The spliced law, in closed form. REQUIRES: reference_index, index > 0 and
// 0 < seam_quantile < 1.
struct SplicedPareto {
  double reference_index = 1.5;  // a*
  double seam_quantile = 0.9;    // q0
  double index = 1.5;            // a

  double Seam() const;  // z0
  double Survival(double z) const;
  double Density(double z) const;
  // REQUIRES: 0 < u < 1.
  double Quantile(double u) const;
};

struct TailsConfig {
  std::vector<double> indices = {1.3, 1.4, 1.5, 1.6, 1.7};  // must hold a*
  std::vector<double> seams = {0.9, 0.95, 0.99};            // q0 values
  std::vector<int64_t> budgets = {1024, 4096, 16384, 65536, 262144};
  int64_t trials = 20;  // per (budget); >= 2
  uint64_t seed = 0;
  double reference_index = 1.5;
  // Called from the calling thread with (trials done, trials total); may be
  // empty.
  std::function<void(int64_t, int64_t)> progress;
};

// Rows ordered by seam, then budget, then index (each as given). Runs the
// trials in parallel; the result depends only on the config, not on threads.
// InvalidArgument, naming the field, for an empty list, an index <= 0, a
// grid without the reference index, a seam outside (0, 1), a budget < 2,
// or fewer than 2 trials.
absl::StatusOr<std::vector<TailsRow>> RunTailTestbed(const TailsConfig& config);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_TAIL_TESTBED_H_
