#include "proto/coordinator_link.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "core/schema/file_util.h"
#include "proto/run_dir.h"
#include "tests/testing/coordinator_mock.h"
#include "tests/testing/run_command.h"

namespace tailsweep {
namespace {

// A run directory whose address the test rewrites (atomically, as the
// coordinator job does), and a dial that records where it went.
class RunDirLinkTest : public ::testing::Test {
 protected:
  RunDirLinkTest() : dir_(testing::MakeTempDir("tailsweep_link_")) {
    WriteAddress("node-a:5000");
  }
  ~RunDirLinkTest() override { std::filesystem::remove_all(dir_); }

  void WriteAddress(const std::string& address) {
    EXPECT_TRUE(
        WriteFileAtomic(RunPath(dir_, kRunAddress), address + "\n").ok());
  }

  std::shared_ptr<const CoordinatorStubs> StubsOf(
      v1::MockCoordinatorStub* stub) {
    return std::make_shared<const CoordinatorStubs>(
        CoordinatorStubs{stub, stub});
  }

  RunDirLink MakeLink() {
    return RunDirLink(
        dir_, "node-a:5000", StubsOf(&a_),
        [this](const ChannelOptions& at)
            -> absl::StatusOr<std::shared_ptr<const CoordinatorStubs>> {
          dialled_.push_back(at.address);
          if (fail_dial_) return absl::InvalidArgumentError("no such CA");
          return StubsOf(&b_);
        },
        &clock_, /*reread_ms=*/5000);
  }

  const std::string dir_;
  ManualClock clock_;
  v1::MockCoordinatorStub a_, b_;
  std::vector<std::string> dialled_;
  bool fail_dial_ = false;
};

TEST_F(RunDirLinkTest, FollowsANewAddressAfterAnUnreachableAnswer) {
  RunDirLink link = MakeLink();
  EXPECT_EQ(link.Stubs()->calls, &a_);
  // The same address: nothing to dial.
  clock_.Advance(5000);
  link.Unreachable();
  EXPECT_TRUE(dialled_.empty());
  // The coordinator came back elsewhere: calls go there from now on, and a
  // call that still holds the old stubs keeps them alive.
  const std::shared_ptr<const CoordinatorStubs> in_flight = link.Stubs();
  WriteAddress("node-b:6000");
  clock_.Advance(5000);
  link.Unreachable();
  EXPECT_EQ(dialled_, std::vector<std::string>{"node-b:6000"});
  EXPECT_EQ(link.address(), "node-b:6000");
  EXPECT_EQ(link.Stubs()->calls, &b_);
  EXPECT_EQ(link.Stubs()->transfers, &b_);
  EXPECT_EQ(in_flight->calls, &a_);
}

TEST_F(RunDirLinkTest, RereadsAtMostOncePerInterval) {
  RunDirLink link = MakeLink();
  WriteAddress("node-b:6000");
  clock_.Advance(4999);
  link.Unreachable();  // too soon after the start
  EXPECT_TRUE(dialled_.empty());
  EXPECT_EQ(link.Stubs()->calls, &a_);
  clock_.Advance(1);
  link.Unreachable();
  EXPECT_EQ(dialled_.size(), 1u);
  WriteAddress("node-c:7000");
  clock_.Advance(100);
  link.Unreachable();
  EXPECT_EQ(dialled_.size(), 1u);
}

// A missing or broken address file, or a failed dial, keeps the stubs the
// worker has: the coordinator may still come back there.
TEST_F(RunDirLinkTest, KeepsItsStubsWhenTheDirectorySaysNothingUsable) {
  RunDirLink link = MakeLink();
  std::filesystem::remove(RunPath(dir_, kRunAddress));
  clock_.Advance(5000);
  link.Unreachable();
  WriteAddress("not an address");
  clock_.Advance(5000);
  link.Unreachable();
  EXPECT_TRUE(dialled_.empty());
  WriteAddress("node-b:6000");
  fail_dial_ = true;
  clock_.Advance(5000);
  link.Unreachable();
  EXPECT_EQ(dialled_, std::vector<std::string>{"node-b:6000"});
  EXPECT_EQ(link.Stubs()->calls, &a_);
  EXPECT_EQ(link.address(), "node-a:5000");
  // Dialled again on the next read, and followed once it works.
  fail_dial_ = false;
  clock_.Advance(5000);
  link.Unreachable();
  EXPECT_EQ(link.Stubs()->calls, &b_);
}

}  // namespace
}  // namespace tailsweep
