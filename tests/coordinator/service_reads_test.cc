// The Coordinator's read RPCs: metric series, sweeps, job logs, results of
// train and tails sweeps.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/schema/job_result.h"
#include "tests/coordinator/service_fixture.h"
#include "tests/testing/results.h"

namespace tailsweep {
namespace {

class ServiceReadsTest : public ServiceTest {
 protected:
  // Submits kSpec and leases one job to w1.
  v1::JobLease SubmitAndLease() {
    grpc::Status status;
    Submit(kSpec, &status);
    EXPECT_TRUE(status.ok()) << status.error_message();
    v1::LeaseJobsRequest req;
    req.set_worker_id("w1");
    req.set_max_jobs(1);
    req.set_lease_ms(5000);
    v1::LeaseJobsResponse resp;
    EXPECT_TRUE(stub_->LeaseJobs(Context().get(), req, &resp).ok());
    return resp.leases(0);
  }
  grpc::Status Report(const v1::JobLease& lease,
                      const std::vector<NamedPoint>& points) {
    v1::ReportMetricsRequest req;
    req.set_worker_id("w1");
    req.set_job_id(lease.job_id());
    req.set_epoch(lease.epoch());
    req.set_seq(1);
    for (const NamedPoint& p : points) {
      v1::MetricPoint* out = req.add_points();
      out->set_name(p.name);
      out->set_step(p.step);
      out->set_value(p.value);
    }
    v1::ReportMetricsResponse resp;
    return stub_->ReportMetrics(Context().get(), req, &resp);
  }
  // Every page of a series, as "name@step=value" strings.
  std::vector<std::string> ReadAll(v1::GetMetricsRequest req, int* pages) {
    std::vector<std::string> out;
    *pages = 0;
    while (true) {
      v1::GetMetricsResponse resp;
      const grpc::Status s = stub_->GetMetrics(Context().get(), req, &resp);
      EXPECT_TRUE(s.ok()) << s.error_message();
      ++*pages;
      for (const auto& p : resp.points()) {
        out.push_back(absl::StrCat(
            p.name(), "@", p.step(), "=",
            std::isnan(p.value()) ? "nan" : absl::StrCat(p.value())));
      }
      if (resp.next_page_token().empty() || !s.ok()) return out;
      req.set_page_token(resp.next_page_token());
    }
  }
};

TEST_F(ServiceReadsTest, MetricSeriesComeBackPagedWithNaNKept) {
  const v1::JobLease lease = SubmitAndLease();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  ASSERT_TRUE(Report(lease, {{"loss", 10, 0.5},
                             {"loss", 20, kNaN},
                             {"attention_entropy/0", 10, 3.5},
                             {"attention_entropy/0", 20, 0.25},
                             {"lr", 10, 1e-3}})
                  .ok());
  v1::GetMetricsRequest req;
  req.set_job_id(lease.job_id());
  req.set_page_size(2);
  int pages = 0;
  const std::vector<std::string> all = ReadAll(req, &pages);
  const std::vector<std::string> expected = {
      "attention_entropy/0@10=3.5", "attention_entropy/0@20=0.25",
      "loss@10=0.5", "loss@20=nan", "lr@10=0.001"};
  EXPECT_EQ(all, expected);
  EXPECT_EQ(pages, 3);

  req.set_page_size(0);
  req.add_names("loss");
  req.set_step_min(15);
  EXPECT_EQ(ReadAll(req, &pages), std::vector<std::string>{"loss@20=nan"});

  v1::GetMetricsRequest unknown;
  unknown.set_job_id("feedbeef");
  v1::GetMetricsResponse resp;
  EXPECT_EQ(stub_->GetMetrics(Context().get(), unknown, &resp).error_code(),
            grpc::StatusCode::NOT_FOUND);
  unknown.set_job_id(lease.job_id());
  unknown.set_page_token("garbage");
  EXPECT_EQ(stub_->GetMetrics(Context().get(), unknown, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
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

}  // namespace
}  // namespace tailsweep
