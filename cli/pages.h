#ifndef TAILSWEEP_CLI_PAGES_H_
#define TAILSWEEP_CLI_PAGES_H_

// The paged reads (proto/paged_reads.h) over a command's connection.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/connection.h"
#include "proto/paged_reads.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep::cli {

// Every job of the sweep (only those in `state` unless empty), grid order.
// The statuses of ListJobs.
absl::StatusOr<std::vector<v1::JobInfo>> ListAllJobs(Connection& c,
                                                     const std::string& sweep,
                                                     const std::string& state);

// The sweep's results table, every page (proto/paged_reads.h's
// GetResultsTable, with its statuses).
absl::StatusOr<SweepResults> GetResultsTable(Connection& c,
                                             const std::string& sweep,
                                             bool over_seeds);

// Every stored point of one job's metrics named `names` (all when empty)
// from step `step_min` on (0: the first), by name then step. The statuses
// of GetMetrics.
absl::StatusOr<std::vector<v1::MetricPoint>> GetAllMetrics(
    Connection& c, const std::string& job_id,
    const std::vector<std::string>& names, int64_t step_min = 0);

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_PAGES_H_
