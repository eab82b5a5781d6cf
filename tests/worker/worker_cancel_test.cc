// The worker and cancellation: only the coordinator's CANCELLED stops a
// job, and a job cancelled after it finished still delivers its result.
// Same fixture as worker_test.cc.

#include <algorithm>

#include "absl/strings/str_join.h"
#include "proto/status_details.h"
#include "proto/wire_status.h"
#include "tests/worker/worker_fixture.h"

namespace tailsweep {
namespace {

using Strings = std::vector<std::string>;
using Status = grpc::Status;

// gRPC's own CANCELLED (a coordinator shutting down with the call in
// flight; seen killing a job at a coordinator restart) says nothing about
// the job: the same batch goes again and the job runs to its end. Only the
// coordinator's marked CANCELLED (proto/status_details.h) stops a job.
class CancelledCall : public WorkerFixture,
                      public ::testing::WithParamInterface<bool> {};

TEST_P(CancelledCall, StopsTheJobOnlyWhenTheCoordinatorSaysSo) {
  const bool marked = GetParam();
  Offer({{Lease("a", 1, {{"steps", "2"}, {"checkpoint_every", "0"}})}});
  int answered = 0;
  answer_metrics_ = [&](const v1::ReportMetricsRequest&) {
    if (answered++ > 0) return Status::OK;
    return marked ? ToGrpc(JobCancelledStatus("job a was cancelled"))
                  : Status(grpc::StatusCode::CANCELLED, "Cancelled");
  };
  RunWorker();
  const auto has = [&](const std::string& call) {
    return std::find(calls_.begin(), calls_.end(), call) != calls_.end();
  };
  EXPECT_TRUE(has("ReportMetrics seq=1 points=9 steps=1: CANCELLED"));
  EXPECT_EQ(has("kill a"), marked) << absl::StrJoin(calls_, "\n");
  EXPECT_EQ(has("CompleteJob"), !marked) << absl::StrJoin(calls_, "\n");
  EXPECT_EQ(has("ReportMetrics seq=1 points=9 steps=1"), !marked);
}

INSTANTIATE_TEST_SUITE_P(ByWhom, CancelledCall, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "Coordinator" : "Transport";
                         });

// The user cancels the sweep after the job finished but before its result
// is acknowledged: the heartbeat says CANCELLED, yet the result still goes
// in (the coordinator keeps it: done wins) and nothing is killed.
TEST_F(WorkerFixture, JobCancelledAfterItFinishedStillDeliversItsResult) {
  options_.lease_ms = 3000;
  stamps_ = true;
  Offer({{Lease("a", 1, {{"steps", "2"}, {"checkpoint_every", "0"}})}});
  answer_report_ = [this] {
    return clock_.SteadyMs() < 2500
               ? Status(grpc::StatusCode::UNAVAILABLE, "busy")
               : Status::OK;
  };
  answer_heartbeat_ = [](const v1::HeartbeatRequest&) {
    return ToGrpc(JobCancelledStatus("job a was cancelled"));
  };
  RunWorker();
  EXPECT_EQ(
      calls_,
      (Strings{
          "t=0 LeaseJobs -> a", "t=0 DownloadCheckpoint job=a: NOT_FOUND",
          "start a", "t=100 ReportMetrics seq=1 points=9 steps=1",
          "t=200 ReportMetrics seq=2 points=9 steps=2",
          "t=200 LeaseJobs -> none",
          "t=200 ReportMetrics seq=3 points=6 steps=2",
          "t=200 CompleteJob: UNAVAILABLE", "t=500 CompleteJob: UNAVAILABLE",
          "t=1000 Heartbeat job=a epoch=1: CANCELLED",
          "t=1000 CompleteJob: UNAVAILABLE", "t=1300 CompleteJob: UNAVAILABLE",
          "t=1800 CompleteJob: UNAVAILABLE",
          "t=2500 Heartbeat job=a epoch=1: CANCELLED", "t=2500 CompleteJob",
          "t=2500 LeaseJobs -> none"}));
  EXPECT_EQ(completed_.job_id(), "a");
}

}  // namespace
}  // namespace tailsweep
