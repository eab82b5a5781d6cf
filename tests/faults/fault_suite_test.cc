// The fault-injection suite: real coordinator, workers and jobs on loopback,
// and the faults sweep tools meet in production: kill -9 of a worker or of
// the coordinator at random moments, a network partition shorter and longer
// than the lease, a job that always crashes. Each test states what must
// hold. Rounds: short by default (CTest); `fault_test --long` runs 20.

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
  // Long enough that every round kills a running job: a step of this tiny
  // model takes about 4 ms here, so a job lasts 6 s, past the longest wait
  // (3 s) of a round.
  const int steps = 1500 + 150 * (rounds - 3);
  Submit(Spec("kill_worker", steps));
  for (int round = 0; round < rounds; ++round) {
    ChildProcess& worker = StartWorker(absl::StrCat("w", round));
    // Let it run 0.5-3 s past its start, then kill -9 (its jobs die too).
    const int64_t points = Query("SELECT COUNT(*) FROM metrics");
    ASSERT_TRUE(WaitFor(
        absl::StrCat("SELECT COUNT(*) > ", points, " FROM metrics"), 1, 120));
    std::this_thread::sleep_for(std::chrono::milliseconds(500 + rng_() % 2500));
    if (Query("SELECT COUNT(*) FROM jobs WHERE state = 'done'") == 2) break;
    worker.Signal(SIGKILL);
  }
  StartWorker("last");
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2, 600));
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
  int64_t done_before = 0;
  for (int round = 0; round < rounds; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng_() % 2000));
    coordinator->Signal(SIGKILL);
    while (!coordinator->Poll()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const testing::CommandResult check =
        RunCommand("sqlite3 " + dir_ + "/db \"PRAGMA integrity_check\"");
    EXPECT_EQ(check.out, "ok\n") << "round " << round;
    // No acknowledged completion is ever lost.
    const int64_t done =
        Query("SELECT COUNT(*) FROM jobs WHERE state = 'done'");
    EXPECT_GE(done, done_before);
    EXPECT_EQ(Query("SELECT COUNT(*) FROM results"), done);
    done_before = done;
    coordinator = &StartCoordinator();
  }
  // The same worker carries on without help.
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 4, 600));
  ExpectEveryPointOnce(4, steps);
  EXPECT_EQ(
      testing::RunCommand("sqlite3 " + dir_ + "/db \"PRAGMA integrity_check\"")
          .out,
      "ok\n");
}

TEST_F(PartitionTest, ShorterThanTheLeaseLosesAndReassignsNothing) {
  StartCoordinator();
  StartWorker("far", {"--lease-ms", "8000", "--rpc-timeout-ms", "1000"},
              ProxyAddress());
  Submit(Spec("short_partition", 1000));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) > 10 FROM metrics", 1, 120));
  ASSERT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'leased'"), 2);
  proxy_->Set(testing::FaultProxy::Mode::kStall);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  proxy_->Set(testing::FaultProxy::Mode::kPass);
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2, 600));
  // The worker did lose the coordinator for a while ...
  EXPECT_NE(testing::ReadFile(dir_ + "/far.err").find("unreachable"),
            std::string::npos);
  // ... and nothing expired, moved or went missing.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'expired'"), 0);
  EXPECT_EQ(Query("SELECT MAX(c) FROM (SELECT COUNT(*) c FROM events WHERE "
                  "kind = 'leased' GROUP BY job_id)"),
            1);
  ExpectEveryPointOnce(2, 1000 / 5);
}

TEST_F(PartitionTest, LongerThanTheLeaseReassignsEachJobExactlyOnce) {
  StartCoordinator();
  StartWorker("far", {"--rpc-timeout-ms", "1000"}, ProxyAddress());
  Submit(Spec("long_partition", 400));
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'leased'", 2, 120));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) > 10 FROM metrics", 1, 120));
  StartWorker("near");  // idle until the far worker's leases expire
  proxy_->Set(testing::FaultProxy::Mode::kStall);
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM events WHERE kind = 'expired'", 2, 60));
  ASSERT_TRUE(WaitFor(
      "SELECT COUNT(*) FROM jobs WHERE state = 'leased' AND epoch = 2", 2, 60));
  proxy_->Set(testing::FaultProxy::Mode::kPass);  // the far worker is back
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2, 600));
  // Reassigned exactly once: two leases per job, the second one finished.
  EXPECT_EQ(Query("SELECT MIN(c) FROM (SELECT COUNT(*) c FROM events WHERE "
                  "kind = 'leased' GROUP BY job_id)"),
            2);
  EXPECT_EQ(Query("SELECT MAX(c) FROM (SELECT COUNT(*) c FROM events WHERE "
                  "kind = 'leased' GROUP BY job_id)"),
            2);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'done' AND "
                  "epoch = 2"),
            2);
  ExpectEveryPointOnce(2, 400 / 5);
  EXPECT_NE(testing::ReadFile(dir_ + "/far.err").find("unreachable"),
            std::string::npos);
  // The far worker stopped its fenced attempts once it heard back.
  EXPECT_EQ(ProcessesMentioning(WorkDir("far") + "/"), 0);
}

TEST_F(FaultSuite, AJobThatAlwaysCrashesFailsAfterTheLimitAndStallsNothing) {
  // A tailsweep that crashes for the softmax cell and works for the others.
  const std::string wrapper = dir_ + "/crashy-tailsweep";
  std::ofstream(wrapper) << "#!/bin/sh\ncase \"$*\" in *kernel=softmax*) "
                            "echo 'segfault in softmax (injected)' >&2; exit "
                            "139;; esac\nexec "
                         << bin_ << "/tailsweep \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  StartCoordinator({"--max-attempts", "3"});
  StartWorker("w", {"--tailsweep-bin", wrapper});
  Submit(Spec("crashy", 40, 3));
  ASSERT_TRUE(WaitFor(
      "SELECT COUNT(*) FROM jobs WHERE state IN ('done', 'failed')", 3, 300));
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
  ChildProcess& first = StartWorker("first");
  Submit(Spec("preempt", 400, 4));
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM metrics WHERE name = 'loss' AND "
              "step = 20",
              2, 120));
  const auto sent = std::chrono::steady_clock::now();
  first.Signal(SIGTERM);  // what Slurm sends
  while (!first.Poll())
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // Within the worker's grace period (30 s; Slurm's KillWait is 30 s too).
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(30));
  EXPECT_EQ(*first.Poll(), 0);
  // Released at once, not expired, and the attempt is not counted.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'preempted'"), 2);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'expired'"), 0);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'queued'"), 4);
  EXPECT_EQ(Query("SELECT MAX(attempt) FROM jobs"), 0);
  StartWorker("second");
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 4, 240));
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
