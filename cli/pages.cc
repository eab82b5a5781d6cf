#include "cli/pages.h"

#include "proto/paged_reads.h"

namespace tailsweep::cli {

ReadCalls CallsOf(Connection& c) {
  return {&c.Stub(), [&c] { return c.Context(); },
          [&c](const grpc::Status& s) { return c.Check(s); }};
}

absl::StatusOr<std::vector<v1::JobInfo>> ListAllJobs(Connection& c,
                                                     const std::string& sweep,
                                                     const std::string& state) {
  return tailsweep::ListAllJobs(CallsOf(c), sweep, state);
}

absl::StatusOr<v1::GetResultsResponse> GetAllResults(
    Connection& c, v1::GetResultsRequest req) {
  return tailsweep::GetAllResults(CallsOf(c), std::move(req));
}

absl::StatusOr<std::vector<v1::MetricPoint>> GetAllMetrics(
    Connection& c, const std::string& job_id,
    const std::vector<std::string>& names, int64_t step_min) {
  v1::GetMetricsRequest req;
  req.set_job_id(job_id);
  req.set_step_min(step_min);
  for (const std::string& n : names) req.add_names(n);
  return tailsweep::GetAllMetrics(CallsOf(c), std::move(req));
}

}  // namespace tailsweep::cli
