#ifndef TAILSWEEP_CORE_REFERENCE_H_
#define TAILSWEEP_CORE_REFERENCE_H_

// The sampling reference delta(op, family, N) of science.md section 4: over
// T trials, draw an instance and two independent target ensembles of N
// points; delta is the mean (also reported: the median) of their energy
// distance. A model's distance ratio is ED(prediction, target) / delta.

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/energy_distance.h"
#include "core/instance.h"

namespace tailsweep {

struct ReferenceOptions {
  int64_t n = 1024;     // points per ensemble; must be >= 2
  int64_t trials = 32;  // must be >= 1
  uint64_t seed = 0;
  EnergyOptions energy;
  // Called after each trial with (done, total); may be empty.
  std::function<void(int64_t, int64_t)> progress;
};

struct Reference {
  double mean = 0;
  double median = 0;
  std::vector<double> distances;  // one per trial
};

// InvalidArgument when n < 2 or trials < 1. Computed in double on the CPU.
absl::StatusOr<Reference> SamplingReference(const Task& task,
                                            const ReferenceOptions& options);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_REFERENCE_H_
