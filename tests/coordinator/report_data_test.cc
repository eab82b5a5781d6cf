// The report document (report/report_data.h) read through a real service,
// and the page's escaping (report/page.h).

#include "report/report_data.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/schema/file_util.h"
#include "report/page.h"
#include "tests/coordinator/service_fixture.h"
#include "tests/testing/results.h"

namespace tailsweep {
namespace {

class ReportDataTest : public ServiceTest {
 protected:
  CoordinatorApi Calls() {
    return CoordinatorApi(stub_.get(), [this] { return Context(); });
  }
};

TEST_F(ReportDataTest, CellsJobsCurvesAndCloudsOfATrainSweep) {
  grpc::Status status;
  Submit(R"(name: r
grid:
  kernel: [softmax, log]
  seed: [0, 1]
fixed:
  steps: 2000
  layers: 2
)",
         &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::LeaseJobsRequest lease;
  lease.set_worker_id("w");
  lease.set_max_jobs(4);
  lease.set_lease_ms(60000);
  v1::LeaseJobsResponse leased;
  ASSERT_TRUE(stub_->LeaseJobs(Context().get(), lease, &leased).ok());
  ASSERT_EQ(leased.leases_size(), 4);
  const v1::JobLease& first = leased.leases(0);
  // 2000 logged steps of loss: the document keeps 300 of them.
  v1::ReportMetricsRequest report;
  report.set_worker_id("w");
  report.set_job_id(first.job_id());
  report.set_epoch(first.epoch());
  report.set_seq(1);
  for (int step = 1; step <= 2000; ++step) {
    for (const char* name : {"loss", "attention_entropy/1", "lr"}) {
      v1::MetricPoint* p = report.add_points();
      p->set_name(name);
      p->set_step(step);
      p->set_value(step == 1000 ? 1e9 : 1.0 / step);
    }
  }
  v1::ReportMetricsResponse reported;
  ASSERT_TRUE(stub_->ReportMetrics(Context().get(), report, &reported).ok());
  v1::CompleteJobRequest done;
  done.set_worker_id("w");
  done.set_job_id(first.job_id());
  done.set_epoch(first.epoch());
  done.set_result_json(testing::TestResult(
      R"({"ratio_median": 0.9, "collapse_step": 1500, "version": "v-test",
          "samples": [{"instance": 0, "target": [[1, 2], [3, 4]],
                       "prediction": [[0.5, 0.25], [0.125, 0]]}]})"));
  v1::CompleteJobResponse completed;
  ASSERT_TRUE(stub_->CompleteJob(Context().get(), done, &completed).ok());
  v1::FailJobRequest fail;
  fail.set_worker_id("w");
  fail.set_job_id(leased.leases(1).job_id());
  fail.set_epoch(leased.leases(1).epoch());
  fail.set_error("</script><b>boom</b>");
  v1::FailJobResponse failed;
  ASSERT_TRUE(stub_->FailJob(Context().get(), fail, &failed).ok());

  ReportOptions options;
  options.now_ms = 42;
  absl::StatusOr<std::string> text = ReportJson(Calls(), "r", options);
  ASSERT_TRUE(text.ok()) << text.status();
  const nlohmann::json doc = nlohmann::json::parse(*text);
  EXPECT_EQ(doc["format"], 2);
  EXPECT_EQ(doc["generated_ms"], 42);
  EXPECT_EQ(doc["sweep"]["name"], "r");
  EXPECT_EQ(doc["sweep"]["fixed"]["layers"], "2");
  EXPECT_NE(doc["sweep"]["spec"].get<std::string>().find("kernel: [softmax"),
            std::string::npos);
  // The pivot by the kind's default key, over the kind's own table.
  EXPECT_EQ(doc["pivot"]["group_by"], "kernel");
  EXPECT_EQ(doc["pivot"]["columns"], nlohmann::json({"softmax", "log"}));
  const nlohmann::json& results = doc["results"];
  EXPECT_EQ(results["headline"], "ratio");
  ASSERT_EQ(results["rows"].size(), 2u);
  size_t median = 0;
  for (size_t c = 0; c < results["columns"].size(); ++c) {
    if (results["columns"][c]["name"] == "ratio_median") median = c;
  }
  EXPECT_EQ(results["columns"][median]["type"], "number");
  ASSERT_EQ(doc["cells"].size(), 2u);
  ASSERT_EQ(doc["jobs"].size(), 4u);
  // Each cell has its two seeds; the first job's cell has its clouds.
  int with_samples = 0;
  for (const auto& cell : doc["cells"]) {
    EXPECT_EQ(cell["jobs"].size(), 2u);
    EXPECT_FALSE(cell["cell"].contains("seed"));
    if (cell.contains("samples")) {
      ++with_samples;
      EXPECT_EQ(cell["samples"]["clouds"][0]["prediction"][0][1], 0.25);
    }
  }
  EXPECT_EQ(with_samples, 1);
  const nlohmann::json* job = nullptr;
  for (const auto& j : doc["jobs"]) {
    if (j["id"] == first.job_id()) job = &j;
    if (j["id"] == leased.leases(1).job_id()) {
      EXPECT_EQ(j["last_error"], "</script><b>boom</b>");  // data, as it was
    }
  }
  ASSERT_NE(job, nullptr);
  EXPECT_EQ((*job)["collapse_step"], 1500);
  EXPECT_EQ((*job)["version"], "v-test");
  EXPECT_EQ((*job)["layers"], 2);
  const auto& loss = (*job)["series"]["loss"];
  EXPECT_LE(loss[0].size(), 300u);
  EXPECT_GE(loss[0].size(), 250u);
  EXPECT_EQ(loss[0].front(), 1);
  EXPECT_EQ(loss[0].back(), 2000);
  bool spike = false;
  for (const auto& v : loss[1]) spike |= v == 1e9;
  EXPECT_TRUE(spike);  // the extreme survives downsampling
  // Runs that log the collapse signals: those, and attention per layer at
  // a third of the points; nothing they do not draw.
  EXPECT_LE((*job)["series"]["attention_entropy/1"][0].size(), 100u);
  EXPECT_FALSE((*job)["series"].contains("lr"));

  EXPECT_EQ(ReportJson(Calls(), "nope", options).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ReportDataTest, ImageArtifactsComeInlinedWhileTheBudgetLasts) {
  grpc::Status status;
  Submit(
      "name: pics\nkind: command\ncommand: [./x.sh]\n"
      "artifacts: ['*.png', '*.csv']\ngrid:\n  x: [1]\n",
      &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::LeaseJobsRequest lease;
  lease.set_worker_id("w");
  lease.set_max_jobs(1);
  lease.add_kinds("command");
  lease.set_lease_ms(60000);
  v1::LeaseJobsResponse leased;
  ASSERT_TRUE(stub_->LeaseJobs(Context().get(), lease, &leased).ok());
  ASSERT_EQ(leased.leases_size(), 1);
  const v1::JobLease& l = leased.leases(0);
  auto upload = [&](const std::string& name, const std::string& data) {
    v1::UploadJobFileResponse resp;
    auto ctx = Context();
    auto writer = stub_->UploadJobFile(ctx.get(), &resp);
    v1::JobFileChunk chunk;
    v1::JobFileHeader* h = chunk.mutable_header();
    h->set_worker_id("w");
    h->set_job_id(l.job_id());
    h->set_epoch(l.epoch());
    h->set_kind("artifact");
    h->set_name(name);
    h->set_bytes(static_cast<int64_t>(data.size()));
    h->set_original_bytes(static_cast<int64_t>(data.size()));
    h->set_sha256(Sha256Hex(data));
    writer->Write(chunk);
    v1::JobFileChunk body;
    body.set_data(data);
    writer->Write(body);
    writer->WritesDone();
    const grpc::Status s = writer->Finish();
    ASSERT_TRUE(s.ok()) << name << ": " << s.error_message();
  };
  upload("a.png", std::string("\x89PNG\0a", 6));
  upload("b.png", std::string(100, 'b'));
  upload("table.csv", "x,y\n");
  ReportOptions options;
  options.artifact_image_bytes = 50;  // a.png fits, b.png does not
  absl::StatusOr<std::string> text = ReportJson(Calls(), "pics", options);
  ASSERT_TRUE(text.ok()) << text.status();
  const nlohmann::json doc = nlohmann::json::parse(*text);
  ASSERT_EQ(doc["jobs"].size(), 1u);
  const nlohmann::json& arts = doc["jobs"][0]["artifacts"];
  ASSERT_EQ(arts.size(), 2u) << arts.dump();  // images only
  EXPECT_EQ(arts[0]["name"], "a.png");
  EXPECT_EQ(arts[0]["src"], "data:image/png;base64,iVBORwBh");
  EXPECT_EQ(arts[1]["name"], "b.png");
  EXPECT_TRUE(arts[1]["src"].is_null());
  // Without a budget (the live page asks for them itself): none.
  options.artifact_image_bytes = 0;
  text = ReportJson(Calls(), "pics", options);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_FALSE(nlohmann::json::parse(*text)["jobs"][0].contains("artifacts"));
}

TEST(ReportPage, EscapesTextAndKeepsInlinedJsonInsideItsScript) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(ScriptSafeJson(R"({"e":"</script><!--&"})"),
            R"({"e":"\u003c/script\u003e\u003c!--\u0026"})");
  PageInput in;
  in.title = "<sweep>";
  in.report_json = R"({"x":"</script><script>alert(1)</script>"})";
  const std::string page = ReportPage(in);
  EXPECT_NE(page.find("&lt;sweep&gt;"), std::string::npos);
  EXPECT_EQ(page.find("<script>alert(1)"), std::string::npos);
  EXPECT_NE(page.find("data-mode=\"file\""), std::string::npos);
  // uPlot and the page's code are inlined: nothing is fetched.
  EXPECT_NE(page.find("uPlot"), std::string::npos);
  EXPECT_EQ(page.find("src=\"http"), std::string::npos);
  PageInput live;
  live.title = "live";
  live.data_url = "/api/sweeps/a%22b/report";
  const std::string live_page = ReportPage(live);
  EXPECT_NE(live_page.find("data-mode=\"live\""), std::string::npos);
  EXPECT_EQ(live_page.find("id=\"report-data\""), std::string::npos);
}

}  // namespace
}  // namespace tailsweep
