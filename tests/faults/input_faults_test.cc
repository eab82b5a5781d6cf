// Faults of input and of sharing, on real processes (Reliability II, items
// 7-9): SIGTERM to a job's child of either kind, sweeps that share jobs
// cancelled and resumed, results that arrive for a cancelled job, and bad
// input from outside: duplicate spec keys, results of the wrong shape,
// overlong ids and free text, control characters on their way to a
// terminal, a 100k-job sweep read through the CLI. Workers are real where
// the behaviour is the worker's; elsewhere a test speaks the worker's side
// of the API itself, so the moment of each call is exact.

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
#include "coordinator/store.h"
#include "proto/tailsweep.grpc.pb.h"
#include "tests/faults/fault_fixture.h"
#include "tests/testing/cluster.h"
#include "tests/testing/results.h"

namespace tailsweep {
namespace {

using testing::CommandResult;
using testing::RunCommand;

// A train sweep over `kernels` of the tiny model.
std::string TrainSpec(const std::string& name, const std::string& kernels,
                      int steps) {
  return TinySpec(name, absl::StrCat("  kernel: [", kernels, "]\n"),
                  {{"steps", absl::StrCat(steps)}});
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + what.size())) {
    ++n;
  }
  return n;
}

class InputFaults : public ::testing::Test, public testing::Cluster {
 protected:
  InputFaults() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_input_") {}

  // One text answer from the database.
  std::string QueryText(const std::string& sql) {
    return std::string(absl::StripAsciiWhitespace(
        RunCommand("sqlite3 " + dir_ + "/db \"" + sql + "\"").out));
  }
  std::string JobOf(const std::string& kernel) {
    return QueryText(
        absl::StrCat("SELECT job_id FROM jobs WHERE json_extract(params, "
                     "'$.kernel') = '",
                     kernel, "'"));
  }
  // Submits `spec` under its own file name (several sweeps in one test),
  // retrying while the coordinator starts.
  void SubmitAs(const std::string& file, const std::string& spec) {
    std::ofstream(dir_ + "/" + file) << spec;
    CommandResult last;
    if (testing::WaitUntil(
            [&] {
              last = Cli("submit " + dir_ + "/" + file);
              return last.exit_code == 0;
            },
            testing::EventDeadline(), std::chrono::milliseconds(100))) {
      return;
    }
    ADD_FAILURE() << "could not submit " << file << ": " << last.err;
  }
  // The pids of live processes whose command line mentions `text`.
  std::vector<pid_t> PidsMentioning(const std::string& text) {
    const CommandResult r = RunCommand("pgrep -f -- '[" + text.substr(0, 1) +
                                       "]" + text.substr(1) + "'");
    std::vector<pid_t> out;
    for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
      int pid = 0;
      if (absl::SimpleAtoi(line, &pid)) out.push_back(pid);
    }
    return out;
  }

  // The worker's side of the API, spoken by the test.
  v1::Coordinator::Stub& Stub() {
    if (!stub_) {
      stub_ = v1::Coordinator::NewStub(
          grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
    }
    return *stub_;
  }
  std::unique_ptr<grpc::ClientContext> Context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(10));
    return ctx;
  }
  // Waits for the coordinator, then leases up to `n` jobs as `worker`.
  std::vector<v1::JobLease> LeaseAs(const std::string& worker, int n) {
    v1::LeaseJobsRequest req;
    req.set_worker_id(worker);
    req.set_max_jobs(n);
    req.set_lease_ms(60000);
    v1::LeaseJobsResponse resp;
    grpc::Status s;
    testing::WaitUntil(
        [&] {
          s = Stub().LeaseJobs(Context().get(), req, &resp);
          return s.error_code() != grpc::StatusCode::UNAVAILABLE;
        },
        testing::EventDeadline(), std::chrono::milliseconds(100));
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.leases().begin(), resp.leases().end()};
  }
  grpc::Status Complete(const std::string& worker, const v1::JobLease& lease,
                        const std::string& result) {
    v1::CompleteJobRequest req;
    req.set_worker_id(worker);
    req.set_job_id(lease.job_id());
    req.set_epoch(lease.epoch());
    req.set_result_json(result);
    v1::CompleteJobResponse resp;
    return Stub().CompleteJob(Context().get(), req, &resp);
  }

  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

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
                         << bin_ << "/tailsweep \"$@\"\n";
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
  ASSERT_TRUE(WaitForAPollFromNow(*this));
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

// --- 9. Bad input ----------------------------------------------------------

TEST_F(InputFaults, DuplicateSpecKeysAreRefusedWithTheirPosition) {
  StartCoordinator();
  const std::string path = dir_ + "/dup.yaml";
  std::ofstream(path) << "name: dup\ngrid:\n  kernel: [log]\nfixed:\n  "
                         "steps: 10\n  lr: 0.001\n  steps: 20\n";
  const CommandResult local = Cli("submit " + path);
  EXPECT_EQ(local.exit_code, 2);
  EXPECT_NE(local.err.find(path + ":7:3: duplicate key 'steps' in 'fixed' "
                                  "(first at line 5, column 3)"),
            std::string::npos)
      << local.err;
  // The coordinator refuses it too (another client may not parse first).
  v1::SubmitSweepRequest req;
  req.set_spec_yaml(testing::ReadFile(path));
  req.set_source_name("dup.yaml");
  v1::SubmitSweepResponse resp;
  grpc::Status s;
  testing::WaitUntil(
      [&] {
        s = Stub().SubmitSweep(Context().get(), req, &resp);
        return s.error_code() != grpc::StatusCode::UNAVAILABLE;
      },
      testing::EventDeadline(), std::chrono::milliseconds(100));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("dup.yaml:7:3: duplicate key 'steps'"),
            std::string::npos);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM sweeps"), 0);
}

// result_json is checked against the job's kind when it arrives: a wrong
// shape is INVALID_ARGUMENT and leaves the lease live, so results keep
// reading (they once failed with UNKNOWN after a bad result was stored).
TEST_F(InputFaults, AResultOfTheWrongShapeIsInvalidArgument) {
  StartCoordinator();
  SubmitAs("a.yaml", TrainSpec("shape", "softmax", 20));
  const std::vector<v1::JobLease> leases = LeaseAs("tester", 1);
  ASSERT_EQ(leases.size(), 1u);
  for (const std::string& bad :
       {std::string(R"({"ratio_median": "high"})"), std::string("[1, 2]"),
        std::string("not json"),
        std::string(R"({"rows": [{"seam": 0.9, "n": 8, "index": 1.5}]})")}) {
    const grpc::Status s = Complete("tester", leases[0], bad);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
  }
  EXPECT_EQ(Query("SELECT COUNT(*) FROM results"), 0);
  const CommandResult results = Cli("results shape --format csv");
  EXPECT_EQ(results.exit_code, 0) << results.err;
  EXPECT_TRUE(Complete("tester", leases[0], testing::TestResult()).ok());
  EXPECT_EQ(Cli("results shape").exit_code, 0);
}

// Request ids and free text are length-limited before anything is touched.
TEST_F(InputFaults, OverlongIdsAndFreeTextAreInvalidArgument) {
  StartCoordinator();
  SubmitAs("a.yaml", TrainSpec("limits", "softmax", 20));
  v1::LeaseJobsRequest lease;
  lease.set_max_jobs(1);
  lease.set_lease_ms(60000);
  v1::LeaseJobsResponse leased;
  struct Id {
    std::string worker, request, field;
  };
  for (const Id& id :
       std::vector<Id>{{std::string(300, 'w'), "", "worker_id"},
                       {"w\x1b[2J", "", "worker_id"},
                       {"w", std::string(300, 'r'), "request_id"},
                       {"w", "r 1", "request_id"}}) {
    lease.set_worker_id(id.worker);
    lease.set_request_id(id.request);
    const grpc::Status s = Stub().LeaseJobs(Context().get(), lease, &leased);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << id.field;
    EXPECT_NE(s.error_message().find(id.field), std::string::npos)
        << s.error_message();
  }
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'leased'"), 0);
  const std::vector<v1::JobLease> leases = LeaseAs("w", 1);
  ASSERT_EQ(leases.size(), 1u);
  v1::FailJobRequest fail;
  fail.set_worker_id("w");
  fail.set_job_id(leases[0].job_id());
  fail.set_epoch(leases[0].epoch());
  fail.set_error(std::string(70 << 10, 'e'));
  v1::FailJobResponse failed;
  grpc::Status s = Stub().FailJob(Context().get(), fail, &failed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("error must be at most 65536 bytes"),
            std::string::npos)
      << s.error_message();
  fail.set_error("short");
  fail.set_stderr_tail(std::string(70 << 10, 't'));
  s = Stub().FailJob(Context().get(), fail, &failed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("stderr_tail must be at most"),
            std::string::npos);
  v1::ReleaseJobRequest release;
  release.set_worker_id("w");
  release.set_job_id(leases[0].job_id());
  release.set_epoch(leases[0].epoch());
  release.set_reason(std::string(2000, 'r'));
  v1::ReleaseJobResponse released;
  s = Stub().ReleaseJob(Context().get(), release, &released);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("reason must be at most 1024 bytes"),
            std::string::npos);
  // Nothing of it was taken: the lease is as it was.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'leased' AND "
                  "attempt = 1"),
            1);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind <> 'leased'"), 0);
}

// A child whose stderr is not UTF-8 (a stray byte, a character cut short):
// its failure still arrives, with the bytes replaced. (proto3 strings must
// be UTF-8; the raw bytes made FailJob unparseable, so the report was lost
// and the lease expired instead.)
TEST_F(InputFaults, AFailureWhoseStderrIsNotUtf8IsStillReported) {
  const std::string wrapper = dir_ + "/garbled-tailsweep";
  std::ofstream(wrapper) << "#!/bin/sh\ncase \"$*\" in *\"lab train\"*) "
                            "printf '\\377 boom \\342\\202' >&2; exit 1;; "
                            "esac\nexec "
                         << bin_ << "/tailsweep \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  StartCoordinator({"--max-attempts", "1"});
  // A lease that cannot lapse by accident: that the failure arrived, not
  // the lease's expiry, is what the test checks. (Were the report lost, the
  // lease would expire a minute on, and the test fail.)
  StartWorker("w", WithSteadyLease({"--tailsweep-bin", wrapper}));
  SubmitAs("a.yaml", TrainSpec("garbled", "softmax", 20));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'failed'", 1))
      << testing::ReadFile(dir_ + "/w.err");
  EXPECT_EQ(QueryText("SELECT last_error FROM jobs"),
            "exit code 1: \xef\xbf\xbd boom \xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'expired'"), 0);
  const CommandResult logs =
      Cli("logs " + QueryText("SELECT job_id FROM jobs"));
  EXPECT_EQ(logs.out, "\xef\xbf\xbd boom \xef\xbf\xbd\xef\xbf\xbd\n");
}

// A job's error and stderr tail carry terminal escapes (colour, a window
// title, a bell, a C1 CSI): every output of the CLI shows them escaped;
// `logs` keeps the tail's line breaks and tabs.
TEST_F(InputFaults, ControlCharactersNeverReachTheTerminal) {
  StartCoordinator({"--max-attempts", "1"});
  SubmitAs("a.yaml", TrainSpec("escapes", "softmax", 20));
  const std::vector<v1::JobLease> leases = LeaseAs("w", 1);
  ASSERT_EQ(leases.size(), 1u);
  v1::FailJobRequest fail;
  fail.set_worker_id("w");
  fail.set_job_id(leases[0].job_id());
  fail.set_epoch(leases[0].epoch());
  fail.set_error(
      "boom \x1b[31mred\x1b[0m\x07 \xc2\x9b"
      "2J");
  fail.set_stderr_tail("line1\n\x1b]0;pwned\x07line2\tend\n");
  v1::FailJobResponse failed;
  ASSERT_TRUE(Stub().FailJob(Context().get(), fail, &failed).ok());
  for (const char* format : {"table", "csv", "json"}) {
    const CommandResult jobs =
        Cli(absl::StrCat("jobs escapes --format ", format));
    EXPECT_EQ(jobs.exit_code, 0) << format << jobs.err;
    for (const std::string& raw : {"\x1b", "\x07", "\xc2\x9b"}) {
      EXPECT_EQ(jobs.out.find(raw), std::string::npos) << format;
    }
  }
  EXPECT_NE(Cli("jobs escapes")
                .out.find("boom \\x1b[31mred\\x1b[0m\\x07 "
                          "\\xc2\\x9b2J"),
            std::string::npos);
  EXPECT_NE(Cli("jobs escapes --format json").out.find("\\u001b[31mred"),
            std::string::npos);
  const CommandResult logs = Cli("logs " + leases[0].job_id());
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "line1\n\\x1b]0;pwned\\x07line2\tend\n");
  EXPECT_NE(logs.err.find("last error: boom \\x1b[31m"), std::string::npos)
      << logs.err;
  EXPECT_EQ(logs.err.find('\x1b'), std::string::npos);
  // A spec's own text (a key with an escape) comes back escaped as well.
  const std::string path = dir_ + "/evil.yaml";
  std::ofstream(path) << "name: evil\n\"\\e[31mred\": 1\ngrid:\n  kernel: "
                         "[log]\n";
  const CommandResult submit = Cli("submit " + path);
  EXPECT_EQ(submit.exit_code, 2);
  EXPECT_NE(submit.err.find("unknown top-level key '\\x1b[31mred'"),
            std::string::npos)
      << submit.err;
  EXPECT_EQ(submit.err.find('\x1b'), std::string::npos);
}

// The CLI reads a 100k-job sweep: `jobs` and `results` page through
// ListJobs and GetResults, no answer near the 4 MiB receive limit. The
// store is filled through its own API (and results through SQL), then a
// real coordinator serves it.
TEST_F(InputFaults, TheCliReadsA100kJobSweepPageByPage) {
  constexpr int kJobs = 100000;
  {
    SystemClock clock;
    auto store = Store::Open(dir_ + "/db", &clock);
    ASSERT_TRUE(store.ok()) << store.status();
    SweepSpec spec;
    spec.name = "big";
    std::vector<std::string> seeds;
    for (int i = 0; i < kJobs; ++i) seeds.push_back(absl::StrCat(i));
    spec.grid = {{"seed", seeds}};
    spec.fixed = {{"steps", "20"}, {"warmup", "2"}};
    auto jobs = ExpandSweep(spec);
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    auto added = (*store)->SubmitSweep(spec, *jobs);
    ASSERT_TRUE(added.ok()) << added.status();
    ASSERT_EQ(added->added, kJobs);
  }
  const std::string result = testing::TestResult(
      R"({"ratio_median": 0.75, "ratio_mean": 0.8, "ratio_ci_low": 0.5,
          "ratio_ci_high": 0.875})");
  std::ofstream(dir_ + "/fill.sql")
      << "UPDATE jobs SET state = 'done'; INSERT INTO results (job_id, "
         "result, completed_ms) SELECT job_id, '"
      << result << "', 0 FROM jobs;\n";
  const CommandResult filled =
      RunCommand("sqlite3 " + dir_ + "/db '.read " + dir_ + "/fill.sql'");
  ASSERT_EQ(filled.exit_code, 0) << filled.err;
  ASSERT_EQ(Query("SELECT COUNT(*) FROM results"), kJobs);
  StartCoordinator();
  ASSERT_TRUE(
      testing::WaitUntil([&] { return Cli("status big").exit_code == 0; }));

  auto timed = [&](const std::string& args) {
    const auto start = std::chrono::steady_clock::now();
    CommandResult r = Cli(args);
    std::fprintf(
        stderr, "tailsweep %s: %.1f s, %zu bytes\n", args.c_str(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count(),
        r.out.size());
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    return r;
  };
  const CommandResult csv = timed("jobs big --format csv");
  EXPECT_EQ(Count(csv.out, "\r\n"), kJobs + 1u);  // with the header
  EXPECT_NE(csv.out.find(",seed=99999,done,"), std::string::npos);
  EXPECT_EQ(Count(timed("jobs big --state done").out, "\n"), kJobs + 1u);
  const CommandResult per_seed = timed("results big --per-seed --format csv");
  EXPECT_EQ(Count(per_seed.out, "\r\n"), kJobs + 1u);
  // Grid order across pages: seed 0 first, seed 99999 last.
  const std::vector<std::string> records =
      absl::StrSplit(per_seed.out, "\r\n", absl::SkipEmpty());
  ASSERT_EQ(records.size(), kJobs + 1u);
  EXPECT_EQ(records[1].substr(0, 17), "0,1,1,0,0.75,0.8,");
  EXPECT_EQ(records.back().substr(0, 21), "99999,1,1,0,0.75,0.8,");
  const CommandResult over_seeds = timed("results big --format csv");
  EXPECT_NE(over_seeds.out.find("100000,100000,0,0.75,"), std::string::npos)
      << over_seeds.out;
  EXPECT_NE(timed("status big").out.find("100000 done"), std::string::npos);
}

}  // namespace
}  // namespace tailsweep
