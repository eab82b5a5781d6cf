// The Coordinator's read RPCs: metric series, sweeps, job logs, results of
// train and tails sweeps.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/schema/job_result.h"
#include "tests/coordinator/service_fixture.h"
#include "tests/testing/results.h"

namespace tailsweep {
namespace {

using ServiceReadsTest = ServiceTest;

TEST_F(ServiceReadsTest, EveryReadOfASweepCountsItsEarlyStops) {
  const v1::JobLease lease = SubmitAndLease();
  v1::CompleteJobRequest done;
  done.set_job_id(lease.job_id());
  done.set_epoch(lease.epoch());
  done.set_worker_id("w1");
  done.set_result_json(testing::TestResult(
      R"({"steps_done": 40, "early_stop": "collapse", "collapsed": true,
          "collapse_step": 30, "config": {"steps": 100}})"));
  v1::CompleteJobResponse done_resp;
  ASSERT_TRUE(stub_->CompleteJob(Context().get(), done, &done_resp).ok());
  v1::ListSweepsResponse list;
  ASSERT_TRUE(
      stub_->ListSweeps(Context().get(), v1::ListSweepsRequest(), &list).ok());
  ASSERT_EQ(list.sweeps_size(), 1);
  EXPECT_EQ(list.sweeps(0).counts().runs_stopped_early(), 1);
  EXPECT_EQ(list.sweeps(0).counts().steps_saved(), 60);
  v1::GetSweepRequest one;
  one.set_sweep("svc");
  v1::GetSweepResponse sweep;
  ASSERT_TRUE(stub_->GetSweep(Context().get(), one, &sweep).ok());
  EXPECT_EQ(sweep.sweep().counts().runs_stopped_early(), 1);
  EXPECT_EQ(sweep.sweep().counts().steps_saved(), 60);
}

TEST_F(ServiceReadsTest, GetSweepGivesTheSpecAsSubmittedAndItsFixedValues) {
  grpc::Status status;
  Submit(kSpec, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::GetSweepRequest req;
  req.set_sweep("svc");
  v1::GetSweepResponse resp;
  ASSERT_TRUE(stub_->GetSweep(Context().get(), req, &resp).ok());
  EXPECT_EQ(resp.spec_yaml(), kSpec);
  EXPECT_EQ(resp.sweep().name(), "svc");
  EXPECT_EQ(resp.sweep().kind(), "train");
  EXPECT_FALSE(resp.version().empty());
  EXPECT_GT(resp.fixed_size(), 0);
  req.set_sweep("nope");
  const grpc::Status s = stub_->GetSweep(Context().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("svc"), std::string::npos)
      << s.error_message();
}

TEST_F(ServiceReadsTest, AResultOfTheWrongShapeIsRefusedAndChangesNothing) {
  const v1::JobLease lease = SubmitAndLease();
  v1::CompleteJobRequest done;
  done.set_worker_id("w1");
  done.set_job_id(lease.job_id());
  done.set_epoch(lease.epoch());
  done.set_result_json(R"({"ratio_median": "high"})");
  v1::CompleteJobResponse resp;
  const grpc::Status s = stub_->CompleteJob(Context().get(), done, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("steps_done"), std::string::npos)
      << s.error_message();
  // Still leased: a correct result is taken.
  done.set_result_json(testing::TestResult(R"({"ratio_median": 0.8})"));
  done.set_stderr_tail("train: 20/20 done\n");
  EXPECT_TRUE(stub_->CompleteJob(Context().get(), done, &resp).ok());

  v1::GetJobLogRequest log_req;
  log_req.set_job(lease.job_id().substr(0, 8));
  v1::GetJobLogResponse log;
  ASSERT_TRUE(stub_->GetJobLog(Context().get(), log_req, &log).ok());
  EXPECT_EQ(log.job_id(), lease.job_id());
  EXPECT_EQ(log.state(), "done");
  ASSERT_EQ(log.logs_size(), 1);
  EXPECT_EQ(log.logs(0).outcome(), "done");
  EXPECT_EQ(log.logs(0).stderr_tail(), "train: 20/20 done\n");
  log_req.set_job("0000000000");
  EXPECT_EQ(stub_->GetJobLog(Context().get(), log_req, &log).error_code(),
            grpc::StatusCode::NOT_FOUND);
  log_req.set_job("xyz");
  EXPECT_EQ(stub_->GetJobLog(Context().get(), log_req, &log).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  v1::ListSweepsResponse sweeps;
  ASSERT_TRUE(stub_->ListSweeps(Context().get(), {}, &sweeps).ok());
  ASSERT_EQ(sweeps.sweeps_size(), 1);
  EXPECT_EQ(sweeps.sweeps(0).name(), "svc");
  EXPECT_EQ(sweeps.sweeps(0).counts().done(), 1);
  EXPECT_EQ(sweeps.sweeps(0).counts().queued(), 1);

  v1::ListJobsRequest failed_req;
  failed_req.set_sweep("svc");
  failed_req.set_state("done");
  v1::ListJobsResponse jobs;
  ASSERT_TRUE(stub_->ListJobs(Context().get(), failed_req, &jobs).ok());
  ASSERT_EQ(jobs.jobs_size(), 1);
  failed_req.set_state("finished");
  EXPECT_EQ(stub_->ListJobs(Context().get(), failed_req, &jobs).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ServiceReadsTest, TrainResultsArePivotedByTheGroupKey) {
  const v1::JobLease lease = SubmitAndLease();
  v1::CompleteJobRequest done;
  done.set_worker_id("w1");
  done.set_job_id(lease.job_id());
  done.set_epoch(lease.epoch());
  done.set_result_json(testing::TestResult(R"({"ratio_median": 0.8})"));
  v1::CompleteJobResponse ok;
  ASSERT_TRUE(stub_->CompleteJob(Context().get(), done, &ok).ok());
  v1::GetResultsRequest req;
  req.set_sweep("svc");
  req.set_over_seeds(true);
  v1::GetResultsResponse resp;
  ASSERT_TRUE(stub_->GetResults(Context().get(), req, &resp).ok());
  EXPECT_EQ(resp.kind(), "train");
  EXPECT_EQ(resp.jobs(), 2);
  EXPECT_EQ(resp.done(), 1);
  ASSERT_EQ(resp.pivot().columns_size(), 2);  // softmax, log
  EXPECT_EQ(resp.pivot().group_by(), "kernel");
  ASSERT_EQ(resp.pivot().rows_size(), 1);
  EXPECT_EQ(resp.pivot().rows(0).label(), "-");
  // Each column's cell points at the row of that kernel.
  for (int c = 0; c < 2; ++c) {
    const int cell = resp.pivot().rows(0).cells(c);
    ASSERT_GE(cell, 0);
    EXPECT_EQ(resp.rows(cell).cell(0).value(), resp.pivot().columns(c));
  }
}

// 3 x 3 cells (kernel x norm x lr...): ListJobs pages in grid order, and
// GetResults pages by pivot rows whose cells index into the page.
constexpr char kGrid[] = R"(name: grid
grid:
  lr: [0.001, 0.002, 0.003]
  kernel: [softmax, log, linear]
fixed:
  steps: 20
  warmup: 2
)";

TEST_F(ServiceReadsTest, ListJobsPagesInGridOrder) {
  grpc::Status status;
  Submit(kGrid, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::ListJobsRequest req;
  req.set_sweep("grid");
  v1::ListJobsResponse all;
  ASSERT_TRUE(stub_->ListJobs(Context().get(), req, &all).ok());
  ASSERT_EQ(all.jobs_size(), 9);
  EXPECT_TRUE(all.next_page_token().empty());
  req.set_page_size(4);
  std::vector<std::string> paged;
  int pages = 0;
  while (true) {
    v1::ListJobsResponse page;
    ASSERT_TRUE(stub_->ListJobs(Context().get(), req, &page).ok());
    ++pages;
    EXPECT_LE(page.jobs_size(), 4);
    for (const auto& j : page.jobs()) paged.push_back(j.job_id());
    if (page.next_page_token().empty()) break;
    req.set_page_token(page.next_page_token());
  }
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(paged.size(), 9u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(paged[i], all.jobs(i).job_id());
  v1::ListJobsResponse page;
  req.set_page_token("-5");
  EXPECT_EQ(stub_->ListJobs(Context().get(), req, &page).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  req.set_page_token("");
  req.set_page_size(10001);
  EXPECT_EQ(stub_->ListJobs(Context().get(), req, &page).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ServiceReadsTest, ResultsPageByPivotRowsWithTheirCells) {
  grpc::Status status;
  Submit(kGrid, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::LeaseJobsRequest lease;
  lease.set_worker_id("w1");
  lease.set_max_jobs(9);
  lease.set_lease_ms(5000);
  v1::LeaseJobsResponse leases;
  ASSERT_TRUE(stub_->LeaseJobs(Context().get(), lease, &leases).ok());
  auto complete = [&](int i) {
    v1::CompleteJobRequest done;
    done.set_worker_id("w1");
    done.set_job_id(leases.leases(i).job_id());
    done.set_epoch(leases.leases(i).epoch());
    done.set_result_json(testing::TestResult(
        absl::StrCat(R"({"ratio_median": )", 0.5 + i / 100.0, "}")));
    v1::CompleteJobResponse ok;
    return stub_->CompleteJob(Context().get(), done, &ok);
  };
  ASSERT_EQ(leases.leases_size(), 9);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(complete(i).ok());
  v1::GetResultsRequest req;
  req.set_sweep("grid");
  v1::GetResultsResponse whole;
  ASSERT_TRUE(stub_->GetResults(Context().get(), req, &whole).ok());
  ASSERT_EQ(whole.pivot().rows_size(), 3);  // one per lr
  ASSERT_EQ(whole.rows_size(), 9);
  EXPECT_TRUE(whole.next_page_token().empty());
  // One pivot row a page: each page has that row's three cells, indexed
  // into the page, and they are the unpaged answer's. All pages come from
  // the snapshot of the first: a result that arrives meanwhile shows in
  // the next read.
  req.set_page_size(1);
  int pages = 0;
  std::vector<int64_t> positions;
  while (true) {
    v1::GetResultsResponse page;
    ASSERT_TRUE(stub_->GetResults(Context().get(), req, &page).ok());
    ASSERT_EQ(page.pivot().rows_size(), 1);
    ASSERT_EQ(page.rows_size(), 3);
    EXPECT_EQ(page.pivot().columns_size(), 3);
    EXPECT_EQ(page.done(), 8);
    if (pages == 0) {
      ASSERT_TRUE(complete(8).ok());
    }
    const v1::PivotRow& mine = page.pivot().rows(0);
    const v1::PivotRow& theirs = whole.pivot().rows(pages);
    EXPECT_EQ(mine.label(), theirs.label());
    for (int c = 0; c < 3; ++c) {
      const v1::CellResult& a = page.rows(mine.cells(c));
      const v1::CellResult& b = whole.rows(theirs.cells(c));
      EXPECT_EQ(a.position(), b.position());
      EXPECT_EQ(a.cell(0).value(), b.cell(0).value());
      if (!std::isnan(b.ratio_median())) {
        EXPECT_EQ(a.ratio_median(), b.ratio_median());
      }
      positions.push_back(page.rows(mine.cells(c)).position());
    }
    ++pages;
    if (page.next_page_token().empty()) break;
    req.set_page_token(page.next_page_token());
  }
  EXPECT_EQ(pages, 3);
  std::sort(positions.begin(), positions.end());
  for (int i = 0; i < 9; ++i) EXPECT_EQ(positions[i], i);
  req.set_page_token("");
  v1::GetResultsResponse again;
  ASSERT_TRUE(stub_->GetResults(Context().get(), req, &again).ok());
  EXPECT_EQ(again.done(), 9);
  for (const char* bad : {"garbage", "7", "1.x", ".3", "1."}) {
    req.set_page_token(bad);
    EXPECT_EQ(stub_->GetResults(Context().get(), req, &again).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT)
        << bad;
  }
}

}  // namespace
}  // namespace tailsweep
