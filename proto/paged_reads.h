#ifndef TAILSWEEP_PROTO_PAGED_READS_H_
#define TAILSWEEP_PROTO_PAGED_READS_H_

// The coordinator's paged reads, every page its own call (with its own
// deadline), so that no single answer nears a client's receive limit however
// large the sweep. Shared by the CLI and the coordinator's HTTP gateway (which
// calls its own service in process).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/schema/results_table.h"
#include "proto/coordinator_api.h"

namespace tailsweep {

// Every sweep, with its kind and counts.
absl::StatusOr<std::vector<v1::SweepInfo>> ListAllSweeps(
    const CoordinatorApi& c);

// Every job of the sweep (only those in `state` unless empty), grid order.
absl::StatusOr<std::vector<v1::JobInfo>> ListAllJobs(const CoordinatorApi& c,
                                                     const std::string& sweep,
                                                     const std::string& state);

// A sweep's results: its kind's own table, every page, and its counts.
struct SweepResults {
  std::string kind;  // as the coordinator names it (shown, never parsed)
  int64_t jobs = 0, done = 0;
  ResultsTable table;
};
// GetResults with `table` for every page. FailedPrecondition saying which
// coordinator version is needed when it answers without a table (older
// than 0.2.0); DataLoss for a table this build cannot read (wire_records.h).
absl::StatusOr<SweepResults> GetResultsTable(const CoordinatorApi& c,
                                             const std::string& sweep,
                                             bool over_seeds);

// Every page of `req`'s results as one answer: rows, tails rows and pivot
// rows appended in order, the pivot's cell indices made to index the whole
// `rows`.
absl::StatusOr<v1::GetResultsResponse> GetAllResults(const CoordinatorApi& c,
                                                     v1::GetResultsRequest req);

// Every point `req` selects, by name then step (downsampled per name when
// req.max_points() > 0), from all its pages.
absl::StatusOr<std::vector<v1::MetricPoint>> GetAllMetrics(
    const CoordinatorApi& c, v1::GetMetricsRequest req);

// Every series `req` selects, from all its pages, as the pages hold them (a
// series a page cuts goes on in the next one's first; with max_points > 0
// pages end between jobs, so each (job, name) comes once).
absl::StatusOr<std::vector<v1::MetricSeries>> ListAllSweepMetrics(
    const CoordinatorApi& c, v1::ListSweepMetricsRequest req);

}  // namespace tailsweep

#endif  // TAILSWEEP_PROTO_PAGED_READS_H_
