// The Coordinator's metric reads: one job's series (GetMetrics, whole or
// downsampled) and a whole sweep's (ListSweepMetrics).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/coordinator/service_fixture.h"

namespace tailsweep {
namespace {

class ServiceMetricsTest : public ServiceTest {
 protected:
  grpc::Status Report(const v1::JobLease& lease,
                      const std::vector<MetricPoint>& points, int64_t seq = 1) {
    v1::ReportMetricsRequest req;
    req.set_worker_id("w1");
    req.set_job_id(lease.job_id());
    req.set_epoch(lease.epoch());
    req.set_seq(seq);
    for (const MetricPoint& p : points) {
      v1::MetricPoint* out = req.add_points();
      out->set_name(p.name);
      out->set_step(p.step);
      out->set_value(p.value);
    }
    v1::ReportMetricsResponse resp;
    return stub_->ReportMetrics(Context().get(), req, &resp);
  }
  // How many of ReadAll's strings are points of `name`.
  static int PointsOf(const std::vector<std::string>& all,
                      const std::string& name) {
    return static_cast<int>(std::count_if(
        all.begin(), all.end(),
        [&](const std::string& p) { return p.rfind(name + "@", 0) == 0; }));
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
  // Every page of a sweep's points, as "job:name@step=value" (the job as
  // its grid position in `jobs`).
  std::vector<std::string> ReadSweep(v1::ListSweepMetricsRequest req,
                                     const std::vector<std::string>& jobs,
                                     int* pages) {
    std::vector<std::string> out;
    *pages = 0;
    while (true) {
      v1::ListSweepMetricsResponse resp;
      const grpc::Status s =
          stub_->ListSweepMetrics(Context().get(), req, &resp);
      EXPECT_TRUE(s.ok()) << s.error_message();
      ++*pages;
      for (const v1::MetricSeries& series : resp.series()) {
        EXPECT_EQ(series.steps_size(), series.values_size());
        const auto job = std::find(jobs.begin(), jobs.end(), series.job_id());
        for (int i = 0; i < series.steps_size(); ++i) {
          const double v = series.values(i);
          out.push_back(absl::StrCat(job - jobs.begin(), ":", series.name(),
                                     "@", series.steps(i), "=",
                                     std::isnan(v) ? "nan" : absl::StrCat(v)));
        }
      }
      if (resp.next_page_token().empty() || !s.ok() || *pages > 1000) {
        return out;
      }
      req.set_page_token(resp.next_page_token());
    }
  }
  // The sweep's job ids in grid order.
  std::vector<std::string> JobIds() {
    v1::ListJobsRequest req;
    req.set_sweep("svc");
    v1::ListJobsResponse resp;
    EXPECT_TRUE(stub_->ListJobs(Context().get(), req, &resp).ok());
    std::vector<std::string> ids;
    for (const v1::JobInfo& j : resp.jobs()) ids.push_back(j.job_id());
    return ids;
  }
};

TEST_F(ServiceMetricsTest, MetricSeriesComeBackPagedWithNaNKept) {
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

// Series past the store's read chunk (50,000 points): the read goes on
// after the chunk, once. It used to read the first chunk again and again,
// growing without end: a report of a 60,000-step run never answered.
TEST_F(ServiceMetricsTest, MaxPointsReadsSeriesLongerThanAChunkOnce) {
  const v1::JobLease lease = SubmitAndLease();
  constexpr int kSteps = 60000;
  std::vector<MetricPoint> batch;
  int64_t seq = 0;
  for (int step = 1; step <= kSteps; ++step) {
    batch.push_back({"loss", step, 1.0 / step});
    batch.push_back({"lr", step, 1e-3});
    if (batch.size() == 10000 || step == kSteps) {
      ASSERT_TRUE(Report(lease, batch, ++seq).ok());
      batch.clear();
    }
  }
  for (const char* names : {"loss", ""}) {
    v1::GetMetricsRequest req;
    req.set_job_id(lease.job_id());
    req.set_max_points(100);
    if (*names) req.add_names(names);
    int pages = 0;
    const std::vector<std::string> all = ReadAll(req, &pages);
    const int loss = PointsOf(all, "loss"), lr = PointsOf(all, "lr");
    EXPECT_GE(loss, 50) << names;
    EXPECT_LE(loss, 100) << names;
    EXPECT_LE(lr, 100) << names;
    EXPECT_EQ(all.front(), "loss@1=1") << names;
    EXPECT_EQ(pages, 1) << names;
  }
}

TEST_F(ServiceMetricsTest, MaxPointsCutsEachSeriesAndPagesBetweenNames) {
  const v1::JobLease lease = SubmitAndLease();
  std::vector<MetricPoint> points;
  for (int step = 1; step <= 3000; ++step) {
    points.push_back({"loss", step, step == 1500 ? 100.0 : 1.0});
    points.push_back({"lr", step, 1e-3});
  }
  ASSERT_TRUE(Report(lease, points).ok());
  v1::GetMetricsRequest req;
  req.set_job_id(lease.job_id());
  req.set_max_points(50);
  int pages = 0;
  const std::vector<std::string> all = ReadAll(req, &pages);
  const int loss = PointsOf(all, "loss"), lr = PointsOf(all, "lr");
  EXPECT_LE(loss, 50);
  EXPECT_GE(loss, 25);
  EXPECT_LE(lr, 50);
  EXPECT_NE(std::find(all.begin(), all.end(), "loss@1500=100"), all.end());
  EXPECT_EQ(all.front(), "loss@1=1");
  EXPECT_EQ(all.back(), "lr@3000=0.001");
  EXPECT_EQ(pages, 1);

  req.set_max_points(1);
  v1::GetMetricsResponse resp;
  const grpc::Status s = stub_->GetMetrics(Context().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("max_points"), std::string::npos);
}

TEST_F(ServiceMetricsTest, ASweepsPointsComeInGridOrderEveryPointOnce) {
  const std::vector<v1::JobLease> leases = SubmitAndLease(2);
  ASSERT_EQ(leases.size(), 2u);
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  for (const v1::JobLease& lease : leases) {
    ASSERT_TRUE(Report(lease, {{"loss", 1, 0.5},
                               {"loss", 2, kNaN},
                               {"loss", 3, 0.25},
                               {"acc", 1, 1}})
                    .ok());
  }
  const std::vector<std::string> jobs = JobIds();
  std::vector<std::string> expected;
  for (int j = 0; j < 2; ++j) {
    for (const char* p :
         {"acc@1=1", "loss@1=0.5", "loss@2=nan", "loss@3=0.25"}) {
      expected.push_back(absl::StrCat(j, ":", p));
    }
  }
  v1::ListSweepMetricsRequest req;
  req.set_sweep("svc");
  int pages = 0;
  EXPECT_EQ(ReadSweep(req, jobs, &pages), expected);
  EXPECT_EQ(pages, 1);
  // Pages of every size cut series anywhere and lose or repeat nothing.
  for (int size = 1; size <= 9; ++size) {
    req.set_page_size(size);
    EXPECT_EQ(ReadSweep(req, jobs, &pages), expected) << "page_size " << size;
    EXPECT_GE(pages, 8 / size) << "page_size " << size;
  }
  req.set_page_size(0);
  req.add_names("loss");
  req.set_step_min(2);
  req.set_step_max(2);
  EXPECT_EQ(ReadSweep(req, jobs, &pages),
            (std::vector<std::string>{"0:loss@2=nan", "1:loss@2=nan"}));

  v1::ListSweepMetricsResponse resp;
  v1::ListSweepMetricsRequest bad;
  bad.set_sweep("nope");
  EXPECT_EQ(stub_->ListSweepMetrics(Context().get(), bad, &resp).error_code(),
            grpc::StatusCode::NOT_FOUND);
  bad.set_sweep("svc");
  bad.set_page_token("garbage");
  EXPECT_EQ(stub_->ListSweepMetrics(Context().get(), bad, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ServiceMetricsTest, ASweepsCurvesAtMaxPointsAreEachJobsGetMetricsCut) {
  const std::vector<v1::JobLease> leases = SubmitAndLease(2);
  ASSERT_EQ(leases.size(), 2u);
  const std::vector<std::string> jobs = JobIds();
  std::vector<MetricPoint> first = {{"acc", 1, 1}, {"acc", 2, 0.5}};
  for (int step = 1; step <= 100; ++step) {
    first.push_back({"loss", step, 1.0 / step});
  }
  std::vector<MetricPoint> second;
  for (int step = 1; step <= 50; ++step)
    second.push_back({"loss", step, static_cast<double>(step)});
  for (const v1::JobLease& lease : leases) {
    const bool is_first = lease.job_id() == jobs[0];
    ASSERT_TRUE(Report(lease, is_first ? first : second).ok());
  }
  // What a screen gets job by job: GetMetrics at max_points.
  auto expected = [&](const std::string& name) {
    std::vector<std::string> out;
    for (size_t j = 0; j < jobs.size(); ++j) {
      v1::GetMetricsRequest one;
      one.set_job_id(jobs[j]);
      one.set_max_points(10);
      if (!name.empty()) one.add_names(name);
      int pages = 0;
      for (const std::string& p : ReadAll(one, &pages)) {
        out.push_back(absl::StrCat(j, ":", p));
      }
    }
    return out;
  };
  v1::ListSweepMetricsRequest req;
  req.set_sweep("svc");
  req.set_max_points(10);
  int pages = 0;
  const std::vector<std::string> all = ReadSweep(req, jobs, &pages);
  EXPECT_EQ(all, expected(""));
  EXPECT_EQ(all.size(), 2u + 10u + 10u);  // acc whole; each loss cut to 10
  EXPECT_EQ(pages, 1);
  req.set_page_size(1);  // pages end between jobs
  EXPECT_EQ(ReadSweep(req, jobs, &pages), expected(""));
  EXPECT_GE(pages, 2);
  req.add_names("loss");
  EXPECT_EQ(ReadSweep(req, jobs, &pages), expected("loss"));

  v1::ListSweepMetricsResponse resp;
  v1::ListSweepMetricsRequest bad = req;
  bad.set_max_points(1);
  EXPECT_EQ(stub_->ListSweepMetrics(Context().get(), bad, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  bad.set_max_points(10);
  bad.set_sweep("nope");
  EXPECT_EQ(stub_->ListSweepMetrics(Context().get(), bad, &resp).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // A raw read's page token is not a curves read's.
  v1::ListSweepMetricsRequest raw;
  raw.set_sweep("svc");
  raw.set_page_size(1);
  ASSERT_TRUE(stub_->ListSweepMetrics(Context().get(), raw, &resp).ok());
  ASSERT_FALSE(resp.next_page_token().empty());
  bad.set_sweep("svc");
  bad.set_page_token(resp.next_page_token());
  EXPECT_EQ(stub_->ListSweepMetrics(Context().get(), bad, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ServiceMetricsTest, OneJobsCurvesPastAPagesBytesGoOnInTheNextPage) {
  const std::vector<v1::JobLease> leases = SubmitAndLease(2);
  ASSERT_EQ(leases.size(), 2u);
  const std::vector<std::string> jobs = JobIds();
  // The first job: 120 names x 1,000 steps, 1.7 MB at max_points 1000.
  std::vector<MetricPoint> batch;
  int64_t seq = 0;
  const v1::JobLease& first =
      leases[0].job_id() == jobs[0] ? leases[0] : leases[1];
  for (int name = 0; name < 120; ++name) {
    for (int step = 1; step <= 1000; ++step) {
      batch.push_back({absl::StrCat("m", name), step, 0.5});
      if (batch.size() == 10000) {
        ASSERT_TRUE(Report(first, batch, ++seq).ok());
        batch.clear();
      }
    }
  }
  v1::GetMetricsRequest one;
  one.set_job_id(jobs[0]);
  one.set_max_points(1000);
  int pages = 0;
  std::vector<std::string> expected;
  for (const std::string& p : ReadAll(one, &pages)) {
    expected.push_back(absl::StrCat("0:", p));
  }
  ASSERT_EQ(expected.size(), 120000u);
  v1::ListSweepMetricsRequest req;
  req.set_sweep("svc");
  req.set_max_points(1000);
  EXPECT_EQ(ReadSweep(req, jobs, &pages), expected);  // each point once
  EXPECT_GE(pages, 2);
}

TEST_F(ServiceMetricsTest, APageOfManyShortSeriesStaysUnderItsByteLimit) {
  const v1::JobLease lease = SubmitAndLease();
  // 40,000 names of one point each, long names: 200,000 points' worth of
  // series overhead would pass 2 MiB.
  std::vector<MetricPoint> points;
  for (int i = 0; i < 40000; ++i) {
    points.push_back({absl::StrCat("metric/", std::string(80, 'x'), i), 1,
                      static_cast<double>(i)});
  }
  for (size_t at = 0; at < points.size(); at += 10000) {
    ASSERT_TRUE(
        Report(lease, {points.begin() + at, points.begin() + at + 10000}).ok());
  }
  v1::ListSweepMetricsRequest req;
  req.set_sweep("svc");
  req.set_page_size(200000);
  int64_t seen = 0, pages = 0;
  while (true) {
    v1::ListSweepMetricsResponse resp;
    ASSERT_TRUE(stub_->ListSweepMetrics(Context().get(), req, &resp).ok());
    EXPECT_LE(resp.ByteSizeLong(), 2u << 20);
    ++pages;
    seen += resp.series_size();
    if (resp.next_page_token().empty()) break;
    req.set_page_token(resp.next_page_token());
  }
  EXPECT_EQ(seen, 40000);
  EXPECT_GE(pages, 2);
}

}  // namespace
}  // namespace tailsweep
