// Faults of sharing, on real processes (Reliability II, items 7-8):
// SIGTERM to a job's child of either kind, sweeps that share jobs cancelled
// and resumed, results that arrive for a cancelled job. Workers are real
// where the behaviour is the worker's; elsewhere a test speaks the worker's
// side of the API itself, so the moment of each call is exact. Bad input
// from outside: input_faults_test.cc.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/faults/input_fixture.h"
#include "tests/testing/results.h"

namespace tailsweep {
namespace {

using testing::CommandResult;
using testing::RunCommand;

// --- 7. Preemption of every job kind ---------------------------------------

// Whether process `pid` has a handler for SIGTERM: bit 15 of the SigCgt
// mask (hex) in /proc/PID/status.
bool CatchesSigterm(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigCgt:", 0) == 0) {
      const uint64_t mask = std::stoull(line.substr(7), nullptr, 16);
      return (mask >> (SIGTERM - 1)) & 1;
    }
  }
  return false;
}

// SIGTERM to a `lab tails` child (Slurm signals a job step's processes, not
// only the daemon): the lease is given back as preempted and the attempt
// is not counted; with --max-attempts 1 a counted attempt would fail the
// job for good.
TEST_F(InputFaults, SigtermToATailsChildReleasesItAsPreemptedUncounted) {
  StartCoordinator({"--max-attempts", "1"});
  // Its lease must not lapse by accident: with one attempt, a lapse would
  // fail the job.
  StartWorker("w", WithSteadyLease());
  SubmitAs("tails.yaml", R"(name: tails_term
kind: tails
grid:
  seam: [0.9]
  n: [32768]
fixed:
  indices: "1.1:2.5:0.1"
  trials: 120
  seed: 0
)");
  std::vector<pid_t> children;
  ASSERT_TRUE(testing::WaitUntil([&] {
    children = PidsMentioning(WorkDir("w") + "/");
    return !children.empty();
  }));
  // Its handler installed (SIGTERM caught, /proc/PID/status), so the job
  // is past its start and mid-trials (about 4 s of them here, longer on a
  // loaded machine; the check below says if it ever is not).
  ASSERT_TRUE(testing::WaitUntil([&] {
    for (pid_t pid : children) {
      if (!CatchesSigterm(pid)) return false;
    }
    return true;
  }));
  ASSERT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'leased'"), 1)
      << "the tails job ended before its SIGTERM; make it longer";
  for (pid_t pid : children) kill(pid, SIGTERM);
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM events WHERE kind = 'preempted'", 1))
      << testing::ReadFile(dir_ + "/w.err");
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1));
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'failed'"), 0);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'leased'"), 2);
  EXPECT_EQ(Query("SELECT attempt FROM jobs"), 1);
  // The child said so, and the worker released rather than failed it (it
  // logs the child's exit before it releases the job).
  EXPECT_NE(testing::ReadFile(dir_ + "/w.err").find("stopped on SIGTERM"),
            std::string::npos);
}

// SIGTERM before `lab train` installed its handler (here: to the process
// about to become it) kills it outright: still preempted, not failed.
TEST_F(InputFaults, SigtermToATrainChildBeforeItsHandlerReleasesItUncounted) {
  const std::string wrapper = dir_ + "/early-term-tailsweep";
  std::ofstream(wrapper) << "#!/bin/sh\ncase \"$*\" in *\"lab train\"*) "
                            "if mkdir '"
                         << dir_
                         << "/termed' 2>/dev/null; then kill -TERM $$; fi;; "
                            "esac\nexec "
                         << bin_ << "/tailsweep-lab \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  StartCoordinator({"--max-attempts", "1"});
  // With one attempt, a lease lapsing by accident would fail a job.
  StartWorker("w", WithSteadyLease({"--tailsweep-bin", wrapper}));
  SubmitAs("early.yaml", TrainSpec("early_term", "softmax, log", 40));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2))
      << testing::ReadFile(dir_ + "/w.err");
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'preempted'"), 1);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'failed'"), 0);
  EXPECT_EQ(Query("SELECT MAX(attempt) FROM jobs"), 1);
  EXPECT_NE(testing::ReadFile(dir_ + "/w.err").find("killed by SIGTERM"),
            std::string::npos);
}

// --- 8. Cancel and resume act on the sweep ---------------------------------

// Sweeps A {softmax, log} and B {log, linear} share the log job. Cancelling
// A while both of A's jobs run stops softmax only; log runs on, uninterrupted,
// for B, and A shows it done once it is (done wins).
TEST_F(InputFaults, CancelKeepsAJobAnotherLiveSweepSharesRunning) {
  StartCoordinator();
  SubmitAs("a.yaml", TrainSpec("shared_a", "softmax, log", 1000));
  SubmitAs("b.yaml", TrainSpec("shared_b", "log, linear", 1000));
  const std::string softmax = JobOf("softmax"), log = JobOf("log");
  ASSERT_EQ(softmax.size(), 64u);
  // A cancel reaches the worker with its next renewal, a third into the
  // lease (4 s); the lease (12 s) cannot lapse by accident under load, which
  // would lease the shared job again.
  StartWorker("w", {"--lease-ms", "12000"});
  ASSERT_TRUE(WaitFor(absl::StrCat("SELECT COUNT(*) FROM jobs WHERE state = "
                                   "'leased' AND job_id IN ('",
                                   softmax, "', '", log, "')"),
                      2));
  ASSERT_TRUE(WaitFor("SELECT COUNT(DISTINCT job_id) FROM metrics", 2));
  // The shared job's child is held (SIGSTOP) across the cancel and the
  // checks that it runs on, so that it cannot finish first however fast the
  // machine trains; its lease is renewed meanwhile by the worker.
  const std::vector<pid_t> shared = PidsMentioning(WorkDir("w") + "/" + log);
  ASSERT_EQ(shared.size(), 1u);
  kill(shared[0], SIGSTOP);
  const CommandResult cancel = Cli("cancel shared_a");
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_NE(cancel.out.find("2 jobs cancelled (1 of them run on for other "
                            "sweeps that share them)"),
            std::string::npos)
      << cancel.out;
  // softmax's child is killed with the next heartbeat; log's keeps running.
  EXPECT_TRUE(testing::WaitUntil(
      [&] { return ProcessesMentioning(WorkDir("w") + "/" + softmax) == 0; }));
  EXPECT_EQ(ProcessesMentioning(WorkDir("w") + "/" + log), 1);
  const CommandResult jobs = Cli("jobs shared_a");
  EXPECT_NE(jobs.out.find("cancelled (leased for another sweep)"),
            std::string::npos)
      << jobs.out;
  kill(shared[0], SIGCONT);
  ASSERT_TRUE(WaitFor(absl::StrCat("SELECT COUNT(*) FROM jobs WHERE state = "
                                   "'done' AND job_id <> '",
                                   softmax, "'"),
                      2));
  EXPECT_EQ(
      QueryText("SELECT state FROM jobs WHERE job_id = '" + softmax + "'"),
      "cancelled");
  // The shared job was leased once and never cancelled or interrupted.
  EXPECT_EQ(Query(absl::StrCat("SELECT COUNT(*) FROM events WHERE job_id = '",
                               log, "' AND kind <> 'done'")),
            1);
  EXPECT_NE(Cli("status shared_a")
                .out.find("1 done, 0 running, 0 queued, 0 failed, 1 cancelled"),
            std::string::npos);
  EXPECT_NE(Cli("status shared_b").out.find("2 done, 0 running"),
            std::string::npos);
  EXPECT_EQ(Query(absl::StrCat("SELECT COUNT(*) FROM metrics WHERE job_id = '",
                               log, "' AND name = 'loss'")),
            1000 / 5);
}

// Both sweeps cancelled, then B resumed: only B's jobs come back. A's
// cancels stand (its view of the shared job stays cancelled until the job
// is done), and softmax, A's alone, never runs, until a third sweep that
// has it is submitted: a job only cancelled sweeps had is wanted again.
TEST_F(InputFaults, ResumeBringsBackOnlyTheSweepsOwnJobs) {
  StartCoordinator();
  SubmitAs("a.yaml", TrainSpec("mine_a", "softmax, log", 30));
  SubmitAs("b.yaml", TrainSpec("mine_b", "log, linear", 30));
  EXPECT_NE(Cli("cancel mine_a").out.find("2 jobs cancelled (1 of them"),
            std::string::npos);
  const CommandResult cancel_b = Cli("cancel mine_b");
  EXPECT_NE(cancel_b.out.find("mine_b: 2 jobs cancelled\n"), std::string::npos)
      << cancel_b.out;
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'cancelled'"), 3);
  EXPECT_NE(
      Cli("resume mine_b").out.find("2 failed or cancelled jobs requeued"),
      std::string::npos);
  EXPECT_NE(Cli("status mine_a")
                .out.find("0 done, 0 running, 0 queued, 0 failed, 2 cancelled"),
            std::string::npos);
  EXPECT_NE(Cli("status mine_b").out.find("0 failed, 0 cancelled"),
            std::string::npos);
  const std::string softmax = JobOf("softmax");
  StartWorker("w");
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2));
  // The idle worker asks for more after both are done: had softmax been
  // queued, that call would have leased it.
  ASSERT_TRUE(WaitForAPollFromNow());
  EXPECT_EQ(Query(absl::StrCat("SELECT COUNT(*) FROM events WHERE job_id = '",
                               softmax, "' AND kind = 'leased'")),
            0);
  EXPECT_NE(Cli("status mine_a")
                .out.find("1 done, 0 running, 0 queued, 0 failed, 1 cancelled"),
            std::string::npos);
  SubmitAs("c.yaml", TrainSpec("mine_c", "softmax", 30));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 3));
  // A still sees its cancel of softmax undone only by the result: done.
  EXPECT_NE(Cli("status mine_a").out.find("2 done"), std::string::npos);
}

// A result that arrives under the live lease of a job cancelled meanwhile
// is kept: the job is done, with its metrics and result.
TEST_F(InputFaults, AResultArrivingForACancelledJobIsKept) {
  StartCoordinator();
  SubmitAs("a.yaml", TrainSpec("late", "softmax, log", 20));
  const std::vector<v1::JobLease> leases = LeaseAs("tester", 2);
  ASSERT_EQ(leases.size(), 2u);
  v1::ReportMetricsRequest points;
  points.set_worker_id("tester");
  points.set_job_id(leases[0].job_id());
  points.set_epoch(leases[0].epoch());
  points.set_seq(1);
  v1::MetricPoint* p = points.add_points();
  p->set_name("loss");
  p->set_step(5);
  p->set_value(0.25);
  v1::ReportMetricsResponse acked;
  EXPECT_NE(Cli("cancel late").out.find("2 jobs cancelled"), std::string::npos);
  v1::HeartbeatRequest hb;
  hb.set_worker_id("tester");
  hb.set_job_id(leases[0].job_id());
  hb.set_epoch(leases[0].epoch());
  hb.set_lease_ms(60000);
  v1::HeartbeatResponse renewed;
  EXPECT_EQ(Stub().Heartbeat(Context().get(), hb, &renewed).error_code(),
            grpc::StatusCode::CANCELLED);
  // The holder's last metrics and its result go in all the same ...
  EXPECT_TRUE(Stub().ReportMetrics(Context().get(), points, &acked).ok());
  const grpc::Status done =
      Complete("tester", leases[0], testing::TestResult(R"({"ratio_median":
      0.75, "ratio_ci_low": 0.5, "ratio_ci_high": 0.875})"));
  EXPECT_TRUE(done.ok()) << done.error_message();
  // ... but nobody else's.
  EXPECT_EQ(Complete("intruder", leases[1], testing::TestResult()).error_code(),
            grpc::StatusCode::CANCELLED);
  EXPECT_NE(Cli("status late")
                .out.find("1 done, 0 running, 0 queued, 0 failed, 1 cancelled"),
            std::string::npos);
  EXPECT_NE(Cli("results late --format csv").out.find(",0.75,"),
            std::string::npos);
  EXPECT_NE(Cli("curves " + leases[0].job_id()).out.find("loss,5,0.25"),
            std::string::npos);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM results"), 1);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'done'"), 1);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'cancelled'"), 2);
}

}  // namespace
}  // namespace tailsweep
