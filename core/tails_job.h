#ifndef TAILSWEEP_CORE_TAILS_JOB_H_
#define TAILSWEEP_CORE_TAILS_JOB_H_

// The schema of a tail-testbed job (a sweep of kind `tails`): one
// (seam, budget) cell over all candidate indices, so its noise units are
// computed within the job. Torch-free, like job_config.h.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/job_config.h"

namespace tailsweep {

struct TailsJobConfig {
  double seam = 0.9;                    // seam quantile q0, in (0, 1)
  int64_t n = 16384;                    // sample budget, >= 2
  std::string indices = "1.1:2.5:0.1";  // START:STOP:STEP or a list
  int64_t trials = 20;                  // >= 2
  uint64_t seed = 0;
  double reference_index = 1.5;  // a*, must be in the index grid
};

const std::vector<JobKey>& TailsJobKeys();

// As SetJobKey: InvalidArgument naming the key and what is allowed.
absl::Status SetTailsJobKey(TailsJobConfig& config, absl::string_view key,
                            absl::string_view value);

std::vector<std::pair<std::string, std::string>> TailsJobToKeyValues(
    const TailsJobConfig& config);

// "START:STOP:STEP" (inclusive, STEP > 0) or "a,b,c"; InvalidArgument
// naming `what` otherwise. Grid points are rounded to 12 decimals.
absl::StatusOr<std::vector<double>> ParseIndexGrid(absl::string_view what,
                                                   absl::string_view text);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_TAILS_JOB_H_
