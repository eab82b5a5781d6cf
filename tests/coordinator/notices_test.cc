// Notices (notices.h) from a real store: a stalled job is told once, after
// its sweep's stall_after_s without a point, not while points come; a job
// retried is not "failed"; a sweep is done once.

#include "coordinator/notices.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "tests/coordinator/store_fixture.h"
#include "tests/testing/results.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

class NoticesTest : public StoreTest {
 protected:
  void Start(const std::string& outputs) {
    absl::StatusOr<SweepSpec> spec =
        ParseSweepSpec(absl::StrCat(kStoreSpec, outputs), "s.yaml");
    ASSERT_TRUE(spec.ok()) << spec.status();
    ASSERT_TRUE(store_->SubmitSweep(*spec, jobs_).ok());
    NotifierOptions o;
    o.post = [this](const std::string&, const std::string& body,
                    std::chrono::milliseconds) {
      std::lock_guard<std::mutex> lock(mu_);
      bodies_.push_back(body);
      return absl::OkStatus();
    };
    notifier_ = std::make_unique<Notifier>(o);
    notices_ = std::make_unique<Notices>(store_.get(), &clock_, notifier_.get(),
                                         NoticesOptions{});
  }
  std::vector<std::string> Told() {
    notifier_->Flush(std::chrono::seconds(30));
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }
  std::mutex mu_;
  std::vector<std::string> bodies_;
  std::unique_ptr<Notifier> notifier_;
  std::unique_ptr<Notices> notices_;
};

TEST_F(NoticesTest, AStalledJobIsToldOnceAndOnlyWhenQuiet) {
  Start("notify: [{on: [stalled], url: 'http://h/x'}]\nstall_after_s: 120\n");
  TS_ASSERT_OK_AND_ASSIGN(auto leases, store_->LeaseJobs("wa", 1, 600000));
  ASSERT_EQ(leases.size(), 1u);
  const Lease& l = leases[0];
  notices_->Progress(l.job_id, l.epoch);
  for (int i = 0; i < 5; ++i) {  // a point every 100 s: never stalled
    clock_.Advance(100'000);
    notices_->Progress(l.job_id, l.epoch);
    notices_->Scan();
  }
  EXPECT_TRUE(Told().empty());
  clock_.Advance(119'000);
  notices_->Scan();
  EXPECT_TRUE(Told().empty());
  clock_.Advance(2'000);
  notices_->Scan();
  notices_->Scan();
  std::vector<std::string> told = Told();
  ASSERT_EQ(told.size(), 1u);
  EXPECT_NE(told[0].find("\"event\":\"stalled\""), std::string::npos)
      << told[0];
  EXPECT_NE(told[0].find(l.job_id), std::string::npos);
}

TEST_F(NoticesTest, ARetriedFailureIsNotFailedAndASweepIsDoneOnce) {
  Start("notify: [{on: [failed, done, sweep_done], url: 'http://h/x'}]\n");
  // max_attempts 2: the first failure is retried (no notice).
  TS_ASSERT_OK_AND_ASSIGN(auto leases, store_->LeaseJobs("wa", 4, 600000));
  ASSERT_EQ(leases.size(), 4u);
  ASSERT_TRUE(
      store_->Fail("wa", leases[0].job_id, leases[0].epoch, "oom", "").ok());
  notices_->JobFailed(leases[0].job_id, "oom");
  EXPECT_TRUE(Told().empty());
  for (size_t i = 1; i < 4; ++i) {
    TS_ASSERT_OK(store_->Complete("wa", leases[i].job_id, leases[i].epoch,
                                  testing::TestResult()));
    notices_->JobDone(leases[i].job_id);
  }
  clock_.Advance(3600'000);  // past the retry's wait
  TS_ASSERT_OK_AND_ASSIGN(auto again, store_->LeaseJobs("wa", 1, 600000));
  ASSERT_EQ(again.size(), 1u);
  ASSERT_TRUE(
      store_->Fail("wa", again[0].job_id, again[0].epoch, "oom again", "")
          .ok());
  notices_->JobFailed(again[0].job_id, "oom again");
  notices_->JobFailed(again[0].job_id, "oom again");  // told again: the
                                                      // sweep is done once
  std::vector<std::string> told = Told();
  int done = 0, failed = 0, sweep_done = 0;
  for (const std::string& b : told) {
    done += b.find("\"event\":\"done\"") != std::string::npos;
    failed += b.find("\"event\":\"failed\"") != std::string::npos;
    sweep_done += b.find("\"event\":\"sweep_done\"") != std::string::npos;
  }
  EXPECT_EQ(done, 3);
  EXPECT_EQ(failed, 2);  // (each report of the final failure)
  EXPECT_EQ(sweep_done, 1);
}

}  // namespace
}  // namespace tailsweep
