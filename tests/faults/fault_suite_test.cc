// The fault-injection suite: real coordinator, workers and jobs on loopback,
// and the faults sweep tools meet in production: kill -9 of a worker or of
// the coordinator at random moments, a network partition shorter and longer
// than the lease, a job that always crashes. Each test states what must
// hold, and waits for events, never for a guessed time (fault_fixture.h).
// Rounds: short by default (CTest); `fault_test --long` runs 20.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/faults/fault_fixture.h"

namespace tailsweep {
namespace {

using testing::RunCommand;

TEST_F(FaultSuite, WorkerKilledAtRandomStepsResumesFromCheckpoints) {
  // Every kill costs an attempt (the lease expires): allow them all.
  StartCoordinator({"--max-attempts", "50"});
  // Each round kills its worker at a random step of its attempts: once one
  // of them has stored a checkpoint and logged 1 to most_per_round points
  // past where it resumed. Together the rounds take at most half of a
  // job's points, so each kill lands in a running job, however fast or
  // slowly the machine trains: the moment is counted in steps, not seconds.
  const int steps = 200 * rounds;  // 600, or 4000 with --long
  const int most_per_round = steps / 5 / (2 * rounds);
  Submit(Spec("kill_worker", steps));
  for (int round = 0; round < rounds; ++round) {
    ChildProcess& worker = StartWorker(absl::StrCat("w", round));
    const int64_t kill_at = 1 + static_cast<int64_t>(rng_() % most_per_round);
    // (Every job done first cannot happen, as above; were it to, the test
    // would not wait out the deadline for a job to kill.)
    ASSERT_TRUE(WaitFor(
        absl::StrCat(
            "SELECT (SELECT COUNT(*) FROM jobs WHERE state = 'done') = 2 OR "
            "EXISTS (SELECT 1 FROM jobs j WHERE j.state = 'leased' AND ",
            IsWorker("j.holder", worker),
            " AND EXISTS (SELECT 1 FROM checkpoints c WHERE c.job_id = "
            "j.job_id AND c.epoch = j.epoch) AND (SELECT COUNT(*) FROM "
            "metrics m WHERE m.job_id = j.job_id AND m.name = 'loss' AND "
            "m.epoch = j.epoch) >= ",
            kill_at, ")"),
        1));
    if (Query("SELECT COUNT(*) FROM jobs WHERE state = 'done'") == 2) break;
    worker.Signal(SIGKILL);  // its jobs die with it
    ASSERT_TRUE(Reaped(worker));
  }
  StartWorker("last");
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2));
  EXPECT_GE(Query("SELECT MAX(attempt) FROM jobs"), 2);
  // Resumed from a checkpoint, not from scratch.
  EXPECT_GE(Query("SELECT COUNT(*) FROM results WHERE "
                  "json_extract(result, '$.resumed_from_step') >= 10"),
            1);
  ExpectEveryPointOnce(2, steps / 5);
  ExpectResultsEqualCleanRuns();
}

TEST_F(FaultSuite, CoordinatorKilledAtRandomMomentsLosesNothing) {
  ChildProcess* coordinator = &StartCoordinator();
  StartWorker("w");
  // A point every step: many small transactions, so kills land inside them.
  const int steps = 100 * rounds;
  Submit(Spec("kill_coordinator", steps, 4, 1));
  int64_t done_before = 0, points_before = 0;
  for (int round = 0; round < rounds; ++round) {
    // Each kill hits a coordinator that takes points: it has taken one
    // since it (re)started (unless every job is done), then at a random
    // moment within 2 s.
    ASSERT_TRUE(
        WaitFor(absl::StrCat(
                    "SELECT (SELECT COUNT(*) FROM metrics) > ", points_before,
                    " OR (SELECT COUNT(*) FROM jobs WHERE state = 'done') = 4"),
                1));
    std::this_thread::sleep_for(std::chrono::milliseconds(rng_() % 2000));
    coordinator->Signal(SIGKILL);
    ASSERT_TRUE(Reaped(*coordinator));
    const testing::CommandResult check =
        RunCommand("sqlite3 " + dir_ + "/db \"PRAGMA integrity_check\"");
    EXPECT_EQ(check.out, "ok\n") << "round " << round;
    // No acknowledged completion is ever lost.
    const int64_t done =
        Query("SELECT COUNT(*) FROM jobs WHERE state = 'done'");
    EXPECT_GE(done, done_before);
    EXPECT_EQ(Query("SELECT COUNT(*) FROM results"), done);
    done_before = done;
    points_before = Query("SELECT COUNT(*) FROM metrics");
    coordinator = &StartCoordinator();
  }
  // The same worker carries on without help.
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 4));
  ExpectEveryPointOnce(4, steps);
  EXPECT_EQ(
      testing::RunCommand("sqlite3 " + dir_ + "/db \"PRAGMA integrity_check\"")
          .out,
      "ok\n");
}

TEST_F(PartitionTest, ShorterThanTheLeaseLosesAndReassignsNothing) {
  StartCoordinator();
  // A lease of 20 s: the partition below lasts about a call's timeout
  // (1 s), so no load a test machine sees stretches it, or the renewal
  // after it, past the lease (what would expire it and fail the test).
  StartWorker("far", {"--lease-ms", "20000", "--rpc-timeout-ms", "1000"},
              ProxyAddress());
  Submit(Spec("short_partition", 1000));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'leased'", 2));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) > 10 FROM metrics", 1));
  // Cut off until the worker has lost the coordinator: a call of it timed
  // out in the partition, and it said so (worker/coordinator_client.cc).
  constexpr char kLost[] = "coordinator unreachable";
  const int64_t lost = LogCount("far", kLost);
  proxy_->Set(testing::FaultProxy::Mode::kStall);
  ASSERT_TRUE(WaitForLogCount("far", kLost, lost))
      << testing::ReadFile(dir_ + "/far.err");
  proxy_->Set(testing::FaultProxy::Mode::kPass);
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2));
  // Nothing expired, moved or went missing.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'expired'"), 0);
  EXPECT_EQ(Query("SELECT MAX(c) FROM (SELECT COUNT(*) c FROM events WHERE "
                  "kind = 'leased' GROUP BY job_id)"),
            1);
  ExpectEveryPointOnce(2, 1000 / 5);
}

TEST_F(PartitionTest, LongerThanTheLeaseReassignsEachJobExactlyOnce) {
  StartCoordinator();
  ChildProcess& far =
      StartWorker("far", {"--lease-ms", "4000", "--rpc-timeout-ms", "1000"},
                  ProxyAddress());
  Submit(Spec("long_partition", 1000));
  ASSERT_TRUE(WaitFor(absl::StrCat("SELECT COUNT(*) FROM jobs WHERE state = "
                                   "'leased' AND ",
                                   IsWorker("holder", far)),
                      2));
  // What the partition does is counted from here (a lease of the far
  // worker lapsing before it, under load, is not the partition's doing).
  const int64_t before = Query("SELECT MAX(event_id) FROM events");
  constexpr char kLost[] = "coordinator unreachable";
  const int64_t lost = LogCount("far", kLost);
  // Idle until the far worker's leases expire. Its own must not lapse: its
  // leases are counted below.
  ChildProcess& near = StartWorker("near", WithSteadyLease());
  // Cut off while the far worker's jobs run, with most of their steps left.
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) > 10 FROM metrics", 1));
  proxy_->Set(testing::FaultProxy::Mode::kStall);
  // The far worker lost the coordinator (its renewals time out), and both
  // jobs are the near worker's (the far worker's leases expired).
  ASSERT_TRUE(WaitForLogCount("far", kLost, lost))
      << testing::ReadFile(dir_ + "/far.err");
  ASSERT_TRUE(WaitFor(absl::StrCat("SELECT COUNT(*) FROM jobs WHERE state = "
                                   "'leased' AND ",
                                   IsWorker("holder", near)),
                      2));
  proxy_->Set(testing::FaultProxy::Mode::kPass);  // the far worker is back
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2));
  // Reassigned exactly once: one lease of each job since the partition, the
  // near worker's, which finished it.
  EXPECT_EQ(Query(absl::StrCat("SELECT COUNT(*) FROM events WHERE kind = "
                               "'leased' AND event_id > ",
                               before)),
            2);
  EXPECT_EQ(Query(absl::StrCat("SELECT COUNT(DISTINCT job_id) FROM events "
                               "WHERE kind = 'leased' AND event_id > ",
                               before, " AND ", IsWorker("detail", near))),
            2);
  EXPECT_EQ(Query(absl::StrCat(
                "SELECT COUNT(*) FROM events d JOIN events l ON l.job_id = "
                "d.job_id AND l.epoch = d.epoch AND l.kind = 'leased' WHERE "
                "d.kind = 'done' AND ",
                IsWorker("l.detail", near))),
            2);
  ExpectEveryPointOnce(2, 1000 / 5);
  // The far worker stopped its fenced attempts once it heard back.
  EXPECT_TRUE(testing::WaitUntil(
      [&] { return ProcessesMentioning(WorkDir("far") + "/") == 0; }));
}

TEST_F(FaultSuite, AJobThatAlwaysCrashesFailsAfterTheLimitAndStallsNothing) {
  // A tailsweep that crashes for the softmax cell and works for the others.
  const std::string wrapper = dir_ + "/crashy-tailsweep";
  std::ofstream(wrapper) << "#!/bin/sh\ncase \"$*\" in *kernel=softmax*) "
                            "echo 'segfault in softmax (injected)' >&2; exit "
                            "139;; esac\nexec "
                         << bin_ << "/tailsweep-lab \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  StartCoordinator({"--max-attempts", "3"});
  // Its leases must not lapse: a lapse would count an attempt too.
  StartWorker("w", WithSteadyLease({"--tailsweep-bin", wrapper}));
  Submit(Spec("crashy", 40, 3));
  ASSERT_TRUE(WaitFor(
      "SELECT COUNT(*) FROM jobs WHERE state IN ('done', 'failed')", 3));
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'done'"), 2);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'failed' AND "
                  "attempt = 3 AND last_error LIKE '%segfault in softmax%'"),
            1);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'failed'"), 3);
  // Capped exponential backoff: 1 s after the first failure, 2 s after the
  // second, before the job is leased again.
  const testing::CommandResult times = RunCommand(
      "sqlite3 " + dir_ +
      "/db \"SELECT kind, at_ms FROM events WHERE job_id = (SELECT job_id "
      "FROM jobs WHERE state = 'failed') ORDER BY event_id\"");
  std::istringstream lines(times.out);
  std::string line;
  std::vector<std::pair<std::string, int64_t>> events;
  while (std::getline(lines, line)) {
    const size_t bar = line.find('|');
    events.emplace_back(line.substr(0, bar), std::stoll(line.substr(bar + 1)));
  }
  ASSERT_EQ(events.size(), 6u) << times.out;  // leased, failed x 3
  EXPECT_GE(events[2].second - events[1].second, 1000);
  EXPECT_GE(events[4].second - events[3].second, 2000);
}

TEST_F(FaultSuite,
       SigtermCheckpointsReleasesAsPreemptedAndAnotherWorkerResumes) {
  StartCoordinator();
  // Leases that cannot lapse by accident: the test counts attempts, and
  // asserts that none expired.
  ChildProcess& first = StartWorker("first", WithSteadyLease());
  Submit(Spec("preempt", 400, 4));
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM metrics WHERE name = 'loss' AND "
              "step = 20",
              2));
  first.Signal(SIGTERM);  // what Slurm sends
  ASSERT_TRUE(Reaped(first));
  EXPECT_EQ(*first.Poll(), 0);
  // Within the worker's grace period (30 s; Slurm's KillWait is 30 s too):
  // had it run out, the worker would have said so (worker/worker.cc) and
  // left the leases to expire.
  EXPECT_EQ(LogCount("first", "grace period over"), 0)
      << testing::ReadFile(dir_ + "/first.err");
  // Released at once, not expired, and the attempt is not counted.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'preempted'"), 2);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'expired'"), 0);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'queued'"), 4);
  EXPECT_EQ(Query("SELECT MAX(attempt) FROM jobs"), 0);
  StartWorker("second", WithSteadyLease());
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 4));
  EXPECT_EQ(Query("SELECT MAX(attempt) FROM jobs"), 1);
  ExpectEveryPointOnce(4, 400 / 5);
  // The two preempted jobs went on from the checkpoints their SIGTERM
  // wrote, uploaded before the leases were given back.
  int resumed = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(WorkDir("second"))) {
    const std::string path = entry.path().string() + "/result.json";
    if (!std::filesystem::exists(path)) continue;
    const nlohmann::json r = nlohmann::json::parse(testing::ReadFile(path));
    if (r["resumed_from_step"].get<int64_t>() >= 20) ++resumed;
  }
  EXPECT_EQ(resumed, 2);
}

// A frozen worker daemon: lease_faults_test.cc (FrozenOrCutOff).

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--long") == 0) tailsweep::rounds = 20;
    if (std::strcmp(argv[i], "--soak") == 0 && i + 1 < argc) {
      tailsweep::soak_minutes = std::atof(argv[++i]);
    }
  }
  return RUN_ALL_TESTS();
}
