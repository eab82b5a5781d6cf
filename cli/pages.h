#ifndef TAILSWEEP_CLI_PAGES_H_
#define TAILSWEEP_CLI_PAGES_H_

// The paged reads of the service commands: every page of ListJobs, of
// GetResults and of GetMetrics, each page its own call (with its own deadline),
// so that no single answer nears the client's receive limit however large the
// sweep.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/connection.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep::cli {

// Every job of the sweep (only those in `state` unless empty), grid order.
// The statuses of ListJobs.
absl::StatusOr<std::vector<v1::JobInfo>> ListAllJobs(Connection& c,
                                                     const std::string& sweep,
                                                     const std::string& state);

// Every page of `req`'s results as one answer: rows, tails rows and pivot
// rows appended in order, the pivot's cell indices made to index the whole
// `rows`. The statuses of GetResults.
absl::StatusOr<v1::GetResultsResponse> GetAllResults(Connection& c,
                                                     v1::GetResultsRequest req);

// Every stored point of one job's metrics named `names` (all when empty)
// from step `step_min` on (0: the first), by name then step. The statuses
// of GetMetrics.
absl::StatusOr<std::vector<v1::MetricPoint>> GetAllMetrics(
    Connection& c, const std::string& job_id,
    const std::vector<std::string>& names, int64_t step_min = 0);

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_PAGES_H_
