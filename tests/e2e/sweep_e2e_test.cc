// End to end on loopback: a real coordinator, real workers, real jobs, and
// real kill -9s.

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "process/child_process.h"
#include "tests/testing/cluster.h"
#include "tests/testing/raw_call.h"
#include "tests/testing/run_command.h"
#include "tests/testing/wait.h"

namespace tailsweep {
namespace {

using testing::RunCommand;

// Four cells (kernel x norm), or two with norms "[post]".
std::string KernelNormSpec(const std::string& name, int steps,
                           const std::string& norms = "[post, pre]") {
  return absl::StrCat("name: ", name, R"(
grid:
  kernel: [softmax, log]
  norm: )",
                      norms, R"(
fixed:
  n_points: 64
  d_model: 16
  heads: 2
  layers: 1
  steps: )",
                      steps, R"(
  warmup: 3
  log_every: 5
  checkpoint_every: 10
  eval_instances: 4
  reference_trials: 4
)");
}

// Real processes in a temporary directory (tests/testing/cluster.h).
class SweepE2E : public ::testing::Test, public testing::Cluster {
 protected:
  SweepE2E() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_e2e_") {}
};

TEST_F(SweepE2E, TwoWorkersWithTwoSlotsFinishTheSweepOnce) {
  StartCoordinator();
  // Long leases: "leased once" below must not fail on a lapse that a
  // loaded machine could cause by accident.
  StartWorker("w1", {"--lease-ms", kLongLeaseMs});
  StartWorker("w2", {"--lease-ms", kLongLeaseMs});
  Submit(KernelNormSpec("e2e", 20));
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 4));
  EXPECT_EQ(Query("SELECT COUNT(*) FROM results"), 4);
  // Every job was leased once: no job ever had two holders.
  EXPECT_EQ(Query("SELECT MAX(c) FROM (SELECT COUNT(*) c FROM events "
                  "WHERE kind = 'leased' GROUP BY job_id)"),
            1);
  // steps / log_every loss points for every job.
  ExpectEveryPointOnce(4, 20 / 5);
  const testing::CommandResult results = Cli("results e2e --format json");
  ASSERT_EQ(results.exit_code, 0) << results.err;
  const nlohmann::json rows = nlohmann::json::parse(results.out);
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& r : rows) EXPECT_TRUE(r["ratio_median"].is_number());
  // Both workers have called in (one that started slowly may have found
  // the jobs taken, but it polls).
  testing::CommandResult workers;
  EXPECT_TRUE(testing::WaitUntil([&] {
    workers = Cli("workers --format json");
    const nlohmann::json doc =
        nlohmann::json::parse(workers.out, nullptr, false);
    return doc.is_array() && doc.size() == 2;
  })) << workers.out
      << workers.err;
  // Submitting again changes nothing.
  const testing::CommandResult again = Cli("submit " + dir_ + "/spec.yaml");
  EXPECT_NE(again.out.find("0 jobs added, 4 already there"), std::string::npos);
}

TEST_F(SweepE2E, TwoWorkersWithTwoSlotsFinishTheSmokeSweep) {
  StartCoordinator();
  // Long leases, as above: every job leased once, however loaded.
  StartWorker("w1", {"--lease-ms", kLongLeaseMs});
  StartWorker("w2", {"--lease-ms", kLongLeaseMs});
  const std::string spec = testing::ReadFile(std::string(TAILSWEEP_SOURCE_DIR) +
                                             "/sweeps/smoke.yaml");
  Submit(spec);
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 48));
  EXPECT_EQ(Query("SELECT COUNT(*) FROM results"), 48);
  EXPECT_EQ(Query("SELECT MAX(c) FROM (SELECT COUNT(*) c FROM events "
                  "WHERE kind = 'leased' GROUP BY job_id)"),
            1);
  // smoke.yaml: 100 steps, log_every 10.
  ExpectEveryPointOnce(48, 100 / 10);
  const testing::CommandResult results = Cli("results smoke --format json");
  ASSERT_EQ(results.exit_code, 0) << results.err;
  const nlohmann::json rows = nlohmann::json::parse(results.out);
  ASSERT_EQ(rows.size(), 48u);
  for (const auto& r : rows) EXPECT_TRUE(r["ratio_median"].is_number()) << r;
  // A second seed extends the grid: only its 48 cells are new.
  std::string wider = spec;
  wider.replace(wider.find("seed: [0]"), 9, "seed: [0, 1]");
  std::ofstream(dir_ + "/wider.yaml") << wider;
  const testing::CommandResult added = Cli("submit " + dir_ + "/wider.yaml");
  EXPECT_NE(added.out.find("48 jobs added, 48 already there"),
            std::string::npos)
      << added.out << added.err;
  ASSERT_EQ(Cli("cancel smoke").exit_code, 0);
}

TEST_F(SweepE2E, KilledWorkersJobResumesElsewhereWithIdenticalMetrics) {
  StartCoordinator();
  // A short lease: its expiry after the kill hands the jobs over.
  ChildProcess& victim = StartWorker("victim", {"--lease-ms", "4000"});
  Submit(KernelNormSpec("kill", 400));
  // Both running jobs have a checkpoint stored on the coordinator (a loss
  // point does not say that the upload is in), then kill -9 the worker
  // (its jobs die too, or stop at their lease).
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) FROM checkpoints JOIN jobs USING (job_id) "
              "WHERE jobs.state = 'leased'",
              2));
  victim.Signal(SIGKILL);
  // A long one: only the victim's jobs run a second attempt.
  StartWorker("rescuer", {"--lease-ms", kLongLeaseMs});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 4));
  EXPECT_GE(Query("SELECT COUNT(*) FROM events WHERE kind = 'expired'"), 2);
  // No point lost or duplicated: 400 / 5 loss points for every job.
  ExpectEveryPointOnce(4, 400 / 5);
  // A resumed job's final metrics equal an uninterrupted run of it.
  const testing::CommandResult jobs = Cli("jobs kill --format json");
  const nlohmann::json list = nlohmann::json::parse(jobs.out);
  std::string resumed;
  for (const auto& j : list) {
    if (j["attempt"].get<int64_t>() > 1) resumed = j["job_id"];
  }
  ASSERT_FALSE(resumed.empty());
  const std::string params_json =
      testing::ReadFile(WorkDir("rescuer") + "/" + resumed + "/result.json");
  const nlohmann::json result = nlohmann::json::parse(params_json);
  // It resumed from the checkpoint the victim uploaded (the rescuer's own
  // directory had none), not from scratch.
  EXPECT_GE(result["resumed_from_step"].get<int64_t>(), 10);
  EXPECT_GE(Query("SELECT COUNT(*) FROM checkpoints"), 2);
  std::string sets;
  for (const auto& [k, v] : result["config"].items()) {
    sets +=
        " --set " + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  const testing::CommandResult clean =
      RunCommand(bin_ + "/tailsweep-lab --threads 1 lab train" + sets +
                 " --out-dir " + dir_ + "/clean");
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  const nlohmann::json clean_result =
      nlohmann::json::parse(testing::ReadFile(dir_ + "/clean/result.json"));
  EXPECT_EQ(result["ratio_median"], clean_result["ratio_median"]);
  EXPECT_EQ(result["final_loss"], clean_result["final_loss"]);
}

TEST_F(SweepE2E, CoordinatorKilledMidSweepRestartsAndCompletes) {
  ChildProcess* coordinator = &StartCoordinator();
  StartWorker("w1");
  Submit(KernelNormSpec("restart", 60));
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) >= 1 FROM jobs WHERE state = 'done'", 1));
  coordinator->Signal(SIGKILL);
  // Gone (and its port closed) before the new one listens on the same port.
  ASSERT_TRUE(
      testing::WaitUntil([&] { return coordinator->Poll().has_value(); }));
  StartCoordinator();
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 4));
  const testing::CommandResult check =
      RunCommand("sqlite3 " + dir_ + "/db \"PRAGMA integrity_check\"");
  EXPECT_EQ(check.out, "ok\n");
  EXPECT_EQ(Query("SELECT COUNT(*) FROM results"), 4);
}

TEST_F(SweepE2E, CancelStopsRunningJobsStoresNoMorePointsAndResumeRerunsThem) {
  StartCoordinator();
  StartWorker("w1");
  Submit(KernelNormSpec("cancel", 3000));
  // Both slots' children run: each of their jobs has sent a point.
  ASSERT_TRUE(WaitFor("SELECT COUNT(DISTINCT job_id) FROM metrics", 2));
  const testing::CommandResult cancel = Cli("cancel cancel");
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_NE(cancel.out.find("4 jobs cancelled"), std::string::npos)
      << cancel.out;
  // The worker learns of it at its next heartbeat or metric batch
  // (CANCELLED: the lease is gone) and kills the children (or, were it
  // stalled that long, they stop at their lease).
  const std::string children = WorkDir("w1") + "/";
  ASSERT_TRUE(testing::WaitUntil([&] {
    return ProcessesMentioning(children) == 0;
  })) << ProcessesMentioning(children)
      << " children still run";
  // What the children wrote before they died may still arrive (the holder's
  // points are taken, as a result would be), but nothing after: two rounds
  // of the worker later the count stands, and no job has a point its child
  // did not write.
  ASSERT_TRUE(WaitForAPollFromNow());
  ASSERT_TRUE(WaitForAPollFromNow());
  const int64_t points = Query("SELECT COUNT(*) FROM metrics");
  ASSERT_TRUE(WaitForAPollFromNow());
  ASSERT_TRUE(WaitForAPollFromNow());
  EXPECT_EQ(Query("SELECT COUNT(*) FROM metrics"), points);
  const int64_t steps =
      Query("SELECT COUNT(*) FROM (SELECT DISTINCT job_id, step FROM metrics)");
  int64_t written = 0;
  for (const auto& job : std::filesystem::directory_iterator(children)) {
    std::ifstream lines(job.path() / "metrics.jsonl");
    for (std::string line; std::getline(lines, line);) ++written;
  }
  EXPECT_GT(steps, 0);
  EXPECT_LE(steps, written);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'cancelled'"), 4);
  const testing::CommandResult resume = Cli("resume cancel");
  ASSERT_EQ(resume.exit_code, 0) << resume.err;
  EXPECT_NE(resume.out.find("4 failed or cancelled jobs requeued"),
            std::string::npos);
  EXPECT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'leased'", 2));
}

TEST_F(SweepE2E, SubmitRefusesBadSpecsWithExitTwoAndNoCoordinatorNeeded) {
  std::ofstream(dir_ + "/bad.yaml") << "name: b\ngrid:\n  kernel: [relu]\n";
  const testing::CommandResult r = Cli("submit " + dir_ + "/bad.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.yaml:3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("allowed: softmax, quadratic, linear, log"),
            std::string::npos);
  // No coordinator runs here: a good spec is refused as unreachable, exit 1.
  std::ofstream(dir_ + "/good.yaml") << KernelNormSpec("good", 10);
  const testing::CommandResult u = Cli("submit " + dir_ + "/good.yaml");
  EXPECT_EQ(u.exit_code, 1);
  EXPECT_NE(u.err.find("unreachable"), std::string::npos) << u.err;
}

}  // namespace
}  // namespace tailsweep

namespace tailsweep {
namespace {

TEST_F(SweepE2E, CoordinatorServesHealthAndReflectionAndStopsCleanly) {
  ChildProcess& coordinator = StartCoordinator();
  std::string answer;
  grpc::Status status;
  testing::WaitUntil(
      [&] {  // until it listens
        // HealthCheckRequest{service: ""} is empty; SERVING is field 1 = 1.
        status = testing::RawCall(address_, "/grpc.health.v1.Health/Check", "",
                                  &answer, /*streaming=*/false);
        return status.ok();
      },
      testing::EventDeadline(), std::chrono::milliseconds(100));
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(answer, std::string("\x08\x01", 2));
  // ServerReflectionRequest{list_services: ""} (field 7, empty string).
  status =
      testing::RawCall(address_,
                       "/grpc.reflection.v1alpha.ServerReflection/"
                       "ServerReflectionInfo",
                       std::string("\x3a\x00", 2), &answer, /*streaming=*/true);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_NE(answer.find("tailsweep.v1.Coordinator"), std::string::npos);
  EXPECT_NE(answer.find("grpc.health.v1.Health"), std::string::npos);
  coordinator.Signal(SIGTERM);
  std::optional<int> code;
  ASSERT_TRUE(testing::WaitUntil([&] {
    code = coordinator.Poll();
    return code.has_value();
  }));
  EXPECT_EQ(*code, 0);
}

}  // namespace
}  // namespace tailsweep
