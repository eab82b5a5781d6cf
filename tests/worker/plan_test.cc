// The plan's rules, one state at a time: each test asserts the actions for
// a series of states with one comparison.

#include "worker/plan.h"

#include <gtest/gtest.h>

#include "absl/strings/str_join.h"

namespace tailsweep {
namespace {

using Strings = std::vector<std::string>;

HeldJob Running(const std::string& job_id, int64_t epoch = 1) {
  HeldJob j;
  j.id = epoch;
  j.job_id = job_id;
  j.epoch = epoch;
  j.slots = {"cpu/0"};
  j.next_heartbeat_ms = 10000;
  j.metrics_read_to_end = true;
  return j;
}

HeldJob Exited(JobOutcome outcome) {
  HeldJob j = Running("a");
  j.running = false;
  j.outcome = outcome;
  return j;
}

PlanInput With(std::vector<HeldJob> jobs, int64_t now_ms = 0) {
  PlanInput in;
  in.now_ms = now_ms;
  in.slots = {"cpu/0"};
  in.jobs = std::move(jobs);
  in.next_lease_ms = 1000000;  // not due unless a test says so
  return in;
}

// The plan for `in`, as one line.
std::string Describe(const PlanInput& in) {
  Strings out;
  for (const Action& a : Plan(in)) out.push_back(a.ToString(in));
  return out.empty() ? "-" : absl::StrJoin(out, "; ");
}

TEST(Plan, FencedJobIsKilledAtOnceAndNothingIsSentForIt) {
  HeldJob j = Running("a");
  j.fenced = true;
  j.metrics_unacked = true;
  j.metrics_seq = 3;
  j.checkpoint_step = 20;
  j.next_heartbeat_ms = 0;
  HeldJob done = j;
  done.running = false;
  done.outcome = JobOutcome::kDone;
  EXPECT_EQ((Strings{Describe(With({j})), Describe(With({done}))}),
            (Strings{"kill a epoch=1", "forget a epoch=1"}));
}

TEST(Plan, AFencedChildWithAGracePeriodIsAskedToStopThenForgotten) {
  HeldJob j = Running("a");
  j.fenced = true;
  j.graceful_stop = true;
  j.next_heartbeat_ms = 0;
  HeldJob asked = j;
  asked.stop_sent = true;
  HeldJob exited = asked;
  exited.running = false;
  // Leased again while the old attempt runs: that one is killed at once.
  PlanInput again = With({Running("b", 1)});
  again.jobs[0].fenced = true;
  again.jobs[0].graceful_stop = true;
  again.slots = {"cpu/0", "cpu/1"};
  again.pending = {{0, "b", 2, {"cpu/1"}}};
  EXPECT_EQ(
      (Strings{Describe(With({j})), Describe(With({asked})),
               Describe(With({exited})), Describe(again).substr(0, 14)}),
      (Strings{"stop a epoch=1", "-", "forget a epoch=1", "kill b epoch=1"}));
}

TEST(Plan, CheckpointWaitsUntilTheMetricsBeforeItAreAcknowledged) {
  HeldJob unacked = Running("a");
  unacked.checkpoint_step = 20;
  unacked.metrics_unacked = true;
  unacked.metrics_seq = 3;
  HeldJob unread = Running("a");
  unread.checkpoint_step = 20;
  unread.metrics_read_to_end = false;  // the bound stopped the last read
  HeldJob idle = Running("a");
  idle.checkpoint_step = 20;
  HeldJob uploaded = idle;
  uploaded.uploaded_step = 20;
  EXPECT_EQ((Strings{Describe(With({unacked})), Describe(With({unread})),
                     Describe(With({idle})), Describe(With({uploaded}))}),
            (Strings{"metrics a epoch=1 seq=3", "-", "upload a epoch=1 step=20",
                     "-"}));
}

TEST(Plan, FinishedJobHeartbeatsUntilMetricsResultAndReportAreAcknowledged) {
  HeldJob sending = Exited(JobOutcome::kDone);
  sending.metrics_unacked = true;
  sending.metrics_seq = 7;
  sending.next_heartbeat_ms = 500;
  HeldJob queue = Exited(JobOutcome::kDone);
  HeldJob result = queue;
  result.result_points_queued = true;
  result.metrics_unacked = true;
  result.metrics_seq = 8;
  HeldJob report = queue;
  report.result_points_queued = true;
  report.next_heartbeat_ms = 500;
  HeldJob failed = Exited(JobOutcome::kFailed);
  EXPECT_EQ(
      (Strings{Describe(With({sending}, 600)), Describe(With({queue})),
               Describe(With({result})), Describe(With({report}, 600)),
               Describe(With({failed}))}),
      (Strings{"heartbeat a epoch=1; metrics a epoch=1 seq=7",
               "queue-result a epoch=1", "metrics a epoch=1 seq=8",
               "heartbeat a epoch=1; complete a epoch=1", "fail a epoch=1"}));
}

TEST(Plan, StoppedJobUploadsItsLastCheckpointThenReleases) {
  HeldJob stopped = Exited(JobOutcome::kStopped);
  stopped.checkpoint_step = 30;
  stopped.uploaded_step = 20;
  HeldJob uploaded = stopped;
  uploaded.uploaded_step = 30;
  EXPECT_EQ((Strings{Describe(With({stopped})), Describe(With({uploaded}))}),
            (Strings{"upload a epoch=1 step=30", "release a epoch=1"}));
}

// One transfer per job: none starts while one is in flight, and the
// report waits for it; heartbeats and metrics do not.
TEST(Plan, ATransferInFlightHoldsTheNextUploadAndTheReport) {
  HeldJob running = Running("a");
  running.checkpoint_step = 30;
  running.transferring = true;
  running.next_heartbeat_ms = 0;
  HeldJob sending = running;
  sending.metrics_unacked = true;
  sending.metrics_seq = 4;
  HeldJob stopped = Exited(JobOutcome::kStopped);
  stopped.transferring = true;
  HeldJob done = Exited(JobOutcome::kDone);
  done.transferring = true;
  done.result_points = false;
  EXPECT_EQ(
      (Strings{Describe(With({running})), Describe(With({sending})),
               Describe(With({stopped})), Describe(With({done}))}),
      (Strings{"heartbeat a epoch=1",
               "heartbeat a epoch=1; metrics a epoch=1 seq=4", "-", "-"}));
}

TEST(Plan, ReLeasedJobsOldAttemptIsKilledBeforeTheNewOneStarts) {
  PlanInput in = With({Running("a", 1)});
  in.slots = {"cpu/0", "cpu/1"};
  in.jobs[0].slots = {"cpu/0"};
  in.pending = {{0, "a", 2, {"cpu/1"}}};
  in.next_lease_ms = 0;
  EXPECT_EQ(Describe(in), "kill a epoch=1; start a epoch=2 cpu/1; lease cpu/0");
}

// Every due heartbeat goes before any job's other calls: a refused
// metrics call (a coordinator that cannot write) starts a backoff that
// skips the calls after it, and must not cost another job its lease.
TEST(Plan, HeartbeatsComeBeforeEveryOtherCall) {
  HeldJob sending = Running("a", 1);
  sending.metrics_unacked = true;
  sending.metrics_seq = 7;
  HeldJob finished = Running("b", 2);
  finished.running = false;
  finished.outcome = JobOutcome::kDone;
  finished.result_points_queued = true;
  HeldJob due = Running("c", 3);
  due.next_heartbeat_ms = 0;
  PlanInput in = With({sending, finished, due});
  in.jobs[1].next_heartbeat_ms = 0;
  EXPECT_EQ(Describe(in),
            "heartbeat b epoch=2; heartbeat c epoch=3; metrics a epoch=1 "
            "seq=7; complete b epoch=2");
}

TEST(Plan, OnlyLocalActionsWhileBackingOffAndNoLeasesWhenShuttingDown) {
  HeldJob fenced = Running("a", 1);
  fenced.fenced = true;
  HeldJob busy = Running("b", 2);
  busy.slots = {"cpu/1"};
  busy.next_heartbeat_ms = 0;
  busy.metrics_unacked = true;
  busy.metrics_seq = 1;
  PlanInput off = With({fenced, busy});
  off.slots = {"cpu/0", "cpu/1", "cpu/2"};
  off.next_lease_ms = 0;
  off.coordinator_ready = false;
  PlanInput draining = off;
  draining.jobs = {busy};
  draining.coordinator_ready = true;
  draining.shutting_down = true;
  PlanInput leasing = draining;
  leasing.shutting_down = false;
  // The allocation ends soon: the running job goes on, nothing is leased.
  PlanInput closing = leasing;
  closing.leasing_closed = true;
  EXPECT_EQ((Strings{Describe(off), Describe(draining), Describe(leasing),
                     Describe(closing)}),
            (Strings{"kill a epoch=1",
                     "stop b epoch=2; heartbeat b epoch=2; metrics b epoch=2 "
                     "seq=1",
                     "heartbeat b epoch=2; metrics b epoch=2 seq=1; lease "
                     "cpu/0,cpu/2",
                     "heartbeat b epoch=2; metrics b epoch=2 seq=1"}));
}

}  // namespace
}  // namespace tailsweep
