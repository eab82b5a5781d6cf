// Checkpoints under faults: a damaged one on the coordinator's disk (at the
// end), and transfers under a slow uplink (system.md, "Checkpoints"): the
// worker's requests reach the coordinator at 2 MB/s through the fault
// proxy, so one upload of a 21 MB checkpoint takes about 10 s, longer than
// the lease (8 s) and than a call's timeout (2 s). It is stored all the
// same (a progress deadline, not a fixed one), and meanwhile every lease
// of the worker, its other slot's and its own, is renewed on time: nothing
// expires, nothing lapses, no job is leased twice.
// That the leases are renewed is what the test is about; load alone cannot
// lapse one: a renewal, due every 2.7 s, would have to be held back for
// 5 s more (the coordinator's grace adds 1 s).
// Both jobs run until the test cancels them, after the event it needs (a
// 21 MB checkpoint stored): an upload is made only while its job runs, so a
// job that ended on its own could end before any upload got through (a
// stalled upload is retried from the start), and the test would race it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "tests/faults/fault_fixture.h"

namespace tailsweep {
namespace {

constexpr int64_t kUplinkBytesPerS = 2 * 1000 * 1000;

class TransferFaults : public FaultSuite {
 protected:
  void SetUp() override {
    proxy_ = std::make_unique<testing::FaultProxy>(port_ + 1, port_,
                                                   kUplinkBytesPerS);
    ASSERT_TRUE(proxy_->listening());
  }
  std::unique_ptr<testing::FaultProxy> proxy_;
};

TEST_F(TransferFaults, ASlowUploadLongerThanTheLeaseDelaysNoHeartbeat) {
  StartCoordinator();
  StartWorker("w", {"--lease-ms", "8000", "--rpc-timeout-ms", "2000"},
              absl::StrCat("127.0.0.1:", port_ + 1));
  // Job a: a model whose checkpoints are 21 MB, one every 50 steps; job b,
  // in the other slot: a tiny one. Both run until they are cancelled.
  Submit(TinySpec(
      "big", "  seed: [0]\n",
      {{"d_model", "384"}, {"steps", "100000"}, {"checkpoint_every", "50"}}));
  Submit(TinySpec("small", "  seed: [0]\n", {{"steps", "100000"}}));
  // A checkpoint of a went up (and took over 10 s at 2 MB/s) while both
  // jobs ran.
  ASSERT_TRUE(
      WaitFor("SELECT COUNT(*) > 0 FROM checkpoints WHERE bytes > 20000000", 1))
      << testing::ReadFile(dir_ + "/w.err");
  EXPECT_EQ(Query("SELECT COUNT(*) FROM jobs WHERE state = 'leased'"), 2);
  // Cancelled, both children gone, and a round of the worker after that:
  // a lease that had lapsed before would be in its log by then (a round
  // checks its leases first), and an expiry in the events.
  for (const char* sweep : {"big", "small"}) {
    const testing::CommandResult cancel = Cli(absl::StrCat("cancel ", sweep));
    ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  }
  const std::string children = WorkDir("w") + "/";
  ASSERT_TRUE(testing::WaitUntil([&] {
    return ProcessesMentioning(children) == 0;
  })) << ProcessesMentioning(children)
      << " children still run";
  ASSERT_TRUE(WaitForAPollFromNow());
  const std::string log = testing::ReadFile(dir_ + "/w.err");
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'expired'"), 0)
      << log;
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'leased'"), 2);
  EXPECT_EQ(Query("SELECT MAX(attempt) FROM jobs"), 1);
  EXPECT_EQ(log.find("no lease renewal succeeded"), std::string::npos) << log;
  EXPECT_EQ(log.find("lease not renewed"), std::string::npos) << log;
}

// A job's newest checkpoint damaged on the coordinator's disk (a bit flip,
// a bad sector) while the job waits to resume: the job goes on from the
// checkpoint before it, not from step 0, and says so in its events and the
// coordinator's log. The coordinator is never restarted; no attempt is
// burned (the job was given back preempted, uncounted).
TEST_F(FaultSuite, ADamagedNewestCheckpointCostsOneCheckpointsWork) {
  StartCoordinator();
  ChildProcess& first = StartWorker("first", WithSteadyLease());
  Submit(TinySpec(
      "damaged", "  seed: [0]\n",
      {{"steps", "2000"}, {"log_every", "5"}, {"checkpoint_every", "100"}}));
  // Two checkpoints stored: one is kept as the other's fallback.
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM previous_checkpoints", 1))
      << testing::ReadFile(dir_ + "/first.err");
  first.Signal(SIGTERM);  // it checkpoints once more and gives the job back
  ASSERT_TRUE(Reaped(first));
  ASSERT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'preempted'"), 1);
  const int64_t newest = Query("SELECT step FROM checkpoints");
  const int64_t before = Query("SELECT step FROM previous_checkpoints");
  ASSERT_GT(newest, before);
  ASSERT_GT(before, 0);

  // One byte of the newest file flipped: same size, another SHA-256.
  const std::string file =
      dir_ + "/data/" + QueryText("SELECT file FROM checkpoints");
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f) << file;
    f.seekg(1000);
    const char c = static_cast<char>(f.get());
    f.seekp(1000);
    f.put(static_cast<char>(c ^ 0x40));
  }

  StartWorker("second", WithSteadyLease());
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 1))
      << testing::ReadFile(dir_ + "/second.err");
  // Said where people look: the job's events and the coordinator's log.
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = "
                  "'checkpoint_damaged'"),
            1);
  EXPECT_EQ(QueryText("SELECT detail FROM events WHERE kind = "
                      "'checkpoint_fallback'")
                .find(absl::StrCat("resumed from step ", before)),
            0u);
  EXPECT_NE(
      testing::ReadFile(dir_ + "/coordinator.err")
          .find(absl::StrCat("checkpoint of step ", newest, " is damaged")),
      std::string::npos);
  // It went on from the checkpoint before the damaged one.
  int64_t resumed_from = -1;
  for (const auto& entry :
       std::filesystem::directory_iterator(WorkDir("second"))) {
    const std::string path = entry.path().string() + "/result.json";
    if (!std::filesystem::exists(path)) continue;
    resumed_from =
        nlohmann::json::parse(testing::ReadFile(path))["resumed_from_step"]
            .get<int64_t>();
  }
  EXPECT_EQ(resumed_from, before);
  // No attempt burned, nothing expired, every point once.
  EXPECT_EQ(Query("SELECT MAX(attempt) FROM jobs"), 1);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'expired'"), 0);
  ExpectEveryPointOnce(1, 2000 / 5);
}

}  // namespace
}  // namespace tailsweep
