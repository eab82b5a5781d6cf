#include "cli/pages.h"

#include "proto/paged_reads.h"

namespace tailsweep::cli {

absl::StatusOr<std::vector<v1::JobInfo>> ListAllJobs(Connection& c,
                                                     const std::string& sweep,
                                                     const std::string& state) {
  absl::StatusOr<const CoordinatorApi*> api = c.Api();
  if (!api.ok()) return api.status();
  return tailsweep::ListAllJobs(**api, sweep, state);
}

absl::StatusOr<SweepResults> GetResultsTable(Connection& c,
                                             const std::string& sweep,
                                             bool over_seeds) {
  absl::StatusOr<const CoordinatorApi*> api = c.Api();
  if (!api.ok()) return api.status();
  return tailsweep::GetResultsTable(**api, sweep, over_seeds);
}

absl::StatusOr<std::vector<v1::MetricPoint>> GetAllMetrics(
    Connection& c, const std::string& job_id,
    const std::vector<std::string>& names, int64_t step_min) {
  v1::GetMetricsRequest req;
  req.set_job_id(job_id);
  req.set_step_min(step_min);
  for (const std::string& n : names) req.add_names(n);
  absl::StatusOr<const CoordinatorApi*> api = c.Api();
  if (!api.ok()) return api.status();
  return tailsweep::GetAllMetrics(**api, std::move(req));
}

}  // namespace tailsweep::cli
