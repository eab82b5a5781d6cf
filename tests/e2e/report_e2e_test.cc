// Looking at a sweep, with real components: `tailsweep report` files and the
// coordinator's live dashboard in Debian's chromium (driven by playwright-core,
// tests/browser/check_page.mjs), and a real Prometheus server scraping
// /metrics. Screenshots are kept under the build tree's
// test-artifacts/browser/.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/schema/file_util.h"
#include "proto/client_channel.h"
#include "proto/tailsweep.grpc.pb.h"
#include "tests/testing/cluster.h"
#include "tests/testing/run_command.h"
#include "tests/testing/tiny_spec.h"
#include "tests/testing/wait.h"

namespace tailsweep {
namespace {

constexpr char kToken[] = "dash-s3cret";
// Markup in a job's error text: it must show as text and never run.
constexpr char kMarkup[] =
    "<img src=x onerror=alert(1)><script>alert(2)</script>"
    "<b class=\"tailsweep-injected\">&amp;</b>";

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

class ReportE2E : public ::testing::Test, public testing::Cluster {
 protected:
  ReportE2E() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_report_") {
    std::ofstream(dir_ + "/token") << kToken << "\n";
    const ::testing::TestInfo* t =
        ::testing::UnitTest::GetInstance()->current_test_info();
    artifacts_ = absl::StrCat(TAILSWEEP_ARTIFACT_DIR, "/browser/", t->name());
    std::filesystem::remove_all(artifacts_);
    std::filesystem::create_directories(artifacts_);
  }

  // A coordinator with a token and the dashboard on a port of its choosing.
  void StartDashboard(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {"--token-file", dir_ + "/token",
                                     "--http-listen", "127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    StartCoordinator(argv);
    http_port_ = WaitForHttpPort();
    ASSERT_GT(http_port_, 0) << "no dashboard port in the coordinator's log";
    stub_ = v1::Coordinator::NewStub(
        grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  }
  std::string Http(const std::string& path) const {
    return absl::StrCat("http://127.0.0.1:", http_port_, path);
  }
  testing::CommandResult TokenCli(const std::string& args) {
    return Cli(args + " --token-file " + dir_ + "/token");
  }
  // As Cluster::Submit, with the token.
  void SubmitWithToken(const std::string& spec) {
    const std::string path = dir_ + "/spec-" + std::to_string(specs_++);
    std::ofstream(path) << spec;
    testing::CommandResult last;
    if (testing::WaitUntil(
            [&] {
              last = TokenCli("submit " + path);
              return last.exit_code == 0;
            },
            testing::EventDeadline(), std::chrono::milliseconds(100))) {
      return;
    }
    ADD_FAILURE() << "could not submit: " << last.err;
  }
  std::unique_ptr<grpc::ClientContext> Context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    AddToken(ctx.get(), kToken);
    return ctx;
  }
  // Leases the one queued job as worker "tester".
  v1::JobLease LeaseOne() {
    v1::LeaseJobsRequest req;
    req.set_worker_id("tester");
    req.set_max_jobs(1);
    req.set_lease_ms(600000);
    v1::LeaseJobsResponse resp;
    EXPECT_TRUE(stub_->LeaseJobs(Context().get(), req, &resp).ok());
    EXPECT_EQ(resp.leases_size(), 1);
    return resp.leases_size() ? resp.leases(0) : v1::JobLease();
  }
  void ReportPoints(const v1::JobLease& lease, int64_t seq,
                    const std::vector<int64_t>& steps) {
    v1::ReportMetricsRequest req;
    req.set_worker_id("tester");
    req.set_job_id(lease.job_id());
    req.set_epoch(lease.epoch());
    req.set_seq(seq);
    for (int64_t step : steps) {
      for (const char* name : {"loss", "spread_ratio"}) {
        v1::MetricPoint* p = req.add_points();
        p->set_name(name);
        p->set_step(step);
        p->set_value(1.0 / static_cast<double>(step));
      }
    }
    v1::ReportMetricsResponse resp;
    const grpc::Status s = stub_->ReportMetrics(Context().get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  // check_page.mjs's findings on `url` (empty on failure).
  nlohmann::json Browser(const std::string& url, const std::string& name,
                         const std::string& extra = "") {
    const std::string out = artifacts_ + "/" + name;
    std::filesystem::create_directories(out);
    const testing::CommandResult r = testing::RunCommand(absl::StrCat(
        "node ", TAILSWEEP_SOURCE_DIR, "/tests/browser/check_page.mjs --web ",
        TAILSWEEP_SOURCE_DIR, "/web --url '", url, "' --out ", out, " ",
        extra));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string last;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) last = line;
    }
    nlohmann::json doc = nlohmann::json::parse(last, nullptr, false);
    EXPECT_TRUE(doc.is_object()) << r.out << r.err;
    return doc.is_object() ? doc : nlohmann::json::object();
  }
  static void ExpectCleanPage(const nlohmann::json& seen) {
    EXPECT_EQ(seen.value("console_errors", nlohmann::json::array()).size(), 0u)
        << seen.dump();
    EXPECT_EQ(seen.value("page_errors", nlohmann::json::array()).size(), 0u)
        << seen.dump();
    EXPECT_EQ(seen.value("blank_charts", nlohmann::json::array()).size(), 0u)
        << seen.dump();
    EXPECT_EQ(seen.value("dialogs", -1), 0);
    EXPECT_EQ(seen.value("injected", -1), 0);
  }

  std::string artifacts_;
  int http_port_ = 0;
  int specs_ = 0;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

TEST_F(ReportE2E, ReportsDrawEveryChartOneRowPerCellAndShowMarkupAsText) {
  StartDashboard({"--max-attempts", "1"});
  // A job that failed for good with markup in its error text.
  SubmitWithToken(TinySpec("markup", "  kernel: [softmax]\n", {}));
  const v1::JobLease lease = LeaseOne();
  v1::FailJobRequest fail;
  fail.set_worker_id("tester");
  fail.set_job_id(lease.job_id());
  fail.set_epoch(lease.epoch());
  fail.set_error(kMarkup);
  v1::FailJobResponse failed;
  ASSERT_TRUE(stub_->FailJob(Context().get(), fail, &failed).ok());

  SubmitWithToken(TinySpec("rep", "  kernel: [softmax, log]\n  seed: [0, 1]\n",
                           {{"steps", "20"}, {"layers", "2"}}));
  SubmitWithToken(R"(name: tl
kind: tails
grid:
  seam: [0.9, 0.95]
  n: [256]
fixed:
  indices: "1.3:1.7:0.1"
  trials: 4
)");
  // A long lease: with --max-attempts 1 a lapse would fail the job.
  StartWorker("w", {"--exit-when-idle", "--token-file", dir_ + "/token",
                    "--lease-ms", kLongLeaseMs});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 6))
      << TokenCli("status").out;

  for (const char* sweep : {"rep", "tl", "markup"}) {
    const testing::CommandResult r = TokenCli(
        absl::StrCat("report ", sweep, " --out ", dir_, "/report-", sweep));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::filesystem::copy_file(
        absl::StrCat(dir_, "/report-", sweep, "/report.html"),
        absl::StrCat(artifacts_, "/", sweep, ".html"),
        std::filesystem::copy_options::overwrite_existing);
  }
  // The markup is data in the file, never markup.
  const std::string html = *ReadFile(dir_ + "/report-markup/report.html");
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("\\u003cimg src=x"), std::string::npos);

  const nlohmann::json rep =
      Browser("file://" + dir_ + "/report-rep/report.html", "rep");
  ExpectCleanPage(rep);
  // 2 cells x (loss, spread ratio, 2 x attention, 2 point clouds).
  EXPECT_EQ(rep.value("charts", 0), 12);
  EXPECT_EQ(rep.value("pivot_rows", 0), 1);  // columns: the kernels
  EXPECT_EQ(rep.value("cell_rows", 0), 2);   // one row per cell
  EXPECT_EQ(rep.value("max_step", 0), 20);
  EXPECT_EQ(rep["smoothing_redraws"], true) << rep.dump();

  // --images: every figure of the page as a PNG.
  const testing::CommandResult images =
      TokenCli("report rep --images --out " + dir_ + "/images-rep");
  ASSERT_EQ(images.exit_code, 0) << images.err;
  int pngs = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(dir_ + "/images-rep/images")) {
    const std::string bytes = ReadFile(entry.path().string()).value_or("");
    pngs += bytes.rfind("\x89PNG\r\n", 0) == 0 && bytes.size() > 2000;
  }
  EXPECT_EQ(pngs, 12) << images.out;

  const nlohmann::json tl =
      Browser("file://" + dir_ + "/report-tl/report.html", "tl");
  ExpectCleanPage(tl);
  EXPECT_EQ(tl.value("charts", 0), 4);  // per seam: ED and W2 against index

  const nlohmann::json markup =
      Browser("file://" + dir_ + "/report-markup/report.html", "markup");
  ExpectCleanPage(markup);
  EXPECT_EQ(markup.value("cell_rows", 0), 1);
  EXPECT_NE(markup.value("text", "").find(kMarkup), std::string::npos)
      << markup.value("text", "");
  EXPECT_NE(markup.value("text", "").find("no points yet"), std::string::npos);
}

TEST_F(ReportE2E, ACommandSweepsReportHasItsTableAndAChartPerMetric) {
  StartDashboard();
  // A shell child logging two metrics of its own names for 10 steps.
  const std::string script = dir_ + "/two.sh";
  std::ofstream(script) << R"(#!/bin/sh
i=1
while [ $i -le 10 ]; do
  echo "{\"step\": $i, \"my_loss\": $((100 / i)), \"acc/top1\": $i}" >> "$TAILSWEEP_METRICS_FILE"
  i=$((i+1))
done
echo iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg== | base64 -d > "$TAILSWEEP_JOB_DIR/plot.png"
)";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  SubmitWithToken(R"(name: cmd
kind: command
command: [./two.sh, "${args}"]
outcomes:
  good: {metric: acc/top1, above: 5}
artifacts: [plot.png]
grid:
  width: [1, 2]
  seed: [0, 1]
)");
  StartWorker("w", {"--exit-when-idle", "--token-file", dir_ + "/token"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 4))
      << TokenCli("jobs cmd").out;
  const testing::CommandResult r =
      TokenCli("report cmd --out " + dir_ + "/report-cmd");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json cmd =
      Browser("file://" + dir_ + "/report-cmd/report.html", "cmd");
  ExpectCleanPage(cmd);
  EXPECT_EQ(cmd.value("charts", 0), 4);     // 2 cells x (my_loss, acc/top1)
  EXPECT_EQ(cmd.value("cell_rows", 0), 2);  // the command table, per cell
  EXPECT_EQ(cmd.value("pivot_rows", -1), 0);
  EXPECT_EQ(cmd.value("max_step", 0), 10);
  const std::string text = cmd.value("text", "");
  for (const char* shown : {"my_loss", "acc/top1", "good", "2/2"}) {
    EXPECT_NE(text.find(shown), std::string::npos) << shown << "\n" << text;
  }
  // Each job's plot beside its cell's curves: in the file, inlined; on the
  // live page, from the coordinator.
  auto expect_plots = [](const nlohmann::json& page, const std::string& src) {
    const nlohmann::json strips =
        page.value("artifacts", nlohmann::json::array());
    ASSERT_EQ(strips.size(), 4u) << page.dump();
    for (const nlohmann::json& strip : strips) {
      ASSERT_EQ(strip["images"].size(), 1u) << strip.dump();
      EXPECT_EQ(strip["images"][0]["alt"], "plot.png");
      EXPECT_TRUE(strip["images"][0]["loaded"].get<bool>()) << strip.dump();
      EXPECT_NE(strip["images"][0]["src"].get<std::string>().find(src),
                std::string::npos)
          << strip.dump();
    }
  };
  expect_plots(cmd, "data:image/png;base64,");
  const nlohmann::json live =
      Browser(Http("/sweeps/cmd"), "cmd-live",
              std::string("--header 'Authorization: Bearer ") + kToken + "'");
  ExpectCleanPage(live);
  expect_plots(live, "/artifacts/plot.png");
}

TEST_F(ReportE2E, TheLivePageShowsANewPointWithoutAReload) {
  StartDashboard();
  SubmitWithToken(TinySpec("live", "  kernel: [softmax]\n", {}));
  const v1::JobLease lease = LeaseOne();
  ReportPoints(lease, 1, {1, 2, 3, 4, 5});

  // Without the token nothing is served; a browser logs in once.
  EXPECT_NE(testing::RunCommand("curl -s " + Http("/api/sweeps"))
                .out.find("UNAUTHENTICATED"),
            std::string::npos);
  const testing::CommandResult login = testing::RunCommand(
      "curl -s -i '" + Http(std::string("/?token=") + kToken) + "'");
  EXPECT_NE(login.out.find("303"), std::string::npos) << login.out;
  EXPECT_NE(login.out.find("HttpOnly; SameSite=Strict"), std::string::npos)
      << login.out;
  // The cookie carries the token hex-encoded.
  std::string hex;
  for (const char c : std::string(kToken)) {
    absl::StrAppend(&hex,
                    absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
  }
  EXPECT_NE(login.out.find("tailsweep_token=" + hex), std::string::npos);
  EXPECT_NE(testing::RunCommand(absl::StrCat("curl -s -H 'Cookie: a=b; "
                                             "tailsweep_token=",
                                             hex, "' ", Http("/api/sweeps")))
                .out.find("\"name\":\"live\""),
            std::string::npos);
  EXPECT_NE(
      testing::RunCommand(absl::StrCat("curl -s -H 'Authorization: Bearer ",
                                       kToken, "' ", Http("/api/sweeps")))
          .out.find("\"name\":\"live\""),
      std::string::npos);

  // The dashboard's index lists the sweep.
  const nlohmann::json index =
      Browser(Http("/"), "index",
              std::string("--header 'Authorization: Bearer ") + kToken + "'");
  ExpectCleanPage(index);
  EXPECT_EQ(index.value("sweep_rows", 0), 1) << index.dump();

  const std::string ready = dir_ + "/ready", go = dir_ + "/go";
  const std::string out = artifacts_ + "/live";
  std::filesystem::create_directories(out);
  ChildProcess& node = Start(
      {"/usr/bin/node",
       absl::StrCat(TAILSWEEP_SOURCE_DIR, "/tests/browser/check_page.mjs"),
       "--web", absl::StrCat(TAILSWEEP_SOURCE_DIR, "/web"), "--url",
       Http("/sweeps/live"), "--out", out, "--header",
       std::string("Authorization: Bearer ") + kToken, "--ready", ready, "--go",
       go},
      "node");
  // The page has drawn its first points (or node gave up).
  testing::WaitUntil([&] {
    return std::filesystem::exists(ready) || node.Poll().has_value();
  });
  ASSERT_TRUE(std::filesystem::exists(ready))
      << ReadFile(dir_ + "/node.err").value_or("");
  ReportPoints(lease, 2, {777});
  ASSERT_TRUE(WriteFileAtomic(go, "777").ok());
  // node exits once a chart shows step 777 (or it gives up).
  ASSERT_TRUE(testing::WaitUntil([&] { return node.Poll().has_value(); }))
      << ReadFile(dir_ + "/node.err").value_or("");
  const nlohmann::json seen = nlohmann::json::parse(
      ReadFile(dir_ + "/node.out").value_or(""), nullptr, false);
  ASSERT_TRUE(seen.is_object()) << ReadFile(dir_ + "/node.err").value_or("");
  ExpectCleanPage(seen);
  EXPECT_EQ(seen.value("charts", 0), 2);  // loss and spread ratio so far
  // The open page drew the point by itself. How soon is reported, not
  // asserted: the page refetches every max(1 s, 4x its last fetch), which
  // on a loaded machine is load, not a fault (docs/operations.md: "within
  // about a second" when unloaded).
  ASSERT_TRUE(seen["live_latency_ms"].is_number()) << seen.dump();
  std::fprintf(stderr, "live page showed the new point after %.0f ms\n",
               seen["live_latency_ms"].get<double>());
}

TEST_F(ReportE2E, PrometheusScrapesTheCoordinatorAndCountsDoneJobs) {
  StartDashboard();
  SubmitWithToken(
      TinySpec("prom", "  kernel: [softmax, log]\n", {{"steps", "10"}}));
  StartWorker("w", {"--exit-when-idle", "--token-file", dir_ + "/token"});
  ASSERT_TRUE(WaitFor("SELECT COUNT(*) FROM jobs WHERE state = 'done'", 2));

  const int port = FreePort();
  std::ofstream(dir_ + "/prometheus.yml")
      << "global:\n  scrape_interval: 1s\n"
      << "scrape_configs:\n  - job_name: tailsweep\n"
      << "    authorization:\n      credentials_file: " << dir_ << "/token\n"
      << "    static_configs:\n      - targets: ['127.0.0.1:" << http_port_
      << "']\n";
  Start({"/usr/bin/prometheus", "--config.file=" + dir_ + "/prometheus.yml",
         "--storage.tsdb.path=" + dir_ + "/tsdb",
         absl::StrCat("--web.listen-address=127.0.0.1:", port)},
        "prometheus");
  const int64_t done = Query("SELECT COUNT(*) FROM jobs WHERE state = 'done'");
  const std::string query = absl::StrCat(
      "curl -s 'http://127.0.0.1:", port,
      "/api/v1/query?query=sum(tailsweep_jobs%7Bstate%3D%22done%22%7D)'");
  // Until Prometheus has scraped the count (it scrapes every second once
  // it is up).
  double seen = -1;
  std::string last;
  testing::WaitUntil(
      [&] {
        last = testing::RunCommand(query).out;
        const nlohmann::json doc = nlohmann::json::parse(last, nullptr, false);
        if (doc.is_object() && doc.contains("data") &&
            !doc["data"]["result"].empty()) {
          seen = std::stod(
              doc["data"]["result"][0]["value"][1].get<std::string>());
        }
        return seen == static_cast<double>(done);
      },
      testing::EventDeadline(), std::chrono::milliseconds(500));
  EXPECT_EQ(seen, static_cast<double>(done)) << last;
  // Other families exist with the guide's names.
  const std::string metrics =
      testing::RunCommand(absl::StrCat("curl -s -H 'Authorization: Bearer ",
                                       kToken, "' ", Http("/metrics")))
          .out;
  // At least one lease per job: more if a lease lapsed or an answer was
  // lost and the request retried on a loaded machine.
  std::smatch granted;
  ASSERT_TRUE(std::regex_search(
      metrics, granted, std::regex("tailsweep_leases_granted_total ([0-9]+)")))
      << metrics;
  EXPECT_GE(std::stoi(granted[1]), 2) << metrics;
  for (const char* name :
       {"tailsweep_rpc_duration_seconds_bucket",
        "tailsweep_metric_points_ingested_total", "tailsweep_store_healthy 1",
        "tailsweep_build_info{version="}) {
    EXPECT_NE(metrics.find(name), std::string::npos) << name << "\n" << metrics;
  }
}

}  // namespace
}  // namespace tailsweep
