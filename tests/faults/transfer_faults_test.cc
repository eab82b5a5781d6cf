// Checkpoint transfers under a slow uplink (system.md, "Checkpoints"): the
// worker's requests reach the coordinator at 2 MB/s through the fault
// proxy, so one upload of a 21 MB checkpoint takes about 10 s, longer than
// the lease (8 s) and than a call's timeout (2 s). It is stored all the
// same (a progress deadline, not a fixed one), and meanwhile every lease
// of the worker, its other slot's and its own, is renewed on time: nothing
// expires, nothing lapses, every job is done by its first attempt.
// That the leases are renewed is what the test is about; load alone cannot
// lapse one: a renewal, due every 2.7 s, would have to be held back for
// 5 s more (the coordinator's grace adds 1 s).

#include <gtest/gtest.h>

#include <memory>

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
  // Job a: a model whose checkpoints are 21 MB, one every 50 steps (two
  // uploads); job b, in the other slot: a tiny one that runs on meanwhile.
  Submit(TinySpec(
      "big", "  seed: [0]\n",
      {{"d_model", "384"}, {"steps", "100"}, {"checkpoint_every", "50"}}));
  Submit(TinySpec("small", "  seed: [0]\n", {{"steps", "3000"}}));
  // Both done: no lease of the worker is left to lapse, so what its log
  // lacks now it never says.
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2))
      << testing::ReadFile(dir_ + "/w.err");
  const std::string log = testing::ReadFile(dir_ + "/w.err");
  // At least one checkpoint of a went up (and took over 10 s at 2 MB/s).
  EXPECT_GE(Query("SELECT COUNT(*) FROM checkpoints WHERE bytes > 20000000"), 1)
      << log;
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'expired'"), 0)
      << log;
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'leased'"), 2);
  EXPECT_EQ(Query("SELECT MAX(attempt) FROM jobs"), 1);
  EXPECT_EQ(log.find("no lease renewal succeeded"), std::string::npos) << log;
  EXPECT_EQ(log.find("lease not renewed"), std::string::npos) << log;
}

}  // namespace
}  // namespace tailsweep
