// A kind added by one file (tests/testing/echo_kind.cc, linked only into
// this test) shows its own results table everywhere with no other edit:
// the coordinator makes it, and the CLI (the built `tailsweep`, which has
// never heard of `echo`), the HTTP API, the report document and the Python
// client read it and agree.

#include <gmock/gmock.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "coordinator/http_gateway.h"
#include "core/schema/command_job.h"
#include "report/report_data.h"
#include "tests/coordinator/service_fixture.h"
#include "tests/testing/coordinator_mock.h"
#include "tests/testing/run_command.h"

namespace tailsweep {
namespace {

using nlohmann::json;

constexpr char kEchoSpec[] = R"(name: echoes
kind: echo
grid:
  value: [1.5, 4]
  seed: [0, 1]
)";

class EchoKindTest : public ServiceTest {
 protected:
  // `tailsweep results SWEEP --format json`'s rows.
  json CliJson(const std::string& sweep) {
    const testing::CommandResult cli = testing::RunCommand(
        absl::StrCat(TAILSWEEP_BIN_DIR, "/tailsweep results ", sweep,
                     " --format json --coordinator ", address_));
    EXPECT_EQ(cli.exit_code, 0) << cli.err;
    return json::parse(cli.out, nullptr, false);
  }
  // The HTTP gateway in front of the service.
  int Gateway() {
    if (gateway_ == nullptr) {
      HttpGatewayOptions options;
      options.listen = "127.0.0.1:0";
      absl::StatusOr<std::unique_ptr<HttpGateway>> started = HttpGateway::Start(
          options,
          grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()),
          [] { return std::string(); });
      EXPECT_TRUE(started.ok()) << started.status();
      if (!started.ok()) return 0;
      gateway_ = *std::move(started);
    }
    return gateway_->port();
  }
  // GET /api/sweeps/SWEEP/results?shape=table.
  json HttpAnswer(const std::string& sweep) {
    httplib::Client http("127.0.0.1", Gateway());
    const httplib::Result answer = http.Get(absl::StrCat(
        "/api/sweeps/", sweep, "/results?over_seeds=true&shape=table"));
    EXPECT_TRUE(answer && answer->status == 200);
    return answer ? json::parse(answer->body, nullptr, false) : json();
  }
  // Sweep.results(per="cell", output="records") through the HTTP API.
  json PythonRecords(const std::string& sweep) {
    const testing::CommandResult python = testing::RunCommand(absl::StrCat(
        "PYTHONPATH=", TAILSWEEP_SOURCE_DIR, "/python /usr/bin/python3 -c '",
        "import json, tailsweep\n", "c = tailsweep.Client(\"http://127.0.0.1:",
        Gateway(), "\")\n", "print(json.dumps(c.sweep(\"", sweep,
        "\").results(per=\"cell\", ", "output=\"records\")))'"));
    EXPECT_EQ(python.exit_code, 0) << python.err;
    return json::parse(python.out, nullptr, false);
  }

  void TearDown() override {
    gateway_.reset();
    ServiceTest::TearDown();
  }
  std::unique_ptr<HttpGateway> gateway_;

  // Submits kEchoSpec and completes every job as the echo child would:
  // its value written back (a seed-1 job writes value + 1).
  void RunTheSweep() {
    grpc::Status status;
    v1::SubmitSweepResponse submitted = Submit(kEchoSpec, &status);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(submitted.jobs_added(), 4);
    v1::LeaseJobsRequest req;
    req.set_worker_id("w1");
    req.set_max_jobs(4);
    req.set_lease_ms(5000);
    req.add_kinds("echo");
    v1::LeaseJobsResponse leases;
    ASSERT_TRUE(stub_->LeaseJobs(Context().get(), req, &leases).ok());
    ASSERT_EQ(leases.leases_size(), 4);
    for (const v1::JobLease& lease : leases.leases()) {
      double value = 0, seed = 0;
      for (const v1::KeyValue& kv : lease.params()) {
        if (kv.key() == "value") value = std::stod(kv.value());
        if (kv.key() == "seed") seed = std::stod(kv.value());
      }
      v1::CompleteJobRequest done;
      done.set_worker_id("w1");
      done.set_job_id(lease.job_id());
      done.set_epoch(lease.epoch());
      done.set_result_json(absl::StrCat("{\"value\": ", value + seed, "}"));
      v1::CompleteJobResponse ok;
      ASSERT_TRUE(stub_->CompleteJob(Context().get(), done, &ok).ok());
    }
  }
};

TEST_F(EchoKindTest, ItsTableShowsInTheCliHttpReportAndPython) {
  RunTheSweep();
  // The kind's own rows: a cell per value, the median over its two seeds.
  const json expected = json::array(
      {{{"value", "1.5"}, {"echoed", 2.0}}, {{"value", "4"}, {"echoed", 4.5}}});

  // The CLI, which links no echo kind.
  EXPECT_EQ(CliJson("echoes"), expected);
  const testing::CommandResult text =
      testing::RunCommand(absl::StrCat(TAILSWEEP_BIN_DIR,
                                       "/tailsweep results echoes "
                                       "--coordinator ",
                                       address_));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("echoed"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("4 of 4 jobs done; echoed: the value the jobs "
                          "wrote back"),
            std::string::npos)
      << text.out;

  // HTTP.
  const json doc = HttpAnswer("echoes");
  EXPECT_EQ(doc["kind"], "echo");
  const json& table = doc["table"];
  EXPECT_EQ(table["columns"],
            json::parse(R"([{"name": "value", "type": "text", "role": "key"},
                            {"name": "echoed", "type": "number",
                             "role": "value"}])"));
  EXPECT_EQ(table["rows"], json::parse(R"([["1.5", 2.0], ["4", 4.5]])"));

  // The report document.
  CoordinatorApi calls(stub_.get(), [this] { return Context(); });
  absl::StatusOr<std::string> report = ReportJson(calls, "echoes", {});
  ASSERT_TRUE(report.ok()) << report.status();
  const json report_doc = json::parse(*report);
  EXPECT_EQ(report_doc["results"], table);
  EXPECT_FALSE(report_doc.contains("pivot"));  // no headline: flat
  EXPECT_EQ(report_doc["cells"].size(), 2u);

  // Python, through the HTTP API.
  EXPECT_EQ(PythonRecords("echoes"),
            json::parse(R"([{"params_value": 1.5, "echoed": 2.0},
                            {"params_value": 4, "echoed": 4.5}])"));
}

// A command sweep's table (issue 48: Python read train's columns for it,
// ratio_median NaN and collapsed 0): each metric's last value, the median
// over seeds, and each outcome as the fraction of done runs where it held;
// the same in the CLI's json, the HTTP API and Python.
constexpr char kCommandSpec[] = R"(name: cmd
kind: command
command: [/bin/true]
grid:
  lr: [0.1, 1]
  seed: [0, 1, 2]
outcomes:
  high: {metric: loss, above: 2.5}
)";

TEST_F(EchoKindTest, ACommandSweepsTableIsTheSameInTheCliHttpAndPython) {
  grpc::Status status;
  ASSERT_EQ(Submit(kCommandSpec, &status).jobs_added(), 6)
      << status.error_message();
  v1::LeaseJobsRequest req;
  req.set_worker_id("w1");
  req.set_max_jobs(6);
  req.set_lease_ms(5000);
  req.add_kinds("command");
  v1::LeaseJobsResponse leases;
  ASSERT_TRUE(stub_->LeaseJobs(Context().get(), req, &leases).ok());
  ASSERT_EQ(leases.leases_size(), 6);
  for (const v1::JobLease& lease : leases.leases()) {
    double lr = 0, seed = 0;
    for (const v1::KeyValue& kv : lease.params()) {
      if (kv.key() == "lr") lr = std::stod(kv.value());
      if (kv.key() == "seed") seed = std::stod(kv.value());
    }
    // lr 0.1: last losses 1, 2, 3 (median 2; high in 1 of 3); lr 1: 10,
    // 20, 30.
    v1::ReportMetricsRequest metrics;
    metrics.set_job_id(lease.job_id());
    metrics.set_epoch(lease.epoch());
    metrics.set_worker_id("w1");
    metrics.set_seq(1);
    for (int step : {1, 2}) {
      v1::MetricPoint* p = metrics.add_points();
      p->set_name("loss");
      p->set_step(step);
      p->set_value(step == 2 ? lr * 10 * (seed + 1) : 100);
    }
    v1::ReportMetricsResponse ack;
    ASSERT_TRUE(stub_->ReportMetrics(Context().get(), metrics, &ack).ok());
    v1::CompleteJobRequest done;
    done.set_worker_id("w1");
    done.set_job_id(lease.job_id());
    done.set_epoch(lease.epoch());
    done.set_result_json(CommandResultJson("null", 0, 0));
    v1::CompleteJobResponse ok;
    ASSERT_TRUE(stub_->CompleteJob(Context().get(), done, &ok).ok());
  }
  const json cli = CliJson("cmd");
  // The coordinator adds each row's device hours (none here: the test's
  // clock does not move).
  EXPECT_EQ(cli, json::parse(R"([
      {"lr": "0.1", "jobs": 3, "done": 3, "failed": 0, "loss": 2.0,
       "high": 0.3333333333333333, "gpu_hours": 0.0, "cpu_hours": 0.0},
      {"lr": "1", "jobs": 3, "done": 3, "failed": 0, "loss": 20.0,
       "high": 1.0, "gpu_hours": 0.0, "cpu_hours": 0.0}])"))
      << cli.dump();
  const json table = HttpAnswer("cmd")["table"];
  ASSERT_EQ(table["rows"].size(), 2u);
  EXPECT_EQ(
      table["rows"][0],
      json::parse(R"(["0.1", 3, 3, 0, 2.0, {"count": 1, "of": 3}, 0.0, 0.0])"));
  json python = PythonRecords("cmd");
  for (json& row : python) {  // Python types the grid's values
    row["lr"] = row["params_lr"] == 1 ? "1" : "0.1";
    row.erase("params_lr");
  }
  EXPECT_EQ(python, cli);
}

// A client of this build asks for the table; a coordinator older than
// 0.2.0 answers with the first release's fields only: the client says which
// version it needs instead of showing nothing.
TEST(ResultsCompat, ANewClientSaysWhichCoordinatorItNeeds) {
  v1::MockCoordinatorStub stub;
  v1::GetResultsResponse old;
  old.set_kind("train");
  old.set_jobs(2);
  old.add_rows()->set_jobs(2);
  EXPECT_CALL(stub, GetResults(::testing::_, ::testing::_, ::testing::_))
      .WillOnce(::testing::DoAll(::testing::SetArgPointee<2>(old),
                                 ::testing::Return(grpc::Status::OK)));
  CoordinatorApi api(&stub,
                     [] { return std::make_unique<grpc::ClientContext>(); });
  absl::StatusOr<SweepResults> got = GetResultsTable(api, "old", true);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(got.status().message().find("0.2.0 or newer"), std::string::npos)
      << got.status();
}

}  // namespace
}  // namespace tailsweep
