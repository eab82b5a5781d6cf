// Leases under faults (system.md, "Leases and fencing"): the coordinator's
// absence never expires a lease, a cell never runs twice at once, and a
// lost reply strands nothing. Real coordinator, workers and jobs on
// loopback; the worker's lease is 4 s, the coordinator's grace 1 s.

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/faults/fault_fixture.h"

namespace tailsweep {
namespace {

constexpr int kLeaseMs = 4000;  // the cluster's worker default

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
  // A longer lease than the other tests': the short job must finish while
  // the coordinator is away, before its lease runs out on the worker, even
  // on a loaded machine.
  constexpr int kAbsenceLeaseMs = 8000;
  ChildProcess* coordinator = &StartCoordinator();
  StartWorker("w", {"--lease-ms", absl::StrCat(kAbsenceLeaseMs)});
  Submit(TwoLengths(killed ? "absent_killed" : "absent_stopped"));
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'leased'", 2, 60));
  ASSERT_TRUE(WaitFor("SELECT COUNT(DISTINCT job_id) FROM metrics", 2, 60));
  // The short job half done: what is left of it takes a fraction of the
  // lease even on a loaded machine (from its first steps, under ctest -j2,
  // it once took longer than the lease, and the worker stopped it as its
  // lease ran out there).
  ASSERT_TRUE(WaitFor(
      "SELECT MAX(m.step) >= 150 FROM metrics m JOIN jobs j ON j.job_id = "
      "m.job_id WHERE m.name = 'loss' AND "
      "CAST(json_extract(j.params, '$.steps') AS INTEGER) = 300",
      1, 120));
  ASSERT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'done'"), 0);
  if (killed) {
    coordinator->Signal(SIGKILL);
    while (!coordinator->Poll()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  } else {
    kill(coordinator->pid(), SIGSTOP);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2 * kAbsenceLeaseMs));
  // The short job finished while the coordinator was away.
  int finished = 0;
  for (const auto& entry : std::filesystem::directory_iterator(WorkDir("w"))) {
    finished += std::filesystem::exists(entry.path() / "result.json") &&
                testing::ReadFile((entry.path() / "result.json").string())
                        .find("\"stopped\": false") != std::string::npos;
  }
  EXPECT_GE(finished, 1);
  if (killed) {
    StartCoordinator();
  } else {
    kill(coordinator->pid(), SIGCONT);
  }
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2, 300))
      << testing::ReadFile(dir_ + "/w.err");
  ExpectDoneOnceNothingExpired(2);
}

INSTANTIATE_TEST_SUITE_P(KilledOrStopped, CoordinatorAbsence, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "Killed" : "Stopped";
                         });

// Behaviour 2: a cell never runs twice at once. A worker daemon frozen
// (SIGSTOP: its children run on) or cut off (a partition) for twice the
// lease: its jobs stop themselves before the coordinator leases them to
// another worker; sampled every 100 ms, never two live runs of one job.
class FrozenOrCutOff : public LeaseFaults,
                       public ::testing::WithParamInterface<bool> {};

TEST_P(FrozenOrCutOff, NeverRunsACellTwiceAtOnce) {
  const bool frozen = GetParam();
  // The grace must cover a job's stopping: its last step, its checkpoint
  // and result written (fsync) on a machine as loaded as CI's.
  StartCoordinator({"--lease-grace-ms", "3000"});
  ChildProcess& far = StartWorker("far", {"--rpc-timeout-ms", "1000"},
                                  frozen ? "" : ProxyAddress());
  Submit(Spec(frozen ? "frozen" : "cut_off", 4000, 2));
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'leased'", 2, 60));
  ASSERT_TRUE(WaitFor("SELECT COUNT(DISTINCT job_id) FROM metrics", 2, 60));
  LiveRunSampler sampler(dir_ + "/", JobIds());
  StartWorker("near");  // idle until the far worker's leases expire
  if (frozen) {
    kill(far.pid(), SIGSTOP);
  } else {
    proxy_->Set(testing::FaultProxy::Mode::kStall);
  }
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM events WHERE kind = 'expired'", 2, 60));
  ASSERT_TRUE(WaitFor(
      "SELECT COUNT(*) FROM jobs WHERE state = 'leased' AND epoch = 2", 2, 60));
  std::this_thread::sleep_for(std::chrono::milliseconds(2 * kLeaseMs));
  if (frozen) {
    kill(far.pid(), SIGCONT);
  } else {
    proxy_->Set(testing::FaultProxy::Mode::kPass);
  }
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2, 600));
  sampler.Stop();
  EXPECT_GT(sampler.samples(), 100);
  EXPECT_EQ(sampler.most(), 1) << sampler.twice() << "\n"
                               << testing::ReadFile(dir_ + "/far.err") << "\n"
                               << testing::ReadFile(dir_ + "/near.err");
  // The far worker's runs stopped themselves (the lease watchdog) or were
  // stopped by it; the near worker finished each job, once.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'done' AND "
                  "epoch = 2"),
            2);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM results"), 2);
  ExpectEveryPointOnce(2, 4000 / 5);
  EXPECT_EQ(ProcessesMentioning(WorkDir("far") + "/"), 0);
}

INSTANTIATE_TEST_SUITE_P(DaemonFrozenOrPartitioned, FrozenOrCutOff,
                         ::testing::Bool(), [](const auto& info) {
                           return info.param ? "Frozen" : "CutOff";
                         });

// Behaviour 3: a lost reply strands nothing. Replies are dropped for 2 s
// while jobs are queued: the coordinator leases them to the worker, which
// never hears it and asks again with the same request id until it does.
// With one attempt allowed, nothing fails and no attempt is burned. (The
// worker polls every 3 s, so the jobs are queued before its next call.)
TEST_F(LeaseFaults, LostLeaseRepliesStrandNoJob) {
  StartCoordinator({"--max-attempts", "1"});
  StartWorker(
      "far",
      {"--rpc-timeout-ms", "500", "--poll-ms", "3000", "--lease-ms", "8000"},
      ProxyAddress());
  // When the coordinator last heard from the worker (idle polls are kept
  // in memory: ask the service, not the file).
  auto last_seen = [&] {
    const nlohmann::json doc =
        nlohmann::json::parse(Cli("workers --format json").out, nullptr, false);
    int64_t at = -1;
    if (!doc.is_array()) return at;
    for (const auto& w : doc)
      at = std::max(at, w["last_seen_ms"].get<int64_t>());
    return at;
  };
  int64_t seen = -1;
  for (int i = 0; i < 300 && seen < 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    seen = last_seen();
  }
  ASSERT_GE(seen, 0) << "the worker never called";
  // Right after one of its calls, so the next comes ~3 s later.
  for (int i = 0; i < 100 && last_seen() == seen; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  proxy_->Set(testing::FaultProxy::Mode::kDropReplies);
  Submit(Spec("lost_replies", 300, 2));
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'leased'", 2, 60));
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  // Leased, yet the worker has not heard of it: nothing runs.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM metrics"), 0);
  proxy_->Set(testing::FaultProxy::Mode::kPass);
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2, 120))
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
  ChildProcess& first = StartWorker("first");
  Submit(Spec("one_curve", 1500, 2));
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(DISTINCT job_id) FROM metrics WHERE "
              "name = 'loss' AND step >= 100",
              2, 120));
  // Killed once the first attempt's points reach past a stored checkpoint
  // (the one the next attempt resumes from): those are what must not stay
  // in the curve. (A checkpoint is uploaded after the points before it are
  // acknowledged, so right after step 100 arrives there may be none yet.)
  const std::string past_checkpoint =
      "SELECT COUNT(*) > 0 FROM metrics m JOIN checkpoints c USING "
      "(job_id) WHERE m.name = 'loss' AND m.step > c.step";
  ASSERT_TRUE(WaitFor(past_checkpoint, 1, 120));
  RunCommand(absl::StrCat("pkill -9 -P ", first.pid()));
  first.Signal(SIGKILL);
  StartWorker("second", {"--threads-per-slot", "2"});
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2, 300));
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'done' AND "
                  "epoch = 2"),
            2);
  ExpectStoredCurvesAreTheFinalAttempts({"first", "second"});
}

}  // namespace
}  // namespace tailsweep
