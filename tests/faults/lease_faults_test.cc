// Leases under faults (system.md, "Leases and fencing"): the coordinator's
// absence never expires a lease, a cell never runs twice at once, and a
// lost reply strands nothing. Real coordinator, workers and jobs on
// loopback; a worker whose leases are to lapse has a short one (4 s, 8 s),
// one whose leases must not a minute (WithSteadyLease); the coordinator's
// grace is 1 s.

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/faults/fault_fixture.h"

namespace tailsweep {
namespace {

constexpr int kLeaseMs = 4000;  // of a worker whose leases are to expire

class LeaseFaults : public PartitionTest {
 protected:
  // Every job done once, by one attempt, each with its steps / 5 loss
  // points exactly once, and nothing expired.
  void ExpectDoneOnceNothingExpired(int64_t jobs) {
    EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'done'"), jobs);
    EXPECT_EQ(Query("SELECT COUNT(*) FROM results"), jobs);
    EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'done'"), jobs);
    EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'expired'"), 0)
        << testing::ReadFile(dir_ + "/coordinator.err") << "\n"
        << RunCommand("sqlite3 " + dir_ + "/db \"SELECT * FROM events\"").out;
    EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'failed'"), 0);
    EXPECT_EQ(Query("SELECT MAX(attempt) FROM jobs"), 1);
    EXPECT_EQ(Query("SELECT COUNT(*) FROM (SELECT j.job_id FROM jobs j LEFT "
                    "JOIN metrics m ON m.job_id = j.job_id AND m.name = "
                    "'loss' GROUP BY j.job_id HAVING COUNT(m.step) != "
                    "CAST(json_extract(j.params, '$.steps') AS INTEGER) / 5)"),
              0);
  }
};

// A short job (it finishes while the coordinator is away) and a long one.
std::string TwoLengths(const std::string& name) {
  return TinySpec(name, "  steps: [300, 3000]\n", {});
}

// Behaviour 1: the coordinator's absence never expires a lease. Down for
// twice the lease (kill -9, or SIGSTOP): no lease expires, no attempt is
// counted, the result that finished meanwhile arrives, each job is done
// once. (The workers' jobs stop themselves when they cannot renew, and
// are given back and resumed when it is back.)
class CoordinatorAbsence : public LeaseFaults,
                           public ::testing::WithParamInterface<bool> {};

TEST_P(CoordinatorAbsence, ExpiresNoLeaseAndLosesNoResult) {
  const bool killed = GetParam();
  constexpr int kAbsenceLeaseMs = 8000;
  // The short job must finish while the coordinator is away, before its
  // lease runs out on the worker. Timed by its steps, that was a race with
  // the machine's speed (under ctest -j2 the short job once outlived the
  // lease). So it trains to its end first, while the coordinator is there,
  // and its process then waits at a gate that opens once the coordinator
  // is gone: what is left inside the lease is a shell seeing a file and the
  // worker's next round, against the two thirds of the lease (5 s) that at
  // least remain of it, however slowly the machine trains.
  const std::string trained = dir_ + "/short-trained", gate = dir_ + "/gate";
  const std::string wrapper = dir_ + "/gated-tailsweep";
  std::ofstream(wrapper) << "#!/bin/sh\ncase \" $* \" in *\" steps=300 \"*) '"
                         << bin_ << "/tailsweep' \"$@\"; code=$?; touch '"
                         << trained << "'; while [ ! -e '" << gate
                         << "' ]; do sleep 0.05; done; exit $code;; esac\n"
                         << "exec '" << bin_ << "/tailsweep' \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  ChildProcess* coordinator = &StartCoordinator();
  StartWorker("w", {"--lease-ms", absl::StrCat(kAbsenceLeaseMs),
                    "--rpc-timeout-ms", "1000", "--tailsweep-bin", wrapper});
  Submit(TwoLengths(killed ? "absent_killed" : "absent_stopped"));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'leased'", 2));
  ASSERT_TRUE(testing::WaitUntil([&] {
    return std::filesystem::exists(trained);
  })) << testing::ReadFile(dir_ + "/w.err");
  // The short job, held at the gate (not finished, not reported).
  const std::string short_job = QueryText(
      "SELECT job_id FROM jobs WHERE "
      "CAST(json_extract(params, '$.steps') AS INTEGER) = 300");
  ASSERT_EQ(short_job.size(), 64u);
  // The worker logs "job ID12 epoch E finished" (worker/worker.cc,
  // Worker::Exited).
  const std::string finished = absl::StrCat(
      "job ", short_job.substr(0, 12), " epoch ",
      Query("SELECT epoch FROM jobs WHERE job_id = '" + short_job + "'"),
      " finished");
  const auto away = std::chrono::steady_clock::now();
  if (killed) {
    coordinator->Signal(SIGKILL);
    ASSERT_TRUE(Reaped(*coordinator));
  } else {
    kill(coordinator->pid(), SIGSTOP);
  }
  std::ofstream(gate).flush();
  // The short job finished while the coordinator was away.
  EXPECT_TRUE(WaitForLog("w", finished)) << testing::ReadFile(dir_ + "/w.err");
  // The absence itself (the fault, not a wait for anything): twice the
  // lease from its start, longer than any lease granted before it could
  // last past its last renewal, the grace (1 s) included.
  std::this_thread::sleep_until(away +
                                std::chrono::milliseconds(2 * kAbsenceLeaseMs));
  if (killed) {
    StartCoordinator();
  } else {
    kill(coordinator->pid(), SIGCONT);
  }
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2))
      << testing::ReadFile(dir_ + "/w.err");
  ExpectDoneOnceNothingExpired(2);
}

INSTANTIATE_TEST_SUITE_P(KilledOrStopped, CoordinatorAbsence, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "Killed" : "Stopped";
                         });

// Behaviour 2: a cell never runs twice at once. A worker daemon frozen
// (SIGSTOP: its children run on) or cut off (a partition) until its jobs
// run on another worker: its jobs stop themselves before the coordinator
// leases them to the other; sampled every 100 ms, never two live runs of
// one job, also once it is back.
class FrozenOrCutOff : public LeaseFaults,
                       public ::testing::WithParamInterface<bool> {};

TEST_P(FrozenOrCutOff, NeverRunsACellTwiceAtOnce) {
  const bool frozen = GetParam();
  // The grace must cover a job's stopping: its last step, its checkpoint
  // and result written (fsync) on a machine as loaded as CI's. That is
  // what this test is about: a run of the far worker outliving it is the
  // failure it looks for.
  StartCoordinator({"--lease-grace-ms", "3000"});
  ChildProcess& far = StartWorker(
      "far", {"--lease-ms", absl::StrCat(kLeaseMs), "--rpc-timeout-ms", "1000"},
      frozen ? "" : ProxyAddress());
  Submit(Spec(frozen ? "frozen" : "cut_off", 2000, 2));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'leased'", 2));
  ASSERT_TRUE(WaitFor("SELECT COUNT(DISTINCT job_id) FROM metrics", 2));
  LiveRunSampler sampler(dir_ + "/", JobIds());
  // The sampler sees the far worker's runs.
  ASSERT_TRUE(testing::WaitUntil([&] { return sampler.most() >= 1; }))
      << sampler.twice();
  // Idle until the far worker's leases expire; its own must not lapse (the
  // epochs of its leases are counted below).
  ChildProcess& near = StartWorker("near", WithSteadyLease());
  if (frozen) {
    kill(far.pid(), SIGSTOP);
  } else {
    proxy_->Set(testing::FaultProxy::Mode::kStall);
  }
  // Both jobs run on the near worker (the far worker's leases expired):
  // each has sent points under the near worker's lease. Then the far one
  // comes back while they run.
  ASSERT_TRUE(WaitFor(
      absl::StrCat("SELECT COUNT(DISTINCT m.job_id) FROM metrics m JOIN "
                   "events l ON l.job_id = m.job_id AND l.epoch = m.epoch "
                   "AND l.kind = 'leased' WHERE ",
                   IsWorker("l.detail", near)),
      2))
      << testing::ReadFile(dir_ + "/near.err");
  // Sampled across the handover, not only before it.
  ASSERT_TRUE(sampler.WaitForAFreshSample());
  if (frozen) {
    kill(far.pid(), SIGCONT);
  } else {
    proxy_->Set(testing::FaultProxy::Mode::kPass);
  }
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2));
  // The far worker's runs stopped themselves (the lease watchdog) or were
  // stopped by it once it was back.
  EXPECT_TRUE(testing::WaitUntil(
      [&] { return ProcessesMentioning(WorkDir("far") + "/") == 0; }));
  sampler.Stop();
  EXPECT_EQ(sampler.most(), 1) << sampler.twice() << "\n"
                               << testing::ReadFile(dir_ + "/far.err") << "\n"
                               << testing::ReadFile(dir_ + "/near.err");
  // The near worker finished each job, once.
  EXPECT_EQ(Query(absl::StrCat(
                "SELECT COUNT(*) FROM events d JOIN events l ON l.job_id = "
                "d.job_id AND l.epoch = d.epoch AND l.kind = 'leased' WHERE "
                "d.kind = 'done' AND ",
                IsWorker("l.detail", near))),
            2);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM results"), 2);
  ExpectEveryPointOnce(2, 2000 / 5);
}

INSTANTIATE_TEST_SUITE_P(DaemonFrozenOrPartitioned, FrozenOrCutOff,
                         ::testing::Bool(), [](const auto& info) {
                           return info.param ? "Frozen" : "CutOff";
                         });

// Behaviour 3: a lost reply strands nothing. Replies are dropped while jobs
// are queued, until the worker has given up on the call that leased them:
// the coordinator leases them to the worker, which never hears it and asks
// again with the same request id until it does. With one attempt allowed,
// nothing fails and no attempt is burned.
TEST_F(LeaseFaults, LostLeaseRepliesStrandNoJob) {
  StartCoordinator({"--max-attempts", "1"});
  // A lease of a minute: the test counts leases and attempts, and is about
  // lost answers, not lapses (a lease that did lapse would be leased again
  // and counted).
  StartWorker("far",
              WithSteadyLease({"--rpc-timeout-ms", "500", "--poll-ms", "3000"}),
              ProxyAddress());
  // Its connection must be up before replies are dropped: the proxy drops
  // every byte from the coordinator, the HTTP/2 handshake's too, and a
  // worker that never connected would never send a lease call at all.
  ASSERT_TRUE(testing::WaitUntil([&] { return LastPollMs() >= 0; }))
      << "the worker never called";
  proxy_->Set(testing::FaultProxy::Mode::kDropReplies);
  Submit(Spec("lost_replies", 300, 2));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'leased'", 2));
  // The worker's lease calls time out while replies are dropped, each
  // logged (worker/coordinator_client.cc, CoordinatorClient::Answered). The
  // call that leased the jobs has been sent by now: the next line logged is
  // its own or a later call's, either way after its answer was lost.
  constexpr char kLost[] = "lease: coordinator unreachable";
  ASSERT_TRUE(WaitForLogCount("far", kLost, LogCount("far", kLost)))
      << testing::ReadFile(dir_ + "/far.err");
  // Leased, yet the worker cannot have heard of it (no reply reaches it):
  // nothing runs.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM metrics"), 0);
  proxy_->Set(testing::FaultProxy::Mode::kPass);
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2))
      << testing::ReadFile(dir_ + "/far.err");
  ExpectDoneOnceNothingExpired(2);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'leased'"), 2);
}

// Behaviour 5: one run per stored curve. A worker is killed (-9, with its
// jobs) after its jobs checkpointed; another worker with twice the threads
// resumes them. The stored points past each resume step are the second
// attempt's own, not a splice of two runs.
TEST_F(LeaseFaults, AResumedJobsCurveIsTheResumingAttempts) {
  StartCoordinator();
  ChildProcess& first = StartWorker("first", {"--lease-ms", "4000"});
  Submit(Spec("one_curve", 800, 2));
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(DISTINCT job_id) FROM metrics WHERE "
              "name = 'loss' AND step >= 100",
              2));
  // Killed once the first attempt's points reach past a stored checkpoint
  // (the one the next attempt resumes from): those are what must not stay
  // in the curve. (A checkpoint is uploaded after the points before it are
  // acknowledged, so right after step 100 arrives there may be none yet.)
  const std::string past_checkpoint =
      "SELECT COUNT(*) > 0 FROM metrics m JOIN checkpoints c USING "
      "(job_id) WHERE m.name = 'loss' AND m.step > c.step";
  ASSERT_TRUE(WaitFor(past_checkpoint, 1));
  RunCommand(absl::StrCat("pkill -9 -P ", first.pid()));
  first.Signal(SIGKILL);
  // Its leases must not lapse: the epochs of the done events are counted.
  StartWorker("second", WithSteadyLease({"--threads-per-slot", "2"}));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2));
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'done' AND "
                  "epoch = 2"),
            2);
  ExpectStoredCurvesAreTheFinalAttempts({"first", "second"});
}

}  // namespace
}  // namespace tailsweep
