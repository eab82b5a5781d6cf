// The store on a failing disk: through the fault VFS, a write or sync
// fails (an I/O error, a full disk). Callers get a clear error, nothing of
// the refused write is applied, leases are still renewed (in memory), and
// the store writes again by itself once the disk does: no restart. A
// damaged file instead stops writes until a restart.

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

TEST_P(StorageFaultTest, ATransientFailureIsClearRefusedAndHealsByItself) {
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
  // UNAVAILABLE: the caller (a worker) keeps the result and retries.
  EXPECT_EQ(failed.code(), absl::StatusCode::kUnavailable) << failed;
  EXPECT_NE(failed.message().find("cannot write"), absl::string_view::npos)
      << failed;
  EXPECT_NE(failed.message().find(code == SQLITE_FULL ? "full" : "I/O error"),
            absl::string_view::npos)
      << failed;
  const absl::Status health = store_->Healthy();
  EXPECT_EQ(health.code(), absl::StatusCode::kUnavailable);
  if (code == SQLITE_FULL) {
    EXPECT_NE(health.message().find("disk full at " + dir_),
              absl::string_view::npos)
        << health;
    EXPECT_NE(health.message().find("MB free"), absl::string_view::npos)
        << health;
  }
  // Meanwhile a lease is still renewed (in memory): a full disk costs no
  // worker its jobs.
  TS_EXPECT_OK(store_->Heartbeat("w", leases[3].job_id, 1, 60000).status());
  TS_EXPECT_CODE(store_->Heartbeat("other", leases[3].job_id, 1, 60000),
                 absl::StatusCode::kPermissionDenied);

  // The disk works again. Until the next probe, writes are still refused
  // at once, and say when the next try is.
  vfs_->Heal();
  const absl::Status early = store_->Complete(
      "w", leases[2].job_id, 1, testing::TestResult(R"({"a": 3})"));
  EXPECT_EQ(early.code(), absl::StatusCode::kUnavailable) << early;
  EXPECT_NE(early.message().find("retrying by itself"), absl::string_view::npos)
      << early;
  EXPECT_GE(store_->StorageRefused(), 1);
  // The probe's time: the next write goes through and the store heals.
  clock_.Advance(sql::BatchWriter::kFirstProbeMs);
  TS_ASSERT_OK(store_->Complete("w", leases[2].job_id, 1,
                                testing::TestResult(R"({"a": 3})")));
  TS_EXPECT_OK(store_->Healthy());
  EXPECT_EQ(store_->StorageHeals(), 1);
  // The refused result, sent again, is taken: nothing is lost.
  TS_ASSERT_OK(store_->Complete("w", leases[1].job_id, 1,
                                testing::TestResult(R"({"a": 2})")));
  TS_ASSERT_OK_AND_ASSIGN(JobCounts counts, store_->Counts("s"));
  EXPECT_EQ(counts.Of(JobState::kDone), 3);

  // The file is intact and holds exactly what was acknowledged.
  store_.reset();
  auto reopened = Store::Open(dir_ + "/db", &clock_);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->IntegrityCheck().value(), "ok");
  EXPECT_EQ((*reopened)->Result(leases[0].job_id).value(),
            testing::TestResult(R"({"a": 1})"));
  EXPECT_EQ((*reopened)->Result(leases[1].job_id).value(),
            testing::TestResult(R"({"a": 2})"));
  TS_EXPECT_CODE((*reopened)->Result(leases[3].job_id),
                 absl::StatusCode::kNotFound);
}

TEST_F(StorageFaultTest, WhileTheDiskStaysFullProbesBackOff) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                          store_->LeaseJobs("w", 1, 60000));
  vfs_->FailWritesAfter(0, SQLITE_FULL);
  auto complete = [&] {
    return store_->Complete("w", leases[0].job_id, 1, testing::TestResult());
  };
  EXPECT_FALSE(complete().ok());
  // Each failed probe doubles the wait before the next, up to a cap; the
  // writes between probes never reach the disk.
  int64_t gap = sql::BatchWriter::kFirstProbeMs;
  for (int i = 0; i < 6; ++i) {
    clock_.Advance(gap);
    const int64_t writes = vfs_->writes();
    EXPECT_FALSE(complete().ok());  // the probe
    EXPECT_GT(vfs_->writes(), writes);
    const int64_t refused = store_->StorageRefused();
    const absl::Status between = complete();
    EXPECT_NE(between.message().find("retrying by itself"),
              absl::string_view::npos)
        << between;
    EXPECT_EQ(store_->StorageRefused(), refused + 1);
    gap = std::min(gap * 2, sql::BatchWriter::kMaxProbeMs);
  }
  vfs_->Heal();
  clock_.Advance(sql::BatchWriter::kMaxProbeMs);
  TS_EXPECT_OK(complete());
  TS_EXPECT_OK(store_->Healthy());
}

TEST_F(StorageFaultTest, ADamagedFileTakesNoMoreWritesUntilARestart) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                          store_->LeaseJobs("w", 2, 60000));
  vfs_->FailWritesAfter(0, SQLITE_CORRUPT);
  EXPECT_FALSE(
      store_->Complete("w", leases[0].job_id, 1, testing::TestResult()).ok());
  vfs_->Heal();
  clock_.Advance(60000);
  const absl::Status after =
      store_->Complete("w", leases[1].job_id, 1, testing::TestResult());
  EXPECT_EQ(after.code(), absl::StatusCode::kDataLoss) << after;
  EXPECT_NE(after.message().find("restart the coordinator"),
            absl::string_view::npos)
      << after;
  const absl::Status health = store_->Healthy();
  EXPECT_EQ(health.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(health.message().find("damaged"), absl::string_view::npos)
      << health;
  EXPECT_EQ(store_->StorageHeals(), 0);
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
