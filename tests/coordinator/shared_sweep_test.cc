// The store with sweeps that share jobs (the same cell under the same fixed
// values): cancel, results and resubmission act per sweep.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coordinator/store.h"
#include "tests/coordinator/store_fixture.h"
#include "tests/testing/results.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

// Sweeps that share jobs (the same cell under the same fixed values).
class SharedSweepTest : public StoreTest {
 protected:
  // t: log and linear, which are s's jobs too.
  void SubmitT() {
    t_ = spec_;
    t_.name = "t";
    t_.grid = {{"kernel", {"log", "linear"}}};
    TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> t_jobs, ExpandSweep(t_));
    TS_ASSERT_OK_AND_ASSIGN(SubmitResult added,
                            store_->SubmitSweep(t_, t_jobs));
    EXPECT_EQ(added.added, 2);
    shared_ = {t_jobs[0].id, t_jobs[1].id};
  }
  // s (softmax, quadratic, linear, log), then t.
  void SubmitBoth() {
    TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
    SubmitT();
  }
  bool Shared(const std::string& job) const {
    return job == shared_[0] || job == shared_[1];
  }
  const JobRow& Row(const std::vector<JobRow>& rows, const std::string& job) {
    for (const JobRow& r : rows) {
      if (r.job_id == job) return r;
    }
    static const JobRow none;
    ADD_FAILURE() << "no row for " << job;
    return none;
  }
  SweepSpec t_;
  std::vector<std::string> shared_;
};

TEST_F(SharedSweepTest, CancelStopsOnlyJobsNoOtherLiveSweepHas) {
  SubmitBoth();
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> l,
                          store_->LeaseJobs("w", 4, 1000));
  ASSERT_EQ(l.size(), 4u);
  TS_ASSERT_OK_AND_ASSIGN(Store::CancelResult cancel, store_->CancelSweep("s"));
  EXPECT_EQ(cancel.cancelled, 4);
  EXPECT_EQ(cancel.kept, 2);
  for (const Lease& lease : l) {
    TS_EXPECT_CODE(store_->Heartbeat("w", lease.job_id, 1, 1000),
                   Shared(lease.job_id) ? absl::StatusCode::kOk
                                        : absl::StatusCode::kCancelled);
  }
  // Each sweep's view is true for it: s cancelled all four, t still runs
  // both of its own.
  TS_ASSERT_OK_AND_ASSIGN(JobCounts s, store_->Counts("s"));
  EXPECT_EQ(s.Of(JobState::kCancelled), 4);
  TS_ASSERT_OK_AND_ASSIGN(JobCounts t, store_->Counts("t"));
  EXPECT_EQ(t.Of(JobState::kLeased), 2);
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobRow> s_rows, store_->Jobs("s"));
  const JobRow& in_s = Row(s_rows, shared_[0]);
  EXPECT_EQ(in_s.state, JobState::kCancelled);
  EXPECT_EQ(in_s.job_state, JobState::kLeased);
  EXPECT_EQ(in_s.holder, "");
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobRow> t_rows, store_->Jobs("t"));
  EXPECT_EQ(Row(t_rows, shared_[0]).state, JobState::kLeased);
  EXPECT_EQ(Row(t_rows, shared_[0]).holder, "w");
  TS_ASSERT_OK_AND_ASSIGN(auto cancelled_in_t,
                          store_->Jobs("t", JobState::kCancelled));
  EXPECT_TRUE(cancelled_in_t.empty());
  TS_ASSERT_OK_AND_ASSIGN(auto sweeps, store_->Sweeps());
  ASSERT_EQ(sweeps.size(), 2u);
  EXPECT_EQ(sweeps[0].counts.Of(JobState::kCancelled), 4);
  EXPECT_EQ(sweeps[1].counts.Of(JobState::kLeased), 2);

  // The last live sweep cancels: now they stop.
  TS_ASSERT_OK_AND_ASSIGN(cancel, store_->CancelSweep("t"));
  EXPECT_EQ(cancel.cancelled, 2);
  EXPECT_EQ(cancel.kept, 0);
  TS_EXPECT_CODE(store_->Heartbeat("w", shared_[0], 1, 1000),
                 absl::StatusCode::kCancelled);
  // Resuming t brings back t's jobs only; s's cancels stand.
  TS_ASSERT_OK_AND_ASSIGN(int64_t resumed, store_->ResumeSweep("t"));
  EXPECT_EQ(resumed, 2);
  TS_ASSERT_OK_AND_ASSIGN(t, store_->Counts("t"));
  EXPECT_EQ(t.Of(JobState::kQueued), 2);
  TS_ASSERT_OK_AND_ASSIGN(s, store_->Counts("s"));
  EXPECT_EQ(s.Of(JobState::kCancelled), 4);
  TS_ASSERT_OK_AND_ASSIGN(auto ready, store_->LeaseJobs("w2", 4, 1000));
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_TRUE(Shared(ready[0].job_id) && Shared(ready[1].job_id));
  // Resuming s: its two own jobs requeued, the two t runs are s's again.
  TS_ASSERT_OK_AND_ASSIGN(resumed, store_->ResumeSweep("s"));
  EXPECT_EQ(resumed, 4);
  TS_ASSERT_OK_AND_ASSIGN(s, store_->Counts("s"));
  EXPECT_EQ(s.Of(JobState::kQueued), 2);
  EXPECT_EQ(s.Of(JobState::kLeased), 2);
}

TEST_F(SharedSweepTest, AResultForACancelledJobIsKeptDoneWins) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> l,
                          store_->LeaseJobs("w", 2, 1000));
  TS_ASSERT_OK_AND_ASSIGN(Store::CancelResult cancel, store_->CancelSweep("s"));
  EXPECT_EQ(cancel.cancelled, 4);
  TS_EXPECT_CODE(store_->Heartbeat("w", l[0].job_id, 1, 1000),
                 absl::StatusCode::kCancelled);
  // The holder's metrics and result still go in; nobody else's.
  TS_EXPECT_OK(store_->AddMetrics("w", l[0].job_id, 1, {{"loss", 5, 0.5}}));
  const std::string result = testing::TestResult(R"({"ratio_median": 0.5})");
  TS_EXPECT_OK(store_->Complete("w", l[0].job_id, 1, result, "done\n"));
  TS_EXPECT_OK(store_->Complete("w", l[0].job_id, 1, result));  // a replay
  TS_EXPECT_CODE(store_->Complete("x", l[1].job_id, 1, testing::TestResult()),
                 absl::StatusCode::kCancelled);
  TS_EXPECT_CODE(store_->AddMetrics("x", l[1].job_id, 1, {{"loss", 5, 0.5}}),
                 absl::StatusCode::kCancelled);
  TS_EXPECT_CODE(store_->Fail("w", l[1].job_id, 1, "crash"),
                 absl::StatusCode::kCancelled);
  TS_ASSERT_OK_AND_ASSIGN(JobCounts counts, store_->Counts("s"));
  EXPECT_EQ(counts.Of(JobState::kDone), 1);
  EXPECT_EQ(counts.Of(JobState::kCancelled), 3);
  TS_EXPECT_OK(store_->Result(l[0].job_id));
  TS_ASSERT_OK_AND_ASSIGN(int64_t points, store_->MetricCount(l[0].job_id));
  EXPECT_EQ(points, 1);
  // After a resume the cancelled lease is over: its late result is stale.
  TS_ASSERT_OK_AND_ASSIGN(int64_t resumed, store_->ResumeSweep("s"));
  EXPECT_EQ(resumed, 3);
  TS_EXPECT_CODE(store_->Complete("w", l[1].job_id, 1, testing::TestResult()),
                 absl::StatusCode::kFailedPrecondition);
}

TEST_F(SharedSweepTest, ASweepSubmittedWithACancelledJobWantsItAgain) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK(store_->CancelSweep("s"));
  SubmitT();
  TS_ASSERT_OK_AND_ASSIGN(JobCounts t, store_->Counts("t"));
  EXPECT_EQ(t.Of(JobState::kQueued), 2);
  TS_ASSERT_OK_AND_ASSIGN(JobCounts s, store_->Counts("s"));
  EXPECT_EQ(s.Of(JobState::kCancelled), 4);
  TS_ASSERT_OK_AND_ASSIGN(auto leases, store_->LeaseJobs("w", 4, 1000));
  EXPECT_EQ(leases.size(), 2u);
  // Submitting s again changes nothing: its cancels stand.
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(s, store_->Counts("s"));
  EXPECT_EQ(s.Of(JobState::kCancelled), 4);
}

// A file from before per-sweep cancels: each job cancelled then counts as
// cancelled by every sweep that has it.
TEST_F(SharedSweepTest, OlderFilesGetPerSweepCancels) {
  SubmitBoth();
  TS_ASSERT_OK(store_->CancelSweep("s"));
  TS_ASSERT_OK(store_->CancelSweep("t"));
  store_.reset();
  const testing::CommandResult old = testing::RunCommand(
      "sqlite3 " + dir_ +
      "/tailsweep.db 'ALTER TABLE sweep_jobs DROP COLUMN cancelled'");
  ASSERT_EQ(old.exit_code, 0) << old.err;
  Reopen();
  TS_ASSERT_OK_AND_ASSIGN(int64_t resumed, store_->ResumeSweep("t"));
  EXPECT_EQ(resumed, 2);
  TS_ASSERT_OK_AND_ASSIGN(JobCounts s, store_->Counts("s"));
  EXPECT_EQ(s.Of(JobState::kCancelled), 4);
  EXPECT_EQ(store_->IntegrityCheck().value(), "ok");
}

}  // namespace
}  // namespace tailsweep
