// Sweep control in the store (store.h: SweepSettings, UpdateSweep,
// RemoveSweep, SweepHours): leasing by priority, then fair share, then grid
// order; max_running; pause; fail-fast holds released by resume; removal;
// and device hours from the lease history.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/store.h"
#include "tests/coordinator/store_fixture.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

constexpr char kResult[] = R"({"kind": "command", "resumed_from_step": 0})";

class StoreControlTest : public StoreTest {
 protected:
  // A command sweep `name` of `n` jobs (x = 0..n-1) plus `extra` spec text.
  void Submit(const std::string& name, int n, const std::string& extra = "",
              const std::string& fixed = "") {
    std::string values;
    for (int i = 0; i < n; ++i) absl::StrAppend(&values, i ? ", " : "", i);
    absl::StatusOr<SweepSpec> spec = ParseSweepSpec(
        absl::StrCat("name: ", name,
                     "\nkind: command\ncommand: [prog]\n"
                     "fixed: {sweep: ",
                     name, fixed, "}\ngrid: {x: [", values, "]}\n", extra),
        name + ".yaml");
    ASSERT_TRUE(spec.ok()) << spec.status();
    absl::StatusOr<std::vector<JobSpec>> jobs = ExpandSweep(*spec);
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    TS_ASSERT_OK(store_->SubmitSweep(*spec, *jobs));
  }
  // Leases one job to worker `w` and returns its sweep.
  std::string LeaseOne(const std::string& w = "w") {
    absl::StatusOr<std::vector<Lease>> l = store_->LeaseJobs(w, 1, 60000);
    EXPECT_TRUE(l.ok()) << l.status();
    if (!l.ok() || l->empty()) return "";
    leased_.push_back((*l)[0]);
    return (*l)[0].sweep;
  }
  void CompleteAll() {
    for (const Lease& l : leased_) {
      TS_EXPECT_OK(store_->Complete("w", l.job_id, l.epoch, kResult));
    }
    leased_.clear();
  }
  SweepSettings Settings(const std::string& sweep) {
    absl::StatusOr<Store::SweepRow> row = store_->SettingsOf(sweep);
    EXPECT_TRUE(row.ok()) << row.status();
    return row.ok() ? row->settings : SweepSettings{};
  }
  std::vector<Lease> leased_;
};

TEST_F(StoreControlTest, HigherPriorityLeasesFirstThenFairShareThenGridOrder) {
  Submit("big", 50);
  Submit("small", 4);
  Submit("urgent", 2, "priority: 10\n");
  EXPECT_EQ(LeaseOne(), "urgent");
  EXPECT_EQ(LeaseOne(), "urgent");
  // Equal priorities share: the sweep with fewer jobs running goes next,
  // the older one on a tie.
  std::vector<std::string> order;
  for (int i = 0; i < 6; ++i) order.push_back(LeaseOne());
  EXPECT_EQ(order, (std::vector<std::string>{"big", "small", "big", "small",
                                             "big", "small"}));
  // Within a sweep, grid order.
  std::vector<std::string> xs;
  for (const Lease& l : leased_) {
    if (l.sweep != "big") continue;
    for (const auto& [k, v] : l.params) {
      if (k == "x") xs.push_back(v);
    }
  }
  EXPECT_EQ(xs, (std::vector<std::string>{"0", "1", "2"}));
}

// The issue's goal: a 20-job sweep finishes while a 10,000-job one of the
// same priority runs, on one worker of 2 slots.
TEST_F(StoreControlTest, ASmallSweepFinishesWhileAHugeOneRuns) {
  Submit("huge", 10000);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(LeaseOne(), "huge");
  Submit("colleague", 20);
  int leases = 0;
  while (true) {
    absl::StatusOr<JobCounts> c = store_->Counts("colleague");
    ASSERT_TRUE(c.ok());
    if (c->Of(JobState::kDone) == 20) break;
    ASSERT_LT(leases, 200) << "the small sweep starves";
    // One slot frees, one job is leased.
    const Lease done = leased_.front();
    leased_.erase(leased_.begin());
    TS_ASSERT_OK(store_->Complete("w", done.job_id, done.epoch, kResult));
    LeaseOne();
    ++leases;
  }
  EXPECT_LE(leases, 42);
  TS_ASSERT_OK_AND_ASSIGN(JobCounts huge, store_->Counts("huge"));
  EXPECT_LT(huge.Of(JobState::kDone), 25);
}

TEST_F(StoreControlTest, MaxRunningAndPauseHoldNewLeasesOnly) {
  Submit("a", 5, "max_running: 2\n");
  EXPECT_EQ(LeaseOne(), "a");
  EXPECT_EQ(LeaseOne(), "a");
  EXPECT_EQ(LeaseOne(), "");  // at its limit
  Store::SweepUpdate pause;
  pause.paused = true;
  TS_ASSERT_OK(store_->UpdateSweep("a", pause));
  CompleteAll();
  EXPECT_EQ(LeaseOne(), "");  // paused: nothing new
  TS_ASSERT_OK_AND_ASSIGN(JobCounts c, store_->Counts("a"));
  EXPECT_EQ(c.Of(JobState::kDone), 2);  // the running ones finished
  pause.paused = false;
  Store::SweepUpdate more = pause;
  more.max_running = 0;
  TS_ASSERT_OK(store_->UpdateSweep("a", more));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(LeaseOne(), "a");
}

TEST_F(StoreControlTest, FailFastHoldsTheQueueUntilResume) {
  Submit("broken", 10, "max_failures: 2\n");
  for (int i = 0; i < 2; ++i) {
    LeaseOne();
    const Lease l = leased_.back();
    leased_.pop_back();
    TS_ASSERT_OK(store_->Fail("w", l.job_id, l.epoch, "exit 1"));
  }
  const SweepSettings held = Settings("broken");
  EXPECT_EQ(held.failures, 2);
  EXPECT_NE(held.held.find("held after 2 failed attempts (max_failures: 2)"),
            std::string::npos)
      << held.held;
  EXPECT_NE(held.held.find("tailsweep resume broken"), std::string::npos);
  clock_.Advance(120000);  // past any backoff
  EXPECT_EQ(LeaseOne(), "");
  TS_ASSERT_OK(store_->ResumeSweep("broken"));
  EXPECT_EQ(Settings("broken").held, "");
  EXPECT_EQ(Settings("broken").failures, 0);
  EXPECT_EQ(LeaseOne(), "broken");
}

TEST_F(StoreControlTest, SettingsComeFromTheSpecAndTheCommands) {
  Submit("t", 1,
         "priority: 3\ntimeout_s: 90\ntags: {team: vision}\nnotes: first\n");
  SweepSettings s = Settings("t");
  EXPECT_EQ(s.priority, 3);
  EXPECT_EQ(s.timeout_s, 90);
  EXPECT_EQ(s.notes, "first");
  ASSERT_EQ(s.tags.size(), 1u);
  EXPECT_EQ(LeaseOne(), "t");
  EXPECT_EQ(leased_[0].timeout_s, 90);
  Store::SweepUpdate u;
  u.priority = -5;
  u.tags = {{"owner", "ada"}, {"team", ""}};  // "" removes
  u.notes = "second";
  TS_ASSERT_OK_AND_ASSIGN(s, store_->UpdateSweep("t", u));
  EXPECT_EQ(s.priority, -5);
  EXPECT_EQ(
      s.tags,
      (std::vector<std::pair<std::string, std::string>>{{"owner", "ada"}}));
  EXPECT_EQ(s.notes, "second");
  // A resubmit sets only what its spec names; the rest stays.
  Submit("t", 1, "tags: {team: nlp}\n");
  s = Settings("t");
  EXPECT_EQ(s.priority, -5);
  EXPECT_EQ(s.tags.size(), 2u);
  Store::SweepUpdate bad;
  bad.priority = 5000;
  EXPECT_EQ(store_->UpdateSweep("t", bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->UpdateSweep("nope", u).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(StoreControlTest, RemoveIsRefusedWhileJobsRunUnlessForced) {
  Submit("gone", 3);
  Submit("other", 1);
  LeaseOne();  // a job of "gone" runs
  const Lease running = leased_.back();
  TS_ASSERT_OK(store_->AddMetrics("w", running.job_id, running.epoch,
                                  {{"loss", 1, 0.5}, {"loss", 2, 0.4}}));
  absl::StatusOr<Store::RemoveResult> refused =
      store_->RemoveSweep("gone", false, false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("--force"), std::string::npos);
  TS_ASSERT_OK_AND_ASSIGN(Store::RemoveResult dry,
                          store_->RemoveSweep("gone", true, true));
  EXPECT_EQ(dry.jobs, 3);
  EXPECT_EQ(dry.running, 1);
  EXPECT_EQ(dry.metric_points, 2);
  TS_ASSERT_OK(store_->Counts("gone"));  // a dry run changes nothing
  TS_ASSERT_OK_AND_ASSIGN(Store::RemoveResult done,
                          store_->RemoveSweep("gone", true, false));
  EXPECT_EQ(done.jobs, 3);
  EXPECT_EQ(store_->Counts("gone").status().code(),
            absl::StatusCode::kNotFound);
  // Its holder hears the job is gone; other sweeps are untouched.
  EXPECT_FALSE(
      store_->Heartbeat("w", running.job_id, running.epoch, 60000).ok());
  TS_ASSERT_OK_AND_ASSIGN(JobCounts other, store_->Counts("other"));
  EXPECT_EQ(other.Of(JobState::kQueued), 1);
}

TEST_F(StoreControlTest, HoursComeFromTheLeaseHistory) {
  Submit("h", 3, "", ", gpus: 2");
  // On a GPU worker: hours x 2 GPUs; the preempted attempt counts apart.
  absl::StatusOr<std::vector<Lease>> l =
      store_->LeaseJobs("g", 1, 600000, "", {2, 2}, {}, {"cuda:0", "cuda:1"});
  ASSERT_TRUE(l.ok() && l->size() == 1u) << l.status();
  clock_.Advance(1800 * 1000);
  TS_ASSERT_OK(store_->Release("g", (*l)[0].job_id, (*l)[0].epoch, "preempt"));
  l = store_->LeaseJobs("g", 1, 600000, "", {2, 2}, {}, {"cuda:0", "cuda:1"});
  ASSERT_TRUE(l.ok() && l->size() == 1u);
  clock_.Advance(3600 * 1000);
  TS_ASSERT_OK(store_->Complete("g", (*l)[0].job_id, (*l)[0].epoch, kResult));
  TS_ASSERT_OK_AND_ASSIGN(Store::SweepRow row, store_->SettingsOf("h"));
  EXPECT_DOUBLE_EQ(row.hours.gpu_hours, 3.0);  // (0.5 + 1) h x 2 GPUs
  EXPECT_DOUBLE_EQ(row.hours.preempted_gpu_hours, 1.0);
  EXPECT_DOUBLE_EQ(row.hours.cpu_hours, 0.0);
}

}  // namespace
}  // namespace tailsweep
