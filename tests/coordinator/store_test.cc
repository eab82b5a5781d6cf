#include "coordinator/store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "tests/coordinator/store_fixture.h"
#include "tests/testing/results.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

// Lease deadlines run on the steady clock, in memory: a wall-clock step does
// nothing to them, and a lease the store has not seen renewed (granted
// before a restart, or across a pause) gets a full period first.
TEST_F(StoreTest, LeasesRunOnTheSteadyClockAndSurviveRestartsAndPauses) {
  ASSERT_TRUE(store_->SubmitSweep(spec_, jobs_).ok());
  TS_ASSERT_OK_AND_ASSIGN(auto leases, store_->LeaseJobs("wa", 2, 1000));
  ASSERT_EQ(leases.size(), 2u);

  // The wall clock jumps a day forward: nothing expires.
  clock_.StepWall(24 * 3600 * 1000);
  TS_ASSERT_OK_AND_ASSIGN(int64_t expired, Expire());
  EXPECT_EQ(expired, 0);
  // ... or back: a renewed lease still ends a period after the renewal.
  clock_.StepWall(-48 * 3600 * 1000);
  clock_.Advance(900);
  ASSERT_TRUE(store_->Heartbeat("wa", leases[0].job_id, 1, 1000).ok());
  clock_.Advance(200);  // leases[1] past its deadline, leases[0] renewed
  TS_ASSERT_OK_AND_ASSIGN(expired, Expire());
  EXPECT_EQ(expired, 1);
  EXPECT_EQ(Leased(), 1);

  // The coordinator is down far longer than a lease, then starts again:
  // the live lease gets a full period from then, not an expiry.
  clock_.Advance(60'000);
  Reopen();
  TS_ASSERT_OK_AND_ASSIGN(expired, Expire());
  EXPECT_EQ(expired, 0);
  clock_.Advance(900);
  TS_ASSERT_OK_AND_ASSIGN(expired, Expire());
  EXPECT_EQ(expired, 0);
  ASSERT_TRUE(store_->Heartbeat("wa", leases[0].job_id, 1, 1000).ok());

  // A pause of this process: no one could renew; a full period again.
  clock_.Advance(30'000);
  store_->RestartLeaseClocks(clock_.SteadyMs());
  TS_ASSERT_OK_AND_ASSIGN(expired, Expire());
  EXPECT_EQ(expired, 0);
  // Never renewed after that: it expires one period later.
  clock_.Advance(1001);
  TS_ASSERT_OK_AND_ASSIGN(expired, Expire());
  EXPECT_EQ(expired, 1);
  EXPECT_EQ(Leased(), 0);
}

// One run per stored curve: a second attempt resumed from step 10 replaces
// the first attempt's points past 10, and the first attempt's points past
// where the second ended go.
TEST_F(StoreTest, AResumedAttemptsPointsReplaceTheFirstAttemptsPastItsStart) {
  ASSERT_TRUE(store_->SubmitSweep(spec_, jobs_).ok());
  TS_ASSERT_OK_AND_ASSIGN(auto first, store_->LeaseJobs("wa", 1, 1000));
  const std::string job = first[0].job_id;
  ASSERT_TRUE(store_
                  ->AddMetrics("wa", job, 1,
                               {{"loss", 5, 1.0},
                                {"loss", 10, 0.9},
                                {"loss", 15, 0.8},
                                {"loss", 20, 0.7}})
                  .ok());
  clock_.Advance(1001);
  ASSERT_TRUE(Expire().ok());
  clock_.Advance(60'000);  // past the retry backoff
  TS_ASSERT_OK_AND_ASSIGN(auto second, store_->LeaseJobs("wb", 1, 1000));
  ASSERT_EQ(second[0].job_id, job);
  ASSERT_EQ(second[0].epoch, 2);
  ASSERT_TRUE(store_->AddMetrics("wb", job, 2, {{"loss", 15, 0.85}}).ok());
  // A resend changes nothing.
  ASSERT_TRUE(store_->AddMetrics("wb", job, 2, {{"loss", 15, 0.85}}).ok());
  ASSERT_TRUE(
      store_
          ->Complete("wb", job, 2,
                     testing::TestResult(
                         R"({"steps_done": 15, "resumed_from_step": 10})"))
          .ok());
  Store::MetricsQuery q;
  q.job_id = job;
  TS_ASSERT_OK_AND_ASSIGN(std::vector<MetricPoint> stored, store_->Metrics(q));
  std::vector<std::pair<int64_t, double>> loss;
  for (const MetricPoint& p : stored) loss.emplace_back(p.step, p.value);
  EXPECT_EQ(loss, (std::vector<std::pair<int64_t, double>>{
                      {5, 1.0}, {10, 0.9}, {15, 0.85}}));
}

// Idle workers cost nothing durable: a poll that finds nothing queued
// commits no transaction; the worker is still listed (from memory until
// the once-a-minute upkeep writes it).
TEST_F(StoreTest, AnIdlePollWritesNothing) {
  const int64_t before = store_->WriterTransactions();
  for (int i = 0; i < 50; ++i) {
    TS_ASSERT_OK_AND_ASSIGN(
        auto none,
        store_->LeaseJobs("idle", 2, 1000, absl::StrCat("idle/", i)));
    EXPECT_TRUE(none.empty());
  }
  EXPECT_EQ(store_->WriterTransactions(), before);
  TS_ASSERT_OK_AND_ASSIGN(auto workers, store_->Workers());
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].worker_id, "idle");
  EXPECT_EQ(workers[0].last_seen_ms, clock_.WallMs());

  // The answer to idle/49 was "nothing" and may have been lost: its retry
  // after jobs arrived leases them, and a retry of that gets them again.
  ASSERT_TRUE(store_->SubmitSweep(spec_, jobs_).ok());
  TS_ASSERT_OK_AND_ASSIGN(auto got,
                          store_->LeaseJobs("idle", 2, 1000, "idle/49"));
  ASSERT_EQ(got.size(), 2u);
  TS_ASSERT_OK_AND_ASSIGN(auto again,
                          store_->LeaseJobs("idle", 2, 1000, "idle/49"));
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].job_id, got[0].job_id);
  EXPECT_EQ(again[1].job_id, got[1].job_id);

  // The upkeep writes the idle worker down; after a restart it is there.
  ASSERT_TRUE(Expire().ok());
  Reopen();
  TS_ASSERT_OK_AND_ASSIGN(workers, store_->Workers());
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].jobs_held, 2);
}

TEST_F(StoreTest, ALeaseExpiresOnlyAfterItsGrace) {
  grace_ms_ = 5000;
  Reopen();
  ASSERT_TRUE(store_->SubmitSweep(spec_, jobs_).ok());
  TS_ASSERT_OK_AND_ASSIGN(auto leases, store_->LeaseJobs("wa", 1, 1000));
  ASSERT_EQ(leases.size(), 1u);
  clock_.Advance(1000 + 5000);  // at deadline + grace: still held
  TS_ASSERT_OK_AND_ASSIGN(int64_t expired, Expire());
  EXPECT_EQ(expired, 0);
  // In the grace the holder may still renew (its own clock said it may).
  ASSERT_TRUE(store_->Heartbeat("wa", leases[0].job_id, 1, 1000).ok());
  clock_.Advance(6001);
  TS_ASSERT_OK_AND_ASSIGN(expired, Expire());
  EXPECT_EQ(expired, 1);
}

TEST_F(StoreTest, SubmitIsIdempotentExtendsAndRefusesChangedFixedValues) {
  TS_ASSERT_OK_AND_ASSIGN(SubmitResult first,
                          store_->SubmitSweep(spec_, jobs_));
  EXPECT_EQ(first.added, 4);
  TS_ASSERT_OK_AND_ASSIGN(SubmitResult again,
                          store_->SubmitSweep(spec_, jobs_));
  EXPECT_EQ(again.added, 0);
  EXPECT_EQ(again.existing, 4);
  SweepSpec wider = spec_;
  wider.grid.push_back({"norm", {"post", "pre"}});
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> more, ExpandSweep(wider));
  TS_ASSERT_OK_AND_ASSIGN(SubmitResult extended,
                          store_->SubmitSweep(wider, more));
  // norm=post is the default, so those four cells are the old jobs.
  EXPECT_EQ(extended.added, 4);
  EXPECT_EQ(extended.existing, 4);
  SweepSpec changed = spec_;
  changed.fixed[0].second = "30";
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> changed_jobs,
                          ExpandSweep(changed));
  TS_EXPECT_CODE(store_->SubmitSweep(changed, changed_jobs),
                 absl::StatusCode::kFailedPrecondition);
  TS_ASSERT_OK_AND_ASSIGN(JobCounts counts, store_->Counts("s"));
  EXPECT_EQ(counts.total(), 8);
  EXPECT_EQ(counts.Of(JobState::kQueued), 8);
}

TEST_F(StoreTest, LeasesAreExclusiveAndExpiryFencesTheOldHolder) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> a,
                          store_->LeaseJobs("wa", 2, 1000));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> b,
                          store_->LeaseJobs("wb", 5, 1000));
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  std::set<std::string> ids;
  for (const auto& l : a) ids.insert(l.job_id);
  for (const auto& l : b) ids.insert(l.job_id);
  EXPECT_EQ(ids.size(), 4u);  // no job leased twice
  EXPECT_EQ(a[0].epoch, 1);
  EXPECT_EQ(a[0].sweep, "s");
  EXPECT_EQ(a[0].params.size(), 26u);
  TS_ASSERT_OK_AND_ASSIGN(auto none, store_->LeaseJobs("wc", 5, 1000));
  EXPECT_TRUE(none.empty());

  // A heartbeat renews; a worker that does not hold the job is refused.
  clock_.Advance(800);
  TS_ASSERT_OK_AND_ASSIGN(int64_t deadline,
                          store_->Heartbeat("wa", a[0].job_id, 1, 1000));
  EXPECT_EQ(deadline, clock_.WallMs() + 1000);
  // Another worker acting on a lease it does not hold.
  TS_EXPECT_CODE(store_->Heartbeat("wb", a[0].job_id, 1, 1000),
                 absl::StatusCode::kPermissionDenied);
  TS_EXPECT_CODE(store_->AddMetrics("wb", a[0].job_id, 1, {{"loss", 1, 0.5}}),
                 absl::StatusCode::kPermissionDenied);
  TS_EXPECT_CODE(store_->Complete("wb", a[0].job_id, 1, testing::TestResult()),
                 absl::StatusCode::kPermissionDenied);
  clock_.Advance(500);  // a[1] expired, a[0] renewed
  TS_ASSERT_OK_AND_ASSIGN(int64_t expired, Expire());
  EXPECT_EQ(expired, 3);  // a[1] and both of wb's
  TS_EXPECT_CODE(store_->Heartbeat("wa", a[1].job_id, 1, 1000),
                 absl::StatusCode::kFailedPrecondition);
  clock_.Advance(1000);  // past the retry backoff
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> c,
                          store_->LeaseJobs("wc", 5, 1000));
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].epoch, 2);
  EXPECT_EQ(c[0].attempt, 2);
  // The old holder's writes are refused by epoch.
  const Lease& relet = c[0];
  TS_EXPECT_CODE(store_->AddMetrics("wa", relet.job_id, 1, {{"loss", 1, 0.5}}),
                 absl::StatusCode::kFailedPrecondition);
  TS_EXPECT_CODE(store_->Complete("wa", relet.job_id, 1, testing::TestResult()),
                 absl::StatusCode::kFailedPrecondition);
  TS_ASSERT_OK(store_->Complete("wc", relet.job_id, 2,
                                testing::TestResult(R"({"ratio_median": 1})")));
}

TEST_F(StoreTest, MetricsAndCompletionAreIdempotent) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> l,
                          store_->LeaseJobs("w", 1, 1000));
  const std::vector<MetricPoint> batch = {
      {"loss", 10, 0.5}, {"lr", 10, 1e-3}, {"loss", 20, 0.4}};
  TS_ASSERT_OK(store_->AddMetrics("w", l[0].job_id, l[0].epoch, batch));
  TS_ASSERT_OK(store_->AddMetrics("w", l[0].job_id, l[0].epoch, batch));
  TS_ASSERT_OK_AND_ASSIGN(int64_t n, store_->MetricCount(l[0].job_id));
  EXPECT_EQ(n, 3);
  TS_ASSERT_OK(store_->Complete("w", l[0].job_id, l[0].epoch,
                                testing::TestResult(R"({"a": 1})")));
  TS_ASSERT_OK(store_->Complete("w", l[0].job_id, l[0].epoch,
                                testing::TestResult(R"({"a": 2})")));
  TS_ASSERT_OK_AND_ASSIGN(std::string result, store_->Result(l[0].job_id));
  EXPECT_EQ(result,
            testing::TestResult(R"({"a": 1})"));  // the replay changed nothing
  TS_ASSERT_OK(
      store_->AddMetrics("w", l[0].job_id, l[0].epoch, batch));  // late resend
  TS_EXPECT_CODE(store_->Result(jobs_[3].id), absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, FailuresBackOffThenFailWithTheLastError) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> l,
                          store_->LeaseJobs("w", 1, 1000));
  const std::string job = l[0].job_id;
  TS_ASSERT_OK(store_->Fail("w", job, 1, "crash one"));
  // Backing off: the other jobs are leased first, this one is not ready yet.
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> next,
                          store_->LeaseJobs("w", 4, 1000));
  EXPECT_EQ(next.size(), 3u);
  for (const auto& x : next) EXPECT_NE(x.job_id, job);
  clock_.Advance(1001);
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> retry,
                          store_->LeaseJobs("w", 4, 1000));
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(retry[0].attempt, 2);
  TS_ASSERT_OK(store_->Fail("w", job, 2, "crash two"));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobRow> rows, store_->Jobs("s"));
  auto it = std::find_if(rows.begin(), rows.end(),
                         [&](const JobRow& r) { return r.job_id == job; });
  ASSERT_NE(it, rows.end());
  EXPECT_EQ(it->state, JobState::kFailed);
  EXPECT_EQ(it->last_error, "crash two");
}

TEST_F(StoreTest, ADoneJobShowsNoErrorOfAnEarlierAttempt) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> l,
                          store_->LeaseJobs("w", 1, 1000));
  ASSERT_EQ(l.size(), 1u);
  const std::string job = l[0].job_id;
  TS_ASSERT_OK(store_->Fail("w", job, 1, "crash one"));
  clock_.Advance(60000);  // past the retry's backoff
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> retry,
                          store_->LeaseJobs("w", 4, 1000));
  auto again = std::find_if(retry.begin(), retry.end(),
                            [&](const Lease& r) { return r.job_id == job; });
  ASSERT_NE(again, retry.end());
  TS_ASSERT_OK(store_->Complete("w", job, again->epoch, testing::TestResult()));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobRow> rows, store_->Jobs("s"));
  auto it = std::find_if(rows.begin(), rows.end(),
                         [&](const JobRow& r) { return r.job_id == job; });
  ASSERT_NE(it, rows.end());
  EXPECT_EQ(it->state, JobState::kDone);
  EXPECT_EQ(it->last_error, "");
}

// What `status` says early stopping saved: done runs whose result has an
// early_stop, and their config's steps less the steps they ran.
TEST_F(StoreTest, EarlyStopsCountTheRunsAndTheStepsTheyDidNotRun) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> l,
                          store_->LeaseJobs("w", 3, 1000));
  ASSERT_EQ(l.size(), 3u);
  TS_ASSERT_OK(store_->Complete(
      "w", l[0].job_id, l[0].epoch,
      testing::TestResult(R"({"steps_done": 40, "early_stop": "collapse",
                              "collapsed": true, "collapse_step": 30,
                              "config": {"steps": 100}})")));
  TS_ASSERT_OK(store_->Complete(
      "w", l[1].job_id, l[1].epoch,
      testing::TestResult(R"({"steps_done": 100, "config": {"steps": 100}})")));
  TS_ASSERT_OK_AND_ASSIGN(Store::EarlyStops early, store_->EarlyStopsOf("s"));
  EXPECT_EQ(early.runs, 1);
  EXPECT_EQ(early.steps_saved, 60);
  TS_EXPECT_CODE(store_->EarlyStopsOf("nope"), absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, CancelStopsHoldersAndResumeRerunsOnlyFailedAndCancelled) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> l,
                          store_->LeaseJobs("w", 2, 1000));
  TS_ASSERT_OK(
      store_->Complete("w", l[0].job_id, l[0].epoch, testing::TestResult()));
  TS_ASSERT_OK_AND_ASSIGN(Store::CancelResult cancelled,
                          store_->CancelSweep("s"));
  EXPECT_EQ(cancelled.cancelled, 3);
  EXPECT_EQ(cancelled.kept, 0);
  TS_EXPECT_CODE(store_->Heartbeat("w", l[1].job_id, l[1].epoch, 1000),
                 absl::StatusCode::kCancelled);
  TS_ASSERT_OK_AND_ASSIGN(int64_t resumed, store_->ResumeSweep("s"));
  EXPECT_EQ(resumed, 3);
  TS_ASSERT_OK_AND_ASSIGN(JobCounts counts, store_->Counts("s"));
  EXPECT_EQ(counts.Of(JobState::kDone), 1);
  EXPECT_EQ(counts.Of(JobState::kQueued), 3);
  TS_EXPECT_CODE(store_->ResumeSweep("nope"), absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, StatePersistsAcrossReopenAndTheFileIsIntact) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> l,
                          store_->LeaseJobs("w", 1, 1000));
  TS_ASSERT_OK(store_->Complete("w", l[0].job_id, l[0].epoch,
                                testing::TestResult(R"({"x": 1})")));
  Reopen();
  TS_ASSERT_OK_AND_ASSIGN(JobCounts counts, store_->Counts("s"));
  EXPECT_EQ(counts.Of(JobState::kDone), 1);
  EXPECT_EQ(counts.Of(JobState::kQueued), 3);
  TS_ASSERT_OK_AND_ASSIGN(std::string check, store_->IntegrityCheck());
  EXPECT_EQ(check, "ok");
  // The schema is queryable with plain SQL, as docs/cli.md documents.
  const testing::CommandResult q =
      testing::RunCommand("sqlite3 " + dir_ +
                          "/tailsweep.db \"SELECT state, COUNT(*) FROM jobs "
                          "GROUP BY state ORDER BY state\"");
  EXPECT_EQ(q.out, "done|1\nqueued|3\n") << q.err;
}

TEST_F(StoreTest, ValuesNeverBecomeSql) {
  SweepSpec evil = spec_;
  evil.name = "x'); DROP TABLE jobs; --";
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> jobs, ExpandSweep(evil));
  TS_ASSERT_OK(store_->SubmitSweep(evil, jobs));
  TS_ASSERT_OK_AND_ASSIGN(JobCounts counts, store_->Counts(evil.name));
  EXPECT_EQ(counts.Of(JobState::kQueued), 4);
  TS_ASSERT_OK_AND_ASSIGN(auto leases,
                          store_->LeaseJobs("w' OR '1'='1", 1, 1000));
  ASSERT_EQ(leases.size(), 1u);
  TS_EXPECT_CODE(store_->Heartbeat("w", leases[0].job_id, 1, 1000),
                 absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->IntegrityCheck().value(), "ok");
}

TEST_F(StoreTest, ARetriedLeaseCallGetsTheSameLeases) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  TS_ASSERT_OK_AND_ASSIGN(auto first, store_->LeaseJobs("w", 2, 1000, "w/1"));
  TS_ASSERT_OK_AND_ASSIGN(auto again, store_->LeaseJobs("w", 2, 1000, "w/1"));
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(again.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(again[i].job_id, first[i].job_id);
    EXPECT_EQ(again[i].epoch, first[i].epoch);
  }
  TS_ASSERT_OK_AND_ASSIGN(JobCounts counts, store_->Counts("s"));
  EXPECT_EQ(counts.Of(JobState::kLeased), 2);
  TS_ASSERT_OK_AND_ASSIGN(auto next, store_->LeaseJobs("w", 2, 1000, "w/2"));
  EXPECT_EQ(next.size(), 2u);
  // A retry that arrives after its leases ended leases nothing new.
  TS_ASSERT_OK(
      store_->Complete("w", first[0].job_id, 1, testing::TestResult()));
  TS_ASSERT_OK(
      store_->Complete("w", first[1].job_id, 1, testing::TestResult()));
  TS_ASSERT_OK_AND_ASSIGN(auto late, store_->LeaseJobs("w", 2, 1000, "w/1"));
  EXPECT_TRUE(late.empty());
  TS_ASSERT_OK_AND_ASSIGN(JobCounts after, store_->Counts("s"));
  EXPECT_EQ(after.Of(JobState::kQueued), 0);
  EXPECT_EQ(after.Of(JobState::kLeased), 2);
}

TEST_F(StoreTest, JobsComeInGridOrderPageByPage) {
  TS_ASSERT_OK(store_->SubmitSweep(spec_, jobs_));
  Store::JobsQuery page;
  page.sweep = "s";
  page.limit = 3;
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobRow> first, store_->Jobs(page));
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].job_id, jobs_[0].id);
  EXPECT_EQ(first[2].position, 2);
  page.after_position = 2;
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobRow> rest, store_->Jobs(page));
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].job_id, jobs_[3].id);
  page.sweep = "nope";
  TS_EXPECT_CODE(store_->Jobs(page), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tailsweep
