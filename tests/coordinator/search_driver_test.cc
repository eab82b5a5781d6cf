// The coordinator's boundary sweeps (coordinator/search_driver.h) over a real
// store: each result brings the next probe, a restart mid-search resumes it
// from the store, and nothing is added twice.

#include "coordinator/search_driver.h"

#include <gtest/gtest.h>

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_replace.h"
#include "core/schema/boundary_search.h"
#include "tests/coordinator/store_fixture.h"
#include "tests/testing/results.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

constexpr char kSearchSpec[] = R"(name: b
grid:
  kernel: [softmax, log]
fixed: {steps: 20, warmup: 2}
search: {key: lr, range: [1e-3, 1e-2], seeds: 3, extra_seeds: 0,
         tolerance: 0.2}
)";

class SearchDriverTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    TS_ASSERT_OK_AND_ASSIGN(search_, ParseSweepSpec(kSearchSpec, "b.yaml"));
  }
  // Leases every queued job and completes it: collapsed from lr 4e-3 on.
  int64_t RunQueued(SearchDriver& driver) {
    int64_t ran = 0;
    while (true) {
      absl::StatusOr<std::vector<Lease>> leases =
          store_->LeaseJobs("w", 100, 60000);
      EXPECT_TRUE(leases.ok()) << leases.status();
      if (!leases.ok() || leases->empty()) return ran;
      for (const Lease& l : *leases) {
        double lr = 0;
        for (const auto& [k, v] : l.params) {
          if (k == "lr") {
            EXPECT_TRUE(absl::SimpleAtod(v, &lr));
          }
        }
        TS_EXPECT_OK(store_->Complete(
            "w", l.job_id, l.epoch,
            testing::TestResult(lr >= 4e-3 ? R"({"collapsed": true})" : "{}")));
        driver.JobFinished();
        ++ran;
      }
    }
  }
  int64_t Jobs() {
    absl::StatusOr<std::vector<JobRow>> rows = store_->Jobs("b");
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? static_cast<int64_t>(rows->size()) : -1;
  }
  SweepSpec search_;
};

TEST_F(SearchDriverTest, EachResultBringsTheNextProbeUntilTheBracketIsNarrow) {
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> first, ExpandSweep(search_));
  TS_ASSERT_OK(store_->SubmitSweep(search_, first));
  SearchDriver driver(store_.get());
  TS_ASSERT_OK(driver.Submitted(search_));
  EXPECT_EQ(Jobs(), 2 * 2 * 3);  // two cells, both ends, three seeds
  const int64_t ran = RunQueued(driver);
  // Both ends, then ceil(log2(ln 10 / ln 1.2)) = 4 midpoints; 3 seeds each.
  EXPECT_EQ(ran, 2 * (2 + 4) * 3);
  EXPECT_EQ(Jobs(), ran);
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobRow> rows, store_->Jobs("b"));
  std::vector<SearchJob> jobs;
  std::set<int64_t> positions;
  for (const JobRow& r : rows) {
    jobs.push_back({r.cell, r.state, r.result_json});
    positions.insert(r.position);
  }
  EXPECT_EQ(positions.size(), rows.size()) << "grid positions repeat";
  for (const CellSearch& c : PlanSearch(search_, jobs)) {
    EXPECT_EQ(c.state, CellSearch::State::kFound);
    EXPECT_LT(c.bracket_lo, 4e-3);
    EXPECT_GE(c.bracket_hi, 4e-3);
  }
  // The driver's own plan (GetBoundaries) is that plan.
  TS_ASSERT_OK_AND_ASSIGN(std::vector<CellSearch> kept, driver.Plan("b"));
  const std::vector<CellSearch> fresh = PlanSearch(search_, jobs);
  ASSERT_EQ(kept.size(), fresh.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].cell, fresh[i].cell);
    EXPECT_EQ(kept[i].state, fresh[i].state);
    EXPECT_EQ(kept[i].estimate, fresh[i].estimate);
    EXPECT_EQ(kept[i].runs, fresh[i].runs);
  }
  // Submitting the spec again adds nothing.
  TS_ASSERT_OK_AND_ASSIGN(SubmitResult again,
                          store_->SubmitSweep(search_, first));
  EXPECT_EQ(again.added, 0);
  TS_ASSERT_OK(driver.Submitted(search_));
  EXPECT_EQ(Jobs(), ran);
}

TEST_F(SearchDriverTest, ARestartMidSearchAddsTheMissingProbeOnceAtStart) {
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> first, ExpandSweep(search_));
  TS_ASSERT_OK(store_->SubmitSweep(search_, first));
  {
    // Results come in while no driver runs (it died with the coordinator).
    SearchDriver gone(store_.get());
    TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                            store_->LeaseJobs("w", 100, 60000));
    for (const Lease& l : leases) {
      TS_ASSERT_OK(
          store_->Complete("w", l.job_id, l.epoch, testing::TestResult()));
    }
  }
  EXPECT_EQ(Jobs(), 12);
  Reopen();
  SearchDriver driver(store_.get());
  TS_ASSERT_OK(driver.Start());
  // Neither end collapsed: the boundary is above the range, nothing to add.
  EXPECT_EQ(Jobs(), 12);
  // A spec whose ends disagree: the midpoint comes at start, once.
  TS_ASSERT_OK_AND_ASSIGN(
      SweepSpec wide,
      ParseSweepSpec(
          absl::StrReplaceAll(kSearchSpec, {{"name: b", "name: w"},
                                            {"steps: 20", "steps: 21"},
                                            {"1e-2]", "1e-1]"}}),
          "w.yaml"));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> ends, ExpandSweep(wide));
  TS_ASSERT_OK(store_->SubmitSweep(wide, ends));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                          store_->LeaseJobs("w", 100, 60000));
  ASSERT_EQ(leases.size(), 12u);
  for (const Lease& l : leases) {
    bool high = false;
    for (const auto& [k, v] : l.params)
      high = high || (k == "lr" && v == "0.1");
    TS_ASSERT_OK(store_->Complete(
        "w", l.job_id, l.epoch,
        testing::TestResult(high ? R"({"collapsed": true})" : "{}")));
  }
  Reopen();
  for (int restart = 0; restart < 2; ++restart) {
    SearchDriver again(store_.get());
    TS_ASSERT_OK(again.Start());
    TS_ASSERT_OK_AND_ASSIGN(std::vector<JobRow> rows, store_->Jobs("w"));
    EXPECT_EQ(rows.size(), 12u + 2 * 3) << "restart " << restart;
  }
}

TEST_F(SearchDriverTest, ThePlanFollowsTheJobsAndOnlySearchesHaveOne) {
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> first, ExpandSweep(search_));
  TS_ASSERT_OK(store_->SubmitSweep(search_, first));
  SearchDriver driver(store_.get());
  TS_ASSERT_OK(driver.Submitted(search_));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<CellSearch> plan, driver.Plan("b"));
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].probes[0].pending, 3);
  // A cancel changes the jobs without a finished job: the plan sees it.
  TS_ASSERT_OK(store_->CancelSweep("b").status());
  TS_ASSERT_OK_AND_ASSIGN(plan, driver.Plan("b"));
  EXPECT_EQ(plan[0].probes[0].pending, 0);
  // A sweep without a search, and none at all.
  TS_ASSERT_OK_AND_ASSIGN(
      SweepSpec plain,
      ParseSweepSpec("name: p\ngrid: {kernel: [log]}\n", "p.yaml"));
  TS_ASSERT_OK_AND_ASSIGN(std::vector<JobSpec> jobs, ExpandSweep(plain));
  TS_ASSERT_OK(store_->SubmitSweep(plain, jobs));
  EXPECT_EQ(driver.Plan("p").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(driver.Plan("nope").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tailsweep
