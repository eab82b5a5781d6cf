#include "cli/pages.h"

#include "proto/paged_reads.h"

namespace tailsweep::cli {

absl::StatusOr<ReadCalls> CallsOf(Connection& c) {
  absl::StatusOr<v1::Coordinator::Stub*> stub = c.Stub();
  if (!stub.ok()) return stub.status();
  return ReadCalls{*stub, [&c] { return c.Context(); },
                   [&c](const grpc::Status& s) { return c.Check(s); }};
}

absl::StatusOr<std::vector<v1::JobInfo>> ListAllJobs(Connection& c,
                                                     const std::string& sweep,
                                                     const std::string& state) {
  absl::StatusOr<ReadCalls> calls = CallsOf(c);
  if (!calls.ok()) return calls.status();
  return tailsweep::ListAllJobs(*calls, sweep, state);
}

absl::StatusOr<v1::GetResultsResponse> GetAllResults(
    Connection& c, v1::GetResultsRequest req) {
  absl::StatusOr<ReadCalls> calls = CallsOf(c);
  if (!calls.ok()) return calls.status();
  return tailsweep::GetAllResults(*calls, std::move(req));
}

absl::StatusOr<std::vector<v1::MetricPoint>> GetAllMetrics(
    Connection& c, const std::string& job_id,
    const std::vector<std::string>& names, int64_t step_min) {
  v1::GetMetricsRequest req;
  req.set_job_id(job_id);
  req.set_step_min(step_min);
  for (const std::string& n : names) req.add_names(n);
  absl::StatusOr<ReadCalls> calls = CallsOf(c);
  if (!calls.ok()) return calls.status();
  return tailsweep::GetAllMetrics(*calls, std::move(req));
}

}  // namespace tailsweep::cli
