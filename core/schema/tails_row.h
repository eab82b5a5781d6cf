#ifndef TAILSWEEP_CORE_SCHEMA_TAILS_ROW_H_
#define TAILSWEEP_CORE_SCHEMA_TAILS_ROW_H_

// One row of a tails job's result (core/tail_testbed.h computes them; the
// job protocol writes and parses them, core/schema/job_result.h): one
// (seam, budget, index) cell. Noise units: (mean_a - mean_a*) / sd_a* with
// the reference index's mean and standard deviation over trials at the
// same seam and budget. A plain type, torch-free, so the services that
// read results include nothing of the testbed.

#include <cstdint>

namespace tailsweep {

struct TailsRow {
  double seam = 0;
  int64_t n = 0;
  double index = 0;
  double ed_mean = 0, ed_sd = 0;
  double w2_mean = 0, w2_sd = 0;
  double ed_noise = 0, w2_noise = 0;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_TAILS_ROW_H_
