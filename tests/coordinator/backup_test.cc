// Backups of the database (backup.h): taken while the store writes, checked,
// the newest K kept; a restore takes the newest good one and never
// overwrites a database.

#include "coordinator/backup.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "coordinator/store.h"
#include "tests/coordinator/store_fixture.h"
#include "tests/testing/results.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

namespace fs = std::filesystem;

class BackupTest : public StoreTest {
 protected:
  std::string Db() const { return dir_ + "/tailsweep.db"; }
  std::string Backups() const { return dir_ + "/backups"; }
  int CountBackups() const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(Backups())) {
      n += e.path().extension() == ".db" ? 1 : 0;
    }
    return n;
  }
};

TEST_F(BackupTest, ABackupHoldsWhatWasDoneAndRestoresIntoANewDatabase) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> l,
                          store_->LeaseJobs("w", 1, 1000));
  TS_ASSERT_OK(store_->AddMetrics("w", l[0].job_id, 1, {{"loss", 5, 0.25}}));
  TS_ASSERT_OK(store_->Complete("w", l[0].job_id, 1, testing::TestResult()));
  // Taken while the store is open and writing.
  TS_ASSERT_OK_AND_ASSIGN(BackupResult first,
                          WriteBackup(Db(), Backups(), 2, 1000));
  EXPECT_GT(first.bytes, 0);
  // A job done after the backup is not in it.
  TS_ASSERT_OK_AND_ASSIGN(l, store_->LeaseJobs("w", 1, 1000));
  TS_ASSERT_OK(store_->Complete("w", l[0].job_id, 1, testing::TestResult()));
  store_.reset();
  // The database is lost; the restore never overwrites one that is there.
  EXPECT_EQ(RestoreNewest(Backups(), Db()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  fs::remove(Db());
  fs::remove(Db() + "-wal");
  fs::remove(Db() + "-shm");
  TS_ASSERT_OK_AND_ASSIGN(std::string from, RestoreNewest(Backups(), Db()));
  EXPECT_EQ(from, first.path);
  Reopen();
  TS_ASSERT_OK_AND_ASSIGN(JobCounts counts, store_->Counts("s"));
  EXPECT_EQ(counts.Of(JobState::kDone), 1);
  EXPECT_EQ(counts.Of(JobState::kLeased), 0);  // the later lease: not in it
  EXPECT_EQ(counts.Of(JobState::kQueued), 3);
  TS_EXPECT_OK(store_->CheckRunningCounts());
}

TEST_F(BackupTest, TheNewestKAreKeptAndADamagedNewestIsPassedOver) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  std::string second;
  for (int i = 1; i <= 4; ++i) {
    TS_ASSERT_OK_AND_ASSIGN(BackupResult r,
                            WriteBackup(Db(), Backups(), 2, i * 1000));
    EXPECT_EQ(r.removed, i > 2 ? 1 : 0);
    if (i == 3) second = r.path;
  }
  EXPECT_EQ(CountBackups(), 2);
  // The newest is damaged (a torn copy): the one before it is restored.
  TS_ASSERT_OK_AND_ASSIGN(BackupResult newest,
                          WriteBackup(Db(), Backups(), 3, 5000));
  fs::resize_file(newest.path, 1000);
  TS_ASSERT_OK_AND_ASSIGN(std::string from,
                          RestoreNewest(Backups(), dir_ + "/new.db"));
  EXPECT_NE(from, newest.path);
  // Nothing good: NotFound, saying so.
  const std::string empty = dir_ + "/none";
  fs::create_directories(empty);
  EXPECT_EQ(RestoreNewest(empty, dir_ + "/other.db").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(BackupTest, AfterARestoreNothingIsLeasedUntilTheHoldIsOver) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  store_.reset();
  StoreOptions options;
  options.hold_leases_until_steady_ms = clock_.SteadyMs() + 30000;
  TS_ASSERT_OK_AND_ASSIGN(store_, Store::Open(Db(), &clock_, options));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> held,
                          store_->LeaseJobs("w", 4, 1000));
  EXPECT_TRUE(held.empty());
  clock_.Advance(30000);
  TS_ASSERT_OK_AND_ASSIGN(held, store_->LeaseJobs("w", 4, 1000));
  EXPECT_EQ(held.size(), 4u);
}

}  // namespace
}  // namespace tailsweep
