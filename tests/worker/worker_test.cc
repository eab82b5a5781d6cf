// The worker's loop against the gRPC mock, fake jobs and a fake clock: each
// test asserts the whole history of calls and launcher events at once.

#include "worker/worker.h"

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "core/schema/lease_file.h"
#include "tests/worker/worker_fixture.h"

namespace tailsweep {
namespace {

using Strings = std::vector<std::string>;
using Status = grpc::Status;

const Status kFenced(grpc::StatusCode::FAILED_PRECONDITION, "lease gone");
const Status kDown(grpc::StatusCode::UNAVAILABLE, "connection refused");
const Status kSlow(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline");

class WorkerTest : public WorkerFixture {};

// The baseline: a well-behaved job (4 steps, checkpoints at 2 and 4).
// Checkpoint 2 goes up once line 2 is acknowledged; the job's slot is free
// (LeaseJobs) as soon as its child exits; the result's 6 points go as the
// last batch, before CompleteJob.
TEST_F(WorkerTest, RelaysMetricsCheckpointsAndResultThenCompletes) {
  Offer({{Lease("a", 1)}});
  RunWorker();
  EXPECT_EQ(
      calls_,
      (Strings{"LeaseJobs -> a", "DownloadCheckpoint job=a: NOT_FOUND",
               "start a", "ReportMetrics seq=1 points=9 steps=1",
               "ReportMetrics seq=2 points=9 steps=2",
               "UploadCheckpoint step=2",
               "ReportMetrics seq=3 points=9 steps=3",
               "ReportMetrics seq=4 points=9 steps=4", "LeaseJobs -> none",
               "ReportMetrics seq=5 points=6 steps=4",
               // The final checkpoint goes up before the result.
               "UploadCheckpoint step=4", "CompleteJob"}));
}

TEST_F(WorkerTest, FencedDuringCheckpointUploadIsKilledAndNothingMoreIsSent) {
  Offer({{Lease("a", 1)}});
  answer_upload_ = [](const v1::CheckpointHeader&) { return kFenced; };
  RunWorker();
  EXPECT_EQ(calls_,
            (Strings{"LeaseJobs -> a", "DownloadCheckpoint job=a: NOT_FOUND",
                     "start a", "ReportMetrics seq=1 points=9 steps=1",
                     "ReportMetrics seq=2 points=9 steps=2",
                     "UploadCheckpoint step=2: FAILED_PRECONDITION", "kill a",
                     "LeaseJobs -> none"}));
}

// Six lines are in the file by t=600, but only two batches are held: while
// the coordinator is down only seq 1 is retried (with backoff); once it
// answers, each round reads two more lines, and all go in order.
TEST_F(WorkerTest, UnacknowledgedBatchesAreBoundedAndAllSentInOrderLater) {
  options_.max_unacked_batches = 2;
  options_.max_batch_points = 9;  // one line a batch
  stamps_ = true;
  Offer({{Lease("a", 1, {{"steps", "6"}, {"checkpoint_every", "0"}})}});
  answer_metrics_ = [this](const v1::ReportMetricsRequest&) {
    return clock_.SteadyMs() < 1000 ? kDown : Status::OK;
  };
  RunWorker();
  EXPECT_EQ(calls_,
            (Strings{"t=0 LeaseJobs -> a",
                     "t=0 DownloadCheckpoint job=a: NOT_FOUND", "start a",
                     "t=100 ReportMetrics seq=1 points=9 steps=1: UNAVAILABLE",
                     "t=400 ReportMetrics seq=1 points=9 steps=1: UNAVAILABLE",
                     "t=900 ReportMetrics seq=1 points=9 steps=1: UNAVAILABLE",
                     "t=1800 ReportMetrics seq=1 points=9 steps=1",
                     "t=1800 LeaseJobs -> none",
                     "t=1800 ReportMetrics seq=2 points=9 steps=2",
                     "t=1900 ReportMetrics seq=3 points=9 steps=3",
                     "t=1900 LeaseJobs -> none",
                     "t=1900 ReportMetrics seq=4 points=9 steps=4",
                     "t=2000 ReportMetrics seq=5 points=9 steps=5",
                     "t=2000 LeaseJobs -> none",
                     "t=2000 ReportMetrics seq=6 points=9 steps=6",
                     "t=2000 ReportMetrics seq=7 points=6 steps=6",
                     "t=2000 CompleteJob"}));
}

// Line 1 is written at t=100 without its newline (which comes at t=150):
// nothing is sent at t=100, the line goes once at t=200.
TEST_F(WorkerTest, HalfWrittenLineIsSentOnceItsNewlineArrives) {
  stamps_ = true;
  Offer({{Lease(
      "a", 1,
      {{"fake", "slow-metrics"}, {"steps", "2"}, {"checkpoint_every", "0"}})}});
  RunWorker();
  EXPECT_EQ(
      calls_,
      (Strings{"t=0 LeaseJobs -> a", "t=0 DownloadCheckpoint job=a: NOT_FOUND",
               "start a", "t=200 ReportMetrics seq=1 points=9 steps=1",
               "t=300 ReportMetrics seq=2 points=9 steps=2",
               "t=300 LeaseJobs -> none",
               "t=300 ReportMetrics seq=3 points=6 steps=2",
               "t=300 CompleteJob"}));
}

// Checkpoint 2 is on disk at t=200 while line 2 is not acknowledged: it is
// not uploaded. By the time line 2 is, checkpoint 4 is the newest, and it
// goes up only after lines 3 and 4 are acknowledged too.
TEST_F(WorkerTest, CheckpointNewerThanTheAcknowledgedMetricsWaitsForThem) {
  stamps_ = true;
  Offer({{Lease("a", 1, {{"steps", "6"}})}});
  int refused = 0;
  answer_metrics_ = [&](const v1::ReportMetricsRequest& r) {
    return r.seq() == 2 && refused++ == 0 ? kDown : Status::OK;
  };
  RunWorker();
  EXPECT_EQ(
      calls_,
      (Strings{"t=0 LeaseJobs -> a", "t=0 DownloadCheckpoint job=a: NOT_FOUND",
               "start a", "t=100 ReportMetrics seq=1 points=9 steps=1",
               "t=200 ReportMetrics seq=2 points=9 steps=2: UNAVAILABLE",
               "t=500 ReportMetrics seq=2 points=9 steps=2",
               "t=500 ReportMetrics seq=3 points=9 steps=3",
               "t=500 ReportMetrics seq=4 points=9 steps=4",
               "t=500 ReportMetrics seq=5 points=9 steps=5",
               "t=500 UploadCheckpoint step=4",
               "t=600 ReportMetrics seq=6 points=9 steps=6",
               "t=600 LeaseJobs -> none",
               "t=600 ReportMetrics seq=7 points=6 steps=6",
               "t=600 UploadCheckpoint step=6", "t=600 CompleteJob"}));
}

TEST_F(WorkerTest, LeaseRefusedMidJobKillsTheChildAndReportsNothing) {
  options_.lease_ms = 3000;  // a heartbeat a second
  Offer({{Lease(
      "a", 1,
      {{"steps", "10"}, {"step_ms", "400"}, {"checkpoint_every", "0"}})}});
  answer_heartbeat_ = [](const v1::HeartbeatRequest&) { return kFenced; };
  RunWorker();
  EXPECT_EQ(calls_,
            (Strings{"LeaseJobs -> a", "DownloadCheckpoint job=a: NOT_FOUND",
                     "start a", "ReportMetrics seq=1 points=9 steps=1",
                     "ReportMetrics seq=2 points=9 steps=2",
                     "Heartbeat job=a epoch=1: FAILED_PRECONDITION", "kill a",
                     "LeaseJobs -> none"}));
}

// DEADLINE_EXCEEDED at t=100: the worker backs off, then sends the same
// batch (seq 1, step 1) again, not a new one.
TEST_F(WorkerTest, SlowCoordinatorGetsTheSameBatchAgainAfterABackoff) {
  stamps_ = true;
  Offer({{Lease("a", 1, {{"steps", "2"}, {"checkpoint_every", "0"}})}});
  int answered = 0;
  answer_metrics_ = [&](const v1::ReportMetricsRequest&) {
    return answered++ == 0 ? kSlow : Status::OK;
  };
  RunWorker();
  EXPECT_EQ(
      calls_,
      (Strings{"t=0 LeaseJobs -> a", "t=0 DownloadCheckpoint job=a: NOT_FOUND",
               "start a",
               "t=100 ReportMetrics seq=1 points=9 steps=1: DEADLINE_EXCEEDED",
               "t=400 ReportMetrics seq=1 points=9 steps=1",
               "t=400 LeaseJobs -> none",
               "t=400 ReportMetrics seq=2 points=9 steps=2",
               "t=400 ReportMetrics seq=3 points=6 steps=2",
               "t=400 CompleteJob"}));
}

TEST_F(WorkerTest, EveryMetricKeyAndANaNLossReachReportMetrics) {
  Offer({{Lease(
      "a", 1, {{"steps", "1"}, {"nan_at", "1"}, {"checkpoint_every", "0"}})}});
  RunWorker();
  Strings points;
  for (const auto& batch : reported_) {
    for (const auto& p : batch.points()) {
      points.push_back(absl::StrCat(batch.seq(), " ", p.name(), "@", p.step(),
                                    "=", p.value()));
    }
  }
  EXPECT_EQ(
      points,
      (Strings{"1 loss@1=nan", "1 lr@1=0.001", "1 grad_norm@1=inf",
               "1 spread_ratio@1=0.9", "1 step_seconds@1=0.1",
               "1 attention_entropy/0@1=1.5", "1 attention_entropy/1@1=1.25",
               "1 attention_max_weight/0@1=0.5",
               "1 attention_max_weight/1@1=0.75", "2 eval/ratio_mean@1=0.9",
               "2 eval/ratio_median@1=0.875", "2 eval/ratio_ci_low@1=0.75",
               "2 eval/ratio_ci_high@1=1.125", "2 eval/spread_ratio@1=0.5",
               "2 eval/delta@1=0.25"}));
}

TEST_F(WorkerTest, CrashingJobIsFailedWithItsStderrTail) {
  Offer({{Lease("a", 1, {{"fake", "crash"}})}});
  RunWorker();
  calls_.push_back("error=" + failed_.error());
  calls_.push_back("stderr_tail=" + failed_.stderr_tail());
  EXPECT_EQ(calls_,
            (Strings{"LeaseJobs -> a", "DownloadCheckpoint job=a: NOT_FOUND",
                     "start a", "ReportMetrics seq=1 points=9 steps=1",
                     // Its slot is leased again while its logs go up.
                     "LeaseJobs -> none", "FailJob",
                     "error=exit code 1: Traceback: step 2\n"
                     "fake: CUDA error: out of memory\n",
                     "stderr_tail=Traceback: step 2\n"
                     "fake: CUDA error: out of memory\n"}));
}

// A completion the coordinator refuses itself (a limit the worker cannot
// see, e.g. --max-message-bytes) would be refused again: the job fails at
// once, for good, with the coordinator's reason; no lease is left to run out.
TEST_F(WorkerTest, ARefusedCompletionFailsTheJobForGoodWithTheReason) {
  Offer({{Lease("a", 1, {{"steps", "2"}, {"checkpoint_every", "0"}})}});
  int reports = 0;
  answer_report_ = [&] {
    return ++reports == 1 ? Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                   "message larger than max")
                          : Status::OK;
  };
  RunWorker();
  EXPECT_EQ(calls_.at(calls_.size() - 2), "CompleteJob: RESOURCE_EXHAUSTED");
  EXPECT_EQ(calls_.back(), "FailJob");
  EXPECT_TRUE(failed_.permanent());
  EXPECT_EQ(failed_.error(),
            "the coordinator refused the job's result: message larger than "
            "max");
}

// A failure report refused by the coordinator goes again without what is
// optional (its stderr tail), once.
TEST_F(WorkerTest, ARefusedFailureIsSentAgainBare) {
  Offer({{Lease("a", 1, {{"fake", "crash"}})}});
  int reports = 0;
  answer_report_ = [&] {
    return ++reports == 1 ? Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   "stderr_tail too long")
                          : Status::OK;
  };
  RunWorker();
  EXPECT_EQ(calls_.at(calls_.size() - 2), "FailJob: INVALID_ARGUMENT");
  EXPECT_EQ(calls_.back(), "FailJob");
  EXPECT_EQ(failed_.stderr_tail(), "");
  EXPECT_FALSE(failed_.error().empty());
}

// A job that fails while the work directory's disk is full is the disk's
// fault, not the job's: it goes back uncounted with the reason, nothing is
// leased until the disk has room, and then leasing resumes.
TEST_F(WorkerTest,
       AJobFailingOnAFullDiskIsGivenBackAndNothingIsLeasedMeanwhile) {
  Offer({{Lease("a", 1, {{"fake", "crash"}, {"checkpoint_every", "0"}})},
         {Lease("b", 1)}});
  clock_.At(1, [this] { files_.free_bytes = 1'000'000; });
  clock_.At(30000, [this] { files_.free_bytes = int64_t{1} << 40; });
  RunWorker();
  std::string all;
  for (const std::string& c : calls_) absl::StrAppend(&all, c, "\n");
  EXPECT_NE(all.find("ReleaseJob reason=the worker's work directory " +
                     options_.work_dir +
                     " is full (1.0 MB free); the job "
                     "failed there: exit code 1"),
            std::string::npos)
      << all;
  EXPECT_EQ(all.find("FailJob"), std::string::npos) << all;
  // b only once the disk has room again.
  EXPECT_NE(all.find("LeaseJobs -> b"), std::string::npos) << all;
  EXPECT_GE(clock_.SteadyMs(), 30000);
}

// The coordinator takes at most 12 points a request (as --max-message-bytes
// would): a 18-point batch goes in halves, nothing is dropped.
TEST_F(WorkerTest, ABatchTooLargeForTheCoordinatorIsSentInHalves) {
  options_.max_batch_points = 18;  // two lines of 9
  Offer({{Lease(
      "a", 1, {{"steps", "2"}, {"checkpoint_every", "0"}, {"step_ms", "1"}})}});
  answer_metrics_ = [](const v1::ReportMetricsRequest& req) {
    return req.points_size() > 12
               ? Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "too large")
               : Status::OK;
  };
  RunWorker();
  int64_t points = 0;
  for (const auto& r : reported_) points += r.points_size();
  EXPECT_EQ(points, 2 * 9 + 6);  // both lines and the result's points
  EXPECT_EQ(
      calls_,
      (Strings{"LeaseJobs -> a", "DownloadCheckpoint job=a: NOT_FOUND",
               "start a",
               "ReportMetrics seq=1 points=18 steps=1-2: RESOURCE_EXHAUSTED",
               "LeaseJobs -> none", "ReportMetrics seq=1 points=9 steps=1",
               "ReportMetrics seq=1 points=9 steps=2",
               "ReportMetrics seq=2 points=6 steps=2", "CompleteJob"}));
}

// Refused for good (UNAUTHENTICATED): not dropped silently; the job is
// stopped and reported failed with the reason.
TEST_F(WorkerTest, MetricsRefusedForGoodStopTheJobAndSayWhy) {
  Offer({{Lease("a", 1, {{"steps", "100"}})}});
  answer_metrics_ = [](const auto&) {
    return Status(grpc::StatusCode::UNAUTHENTICATED, "bad token");
  };
  RunWorker();
  calls_.push_back("error=" + failed_.error());
  EXPECT_EQ(calls_,
            (Strings{"LeaseJobs -> a", "DownloadCheckpoint job=a: NOT_FOUND",
                     "start a", "ReportMetrics seq=1 points=9 steps=1: OTHER",
                     "kill a", "FailJob", "LeaseJobs -> none",
                     "error=the coordinator refused metric batch 1: bad "
                     "token"}));
}

// A child's stderr that is not UTF-8 would make the FailJob call
// unparseable (proto3 strings), losing the report: it goes as valid UTF-8.
TEST_F(WorkerTest, StderrThatIsNotUtf8IsSentAsValidUtf8) {
  Offer({{Lease("a", 1, {{"fake", "garbled-crash"}})}});
  RunWorker();
  v1::FailJobRequest parsed;
  EXPECT_TRUE(parsed.ParseFromString(failed_.SerializeAsString()));
  const std::string r = "\xef\xbf\xbd";  // U+FFFD, one per bad byte
  EXPECT_EQ(parsed.stderr_tail(), r + " boom " + r + r);
  EXPECT_EQ(parsed.error(), "exit code 1: " + r + " boom " + r + r);
}

TEST_F(WorkerTest, JobExitingWithoutAResultIsFailed) {
  Offer({{Lease(
      "a", 1,
      {{"fake", "no-result"}, {"steps", "1"}, {"checkpoint_every", "0"}})}});
  RunWorker();
  const std::string error = failed_.error();
  calls_.push_back("error=" + error.substr(0, error.find(':')));
  EXPECT_EQ(calls_,
            (Strings{"LeaseJobs -> a", "DownloadCheckpoint job=a: NOT_FOUND",
                     "start a", "ReportMetrics seq=1 points=9 steps=1",
                     "LeaseJobs -> none", "FailJob",
                     "error=exit code 0 but no result"}));
}

// Line 2 is torn (not JSON, newline-terminated): skipped, the rest relayed.
TEST_F(WorkerTest, TornLineIsSkippedAndTheJobCompletes) {
  Offer({{Lease(
      "a", 1,
      {{"fake", "torn-line"}, {"steps", "3"}, {"checkpoint_every", "0"}})}});
  RunWorker();
  EXPECT_EQ(
      calls_,
      (Strings{"LeaseJobs -> a", "DownloadCheckpoint job=a: NOT_FOUND",
               "start a", "ReportMetrics seq=1 points=9 steps=1",
               "ReportMetrics seq=2 points=9 steps=3", "LeaseJobs -> none",
               "ReportMetrics seq=3 points=6 steps=3", "CompleteJob"}));
}

// SIGTERM to the worker at t=250: the job checkpoints step 3 and stops; the
// checkpoint goes up after line 3, then the lease is given back.
TEST_F(WorkerTest, PreemptedJobUploadsItsCheckpointThenReleasesTheLease) {
  Offer({{Lease("a", 1, {{"checkpoint_every", "0"}})}});
  clock_.At(250, [this] { stop_ = SIGTERM; });
  RunWorker();
  EXPECT_EQ(calls_,
            (Strings{"LeaseJobs -> a", "DownloadCheckpoint job=a: NOT_FOUND",
                     "start a", "ReportMetrics seq=1 points=9 steps=1",
                     "ReportMetrics seq=2 points=9 steps=2", "term a",
                     "ReportMetrics seq=3 points=9 steps=3",
                     "UploadCheckpoint step=3",
                     "ReleaseJob reason=preempted (SIGTERM)"}));
}

// A child that SIGTERM kills before it installed its handler (exit 143)
// is stopped, not failed: its lines are relayed, and with no checkpoint
// the lease just goes back.
TEST_F(WorkerTest, ChildKilledBySigtermBeforeItsHandlerIsReleasedNotFailed) {
  Offer({{Lease("a", 1, {{"fake", "no-handler"}, {"checkpoint_every", "0"}})}});
  clock_.At(250, [this] { stop_ = SIGTERM; });
  RunWorker();
  EXPECT_EQ(calls_,
            (Strings{"LeaseJobs -> a", "DownloadCheckpoint job=a: NOT_FOUND",
                     "start a", "ReportMetrics seq=1 points=9 steps=1",
                     "ReportMetrics seq=2 points=9 steps=2", "term a",
                     "ReportMetrics seq=3 points=9 steps=3",
                     "ReleaseJob reason=preempted (SIGTERM)"}));
}

// SIGTERM that reaches a tails job's child alone (the worker is not
// stopping): released uncounted, and the worker carries on.
TEST_F(WorkerTest, TailsJobKilledBySigtermFromOutsideIsReleasedNotFailed) {
  v1::JobLease tails = Lease("t", 1, {{"fake", "killed-by-term"}});
  tails.set_kind("tails");
  Offer({{tails}});
  RunWorker();
  EXPECT_EQ(calls_,
            (Strings{"LeaseJobs -> t", "DownloadCheckpoint job=t: NOT_FOUND",
                     "start t", "ReleaseJob reason=preempted (SIGTERM)",
                     "LeaseJobs -> none"}));
}

// Epoch 1 of job a hangs in slot cpu/0; the coordinator leases a again
// (epoch 2): the old attempt is killed before the new one starts.
TEST_F(WorkerTest, ReLeasedJobsOldAttemptIsKilledBeforeTheNewOneStarts) {
  options_.slots_per_device = 2;
  Offer({{Lease("a", 1, {{"fake", "hang"}})},
         {Lease("a", 2, {{"steps", "1"}, {"checkpoint_every", "0"}})}});
  RunWorker();
  EXPECT_EQ(
      calls_,
      (Strings{"LeaseJobs max=2 -> a", "DownloadCheckpoint job=a: NOT_FOUND",
               "start a", "LeaseJobs -> a", "kill a",
               "DownloadCheckpoint job=a: NOT_FOUND", "start a",
               "ReportMetrics seq=1 points=9 steps=1",
               "LeaseJobs max=2 -> none",
               "ReportMetrics seq=2 points=6 steps=1", "CompleteJob"}));
}

// Done at t=200, but CompleteJob is not acknowledged until t=2500: the
// lease is renewed meanwhile (every lease/3 = 1 s).
TEST_F(WorkerTest, FinishedJobKeepsHeartbeatingUntilItsResultIsAcknowledged) {
  options_.lease_ms = 3000;
  stamps_ = true;
  Offer({{Lease("a", 1, {{"steps", "2"}, {"checkpoint_every", "0"}})}});
  answer_report_ = [this] {
    return clock_.SteadyMs() < 2500
               ? Status(grpc::StatusCode::UNAVAILABLE, "busy")
               : Status::OK;
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
          "t=1000 Heartbeat job=a epoch=1", "t=1000 CompleteJob: UNAVAILABLE",
          "t=1300 CompleteJob: UNAVAILABLE", "t=1800 CompleteJob: UNAVAILABLE",
          "t=2500 Heartbeat job=a epoch=1", "t=2500 CompleteJob",
          "t=2500 LeaseJobs -> none"}));
}

// The coordinator is unreachable from t=500 to t=6000 (every answer
// UNAVAILABLE). The lease, asked for at t=0 and never renewed, runs out on
// the worker's clock at t=3000: the job is killed then (it cannot run on
// while someone else may get the job), and once the coordinator answers its
// checkpoint is uploaded and its lease given back, not failed.
TEST_F(WorkerTest, ALeaseThatCannotBeRenewedStopsTheJobAndGivesItBackLater) {
  options_.lease_ms = 3000;
  options_.lease_margin_ms = 500;
  stamps_ = true;
  Offer({{Lease("a", 1, {{"steps", "100"}, {"checkpoint_every", "5"}})}});
  auto down = [this] {
    const int64_t t = clock_.SteadyMs();
    return t >= 500 && t < 6000 ? Status(grpc::StatusCode::UNAVAILABLE, "down")
                                : Status::OK;
  };
  answer_heartbeat_ = [&](const auto&) { return down(); };
  answer_metrics_ = [&](const auto&) { return down(); };
  answer_upload_ = [&](const auto&) { return down(); };
  answer_report_ = down;
  answer_lease_ = [&](const auto&) { return down(); };
  RunWorker();
  // The watchdog told the child to stop a margin before the lease ends.
  EXPECT_EQ(ReadLeaseFile(dir_ + "/a"), 2500);
  Strings key;
  for (const std::string& c : calls_) {
    if (absl::StrContains(c, "kill") || absl::StrContains(c, "Release") ||
        absl::StrContains(c, "Upload") || absl::StrContains(c, "start") ||
        absl::StrContains(c, "FailJob")) {
      key.push_back(c);
    }
  }
  EXPECT_EQ(key,
            (Strings{"start a", "kill a", "t=6700 UploadCheckpoint step=30",
                     "t=6700 ReleaseJob reason=stopped: its lease ran out "
                     "on the worker"}))
      << absl::StrJoin(calls_, "\n");
}

// A LeaseJobs answer lost on the way (UNAVAILABLE twice) is asked for again
// with the same request id, so the coordinator can answer with the jobs it
// leased to the lost call; the next new call gets a new id.
TEST_F(WorkerTest, ALeaseCallWithoutAnAnswerIsRepeatedWithTheSameRequestId) {
  int answered = 0;
  answer_lease_ = [&](const auto&) {
    return ++answered <= 2 ? Status(grpc::StatusCode::UNAVAILABLE, "lost")
                           : Status::OK;
  };
  Offer({{Lease("a", 1, {{"steps", "2"}, {"checkpoint_every", "0"}})}});
  RunWorker();
  ASSERT_GE(lease_request_ids_.size(), 4u);
  EXPECT_EQ(lease_request_ids_[0], "w/1");
  EXPECT_EQ(lease_request_ids_[1], "w/1");
  EXPECT_EQ(lease_request_ids_[2], "w/1");
  EXPECT_EQ(lease_request_ids_[3], "w/2");
  EXPECT_NE(std::find(calls_.begin(), calls_.end(), "CompleteJob"),
            calls_.end());
}

}  // namespace
}  // namespace tailsweep
