// What leasing keeps between calls so that a call does not step over every
// running job: each sweep's running count (kept by triggers through every
// change of state, cancel, resume and removal, also of jobs two sweeps
// share) and where its scan for queued jobs starts (forgotten whenever a
// job before it goes back to the queue).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coordinator/store.h"
#include "tests/coordinator/store_fixture.h"
#include "tests/testing/results.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

using LeaseScanTest = StoreTest;

// Leases one job to `worker` and returns its id ("" when none).
std::string LeaseOne(Store& store, const std::string& worker) {
  absl::StatusOr<std::vector<Lease>> l = store.LeaseJobs(worker, 1, 1000);
  EXPECT_TRUE(l.ok()) << l.status();
  return l.ok() && !l->empty() ? (*l)[0].job_id : "";
}

TEST_F(LeaseScanTest, AJobGivenBackBeforeTheScannedPastOnesIsLeasedNext) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  const std::string first = LeaseOne(*store_, "w");
  const std::string second = LeaseOne(*store_, "w");
  EXPECT_EQ(first, jobs_[0].id);
  EXPECT_EQ(second, jobs_[1].id);
  // A release: back to the queue at once, ahead of the scan's place.
  TS_ASSERT_OK(store_->Release("w", first, 1, "preempted"));
  EXPECT_EQ(LeaseOne(*store_, "w"), first);
  // A failed attempt: back after its backoff.
  TS_ASSERT_OK(store_->Fail("w", second, 1, "boom"));
  EXPECT_EQ(LeaseOne(*store_, "w"), jobs_[2].id);
  clock_.Advance(3600 * 1000);
  EXPECT_EQ(LeaseOne(*store_, "w"), second);
  // An expired lease: every job leased is past; its lease runs out.
  EXPECT_EQ(LeaseOne(*store_, "w"), jobs_[3].id);
  TS_ASSERT_OK(store_->Complete("w", jobs_[3].id, 1, testing::TestResult()));
  clock_.Advance(2000);
  TS_ASSERT_OK_AND_ASSIGN(int64_t expired, Expire());
  EXPECT_EQ(expired, 3);  // the second job's was its last attempt
  clock_.Advance(3600 * 1000);
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> again,
                          store_->LeaseJobs("w2", 4, 1000));
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].job_id, jobs_[0].id);
  EXPECT_EQ(again[1].job_id, jobs_[2].id);
  TS_EXPECT_OK(store_->CheckRunningCounts());
}

TEST_F(LeaseScanTest, RunningCountsHoldThroughEveryChange) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> l,
                          store_->LeaseJobs("w", 3, 1000));
  ASSERT_EQ(l.size(), 3u);
  TS_EXPECT_OK(store_->CheckRunningCounts());
  // t shares two jobs with s (linear and log), one of them leased.
  SweepSpec t = spec_;
  t.name = "t";
  t.grid = {{"kernel", {"log", "linear"}}};
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> t_jobs, ExpandSweep(t));
  TS_ASSERT_OK(store_->SubmitSweep(t, t_jobs));
  TS_EXPECT_OK(store_->CheckRunningCounts());
  TS_ASSERT_OK(store_->Complete("w", l[0].job_id, 1, testing::TestResult()));
  TS_ASSERT_OK(store_->Fail("w", l[1].job_id, 1, "boom"));
  TS_EXPECT_OK(store_->CheckRunningCounts());
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> more,
                          store_->LeaseJobs("w", 4, 1000));
  TS_EXPECT_OK(store_->CheckRunningCounts());
  // s cancels: the shared running job stays t's.
  TS_ASSERT_OK(store_->CancelSweep("s").status());
  TS_EXPECT_OK(store_->CheckRunningCounts());
  TS_ASSERT_OK(store_->ResumeSweep("s").status());
  TS_EXPECT_OK(store_->CheckRunningCounts());
  TS_ASSERT_OK(store_->RemoveSweep("t", /*force=*/true, false).status());
  TS_EXPECT_OK(store_->CheckRunningCounts());
  // After a restart the counts are made afresh, and still hold.
  Reopen();
  TS_EXPECT_OK(store_->CheckRunningCounts());
  TS_ASSERT_OK_AND_ASSIGN(more, store_->LeaseJobs("w", 4, 1000));
  TS_EXPECT_OK(store_->CheckRunningCounts());
  clock_.Advance(2000);
  TS_ASSERT_OK(Expire().status());
  TS_EXPECT_OK(store_->CheckRunningCounts());
}

TEST_F(LeaseScanTest, MaxRunningCountsTheJobsRunningAcrossCalls) {
  spec_.control.max_running = 2;
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> l,
                          store_->LeaseJobs("w", 4, 1000));
  EXPECT_EQ(l.size(), 2u);
  EXPECT_EQ(LeaseOne(*store_, "w2"), "");
  TS_ASSERT_OK(store_->Complete("w", l[0].job_id, 1, testing::TestResult()));
  EXPECT_EQ(LeaseOne(*store_, "w2"), jobs_[2].id);
  EXPECT_EQ(LeaseOne(*store_, "w2"), "");
}

}  // namespace
}  // namespace tailsweep
