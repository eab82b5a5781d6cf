// The store on a failing disk: through the fault VFS, a write or sync
// fails (an I/O error, a full disk). Callers get a clear error, the first
// failure is sticky, and what was acknowledged before is intact.

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "coordinator/store.h"
#include "tests/coordinator/store_fixture.h"
#include "tests/testing/fault_vfs.h"
#include "tests/testing/results.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

class StorageFaultTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    vfs_ = &testing::FaultVfs::Get();
    vfs_->Heal();
    dir_ = testing::MakeTempDir("tailsweep_storage_fault_");
    StoreOptions options;
    options.vfs = testing::FaultVfs::kName;
    auto store = Store::Open(dir_ + "/db", &clock_, options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    auto spec = ParseSweepSpec(kStoreSpec, "s.yaml");
    ASSERT_TRUE(spec.ok());
    spec_ = *spec;
    jobs_ = ExpandSweep(spec_).value();
  }
  void TearDown() override {
    vfs_->Heal();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  testing::FaultVfs* vfs_;
  std::string dir_;
  ManualClock clock_;
  std::unique_ptr<Store> store_;
  SweepSpec spec_;
  std::vector<JobSpec> jobs_;
};

TEST_P(StorageFaultTest, FirstFailureIsClearStickyAndCorruptsNothing) {
  const int code = GetParam();
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                          store_->LeaseJobs("w", 4, 60000));
  ASSERT_EQ(leases.size(), 4u);
  TS_ASSERT_OK(store_->Complete("w", leases[0].job_id, 1,
                                testing::TestResult(R"({"a": 1})")));

  // The disk fails: the next write (or sync) is refused.
  if (code == SQLITE_IOERR_FSYNC) {
    vfs_->FailSyncsAfter(0, code);
  } else {
    vfs_->FailWritesAfter(0, code);
  }
  const absl::Status failed = store_->Complete(
      "w", leases[1].job_id, 1, testing::TestResult(R"({"a": 2})"));
  EXPECT_FALSE(failed.ok());
  if (code == SQLITE_FULL) {
    EXPECT_EQ(failed.code(), absl::StatusCode::kResourceExhausted) << failed;
    EXPECT_NE(failed.message().find("full"), absl::string_view::npos) << failed;
  } else {
    EXPECT_EQ(failed.code(), absl::StatusCode::kInternal) << failed;
    EXPECT_NE(failed.message().find("I/O error"), absl::string_view::npos)
        << failed;
  }
  EXPECT_FALSE(store_->Healthy().ok());

  // Sticky: even with the disk back, nothing more is written until a
  // restart; reads still answer.
  vfs_->Heal();
  const absl::Status after = store_->Complete(
      "w", leases[2].job_id, 1, testing::TestResult(R"({"a": 3})"));
  EXPECT_EQ(after.code(), failed.code());
  EXPECT_NE(after.message().find("failed earlier"), absl::string_view::npos)
      << after;
  TS_ASSERT_OK_AND_ASSIGN(SweepCounts counts, store_->Counts("s"));
  EXPECT_EQ(counts.done, 1);

  // After a restart the file is intact: the acknowledged result is there,
  // the refused ones are not.
  store_.reset();
  auto reopened = Store::Open(dir_ + "/db", &clock_);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->IntegrityCheck().value(), "ok");
  EXPECT_EQ((*reopened)->Result(leases[0].job_id).value(),
            testing::TestResult(R"({"a": 1})"));
  TS_EXPECT_CODE((*reopened)->Result(leases[1].job_id),
                 absl::StatusCode::kNotFound);
  TS_EXPECT_CODE((*reopened)->Result(leases[2].job_id),
                 absl::StatusCode::kNotFound);
  TS_ASSERT_OK(
      (*reopened)->Complete("w", leases[3].job_id, 1, testing::TestResult()));
  TS_ASSERT_OK((*reopened)->Healthy());
}

INSTANTIATE_TEST_SUITE_P(WriteErrorDiskFullSyncError, StorageFaultTest,
                         ::testing::Values(SQLITE_IOERR_WRITE, SQLITE_FULL,
                                           SQLITE_IOERR_FSYNC));

TEST_F(StorageFaultTest, AFailureOnTheNthWriteOfABigSubmitLeavesNoPart) {
  // Fail somewhere inside the transaction of a large submit.
  SweepSpec big = spec_;
  big.grid.push_back({"seed", {}});
  for (int i = 0; i < 300; ++i)
    big.grid.back().second.push_back(std::to_string(i));
  big.name = "big";
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> jobs, ExpandSweep(big));
  vfs_->FailWritesAfter(5, SQLITE_IOERR_WRITE);
  EXPECT_FALSE(store_->SubmitSweep(big, jobs).ok());
  vfs_->Heal();
  store_.reset();
  auto reopened = Store::Open(dir_ + "/db", &clock_);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->IntegrityCheck().value(), "ok");
  TS_EXPECT_CODE((*reopened)->Counts("big"), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tailsweep
