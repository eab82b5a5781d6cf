#ifndef TAILSWEEP_REPORT_COMMAND_RESULTS_H_
#define TAILSWEEP_REPORT_COMMAND_RESULTS_H_

// The results table of a command sweep (`tailsweep results` and the report):
// one row per cell of the grid without `seed` (or per job with `per_seed`), the
// cell's keys, done/jobs, each metric's last value (the median over the cell's
// done jobs) and each outcome as "k/n" (jobs where it holds, of the done
// ones). Metrics and outcomes come from the stored results' "summary" and
// "outcomes" (core/schema/command_job.h), which the coordinator judged over
// every attempt's points. Numbers: 4 significant digits in table and
// markdown, shortest round-trip text in csv and json.

#include <string>
#include <vector>

#include "cli/render.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep {

cli::Table CommandResultsTable(const std::vector<v1::JobInfo>& jobs,
                               bool per_seed, bool full_precision);

}  // namespace tailsweep

#endif  // TAILSWEEP_REPORT_COMMAND_RESULTS_H_
