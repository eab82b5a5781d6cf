// The Coordinator service over a real loopback gRPC channel.

#include "coordinator/service.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/testing/run_command.h"

namespace tailsweep {
namespace {

constexpr char kSpec[] = R"(name: svc
grid:
  kernel: [softmax, log]
fixed:
  steps: 20
  warmup: 2
)";

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("tailsweep_service_");
    auto store = Store::Open(dir_ + "/db", &clock_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    service_ = std::make_unique<CoordinatorService>(store_.get());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_GT(port, 0);
    stub_ = v1::Coordinator::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                            grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    server_->Shutdown();
    std::filesystem::remove_all(dir_);
  }

  // Every client call sets a deadline.
  std::unique_ptr<grpc::ClientContext> Context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(10));
    return ctx;
  }

  v1::SubmitSweepResponse Submit(const std::string& yaml,
                                 grpc::Status* status) {
    v1::SubmitSweepRequest req;
    req.set_spec_yaml(yaml);
    req.set_source_name("svc.yaml");
    v1::SubmitSweepResponse resp;
    *status = stub_->SubmitSweep(Context().get(), req, &resp);
    return resp;
  }

  std::string dir_;
  ManualClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<CoordinatorService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

TEST_F(ServiceTest, SubmitLeaseReportCompleteAndList) {
  grpc::Status status;
  v1::SubmitSweepResponse submitted = Submit(kSpec, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(submitted.sweep(), "svc");
  EXPECT_EQ(submitted.jobs_added(), 2);
  EXPECT_EQ(Submit(kSpec, &status).jobs_existing(), 2);

  v1::LeaseJobsRequest lease_req;
  lease_req.set_worker_id("w1");
  lease_req.set_max_jobs(1);
  lease_req.set_lease_ms(5000);
  v1::LeaseJobsResponse leases;
  ASSERT_TRUE(stub_->LeaseJobs(Context().get(), lease_req, &leases).ok());
  ASSERT_EQ(leases.leases_size(), 1);
  const v1::JobLease& lease = leases.leases(0);
  EXPECT_EQ(lease.kind(), "train");
  EXPECT_EQ(lease.epoch(), 1);

  v1::ReportMetricsRequest metrics;
  metrics.set_job_id(lease.job_id());
  metrics.set_epoch(lease.epoch());
  metrics.set_seq(7);
  auto* p = metrics.add_points();
  p->set_name("loss");
  p->set_step(10);
  p->set_value(0.25);
  v1::ReportMetricsResponse ack;
  ASSERT_TRUE(stub_->ReportMetrics(Context().get(), metrics, &ack).ok());
  EXPECT_EQ(ack.seq(), 7);
  ASSERT_TRUE(
      stub_->ReportMetrics(Context().get(), metrics, &ack).ok());  // resend

  // A stale epoch is refused with FAILED_PRECONDITION.
  v1::ReportMetricsRequest stale = metrics;
  stale.set_epoch(lease.epoch() + 1);
  EXPECT_EQ(stub_->ReportMetrics(Context().get(), stale, &ack).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  v1::CompleteJobRequest done;
  done.set_job_id(lease.job_id());
  done.set_epoch(lease.epoch());
  done.set_result_json(R"({"ratio_median": 0.9})");
  v1::CompleteJobResponse done_resp;
  ASSERT_TRUE(stub_->CompleteJob(Context().get(), done, &done_resp).ok());

  v1::ListJobsRequest list_req;
  list_req.set_sweep("svc");
  v1::ListJobsResponse list;
  ASSERT_TRUE(stub_->ListJobs(Context().get(), list_req, &list).ok());
  ASSERT_EQ(list.jobs_size(), 2);
  int done_count = 0;
  for (const auto& j : list.jobs()) {
    if (j.state() == "done") {
      ++done_count;
      EXPECT_EQ(j.result_json(), R"({"ratio_median": 0.9})");
    }
  }
  EXPECT_EQ(done_count, 1);
  EXPECT_EQ(store_->MetricCount(lease.job_id()).value(), 1);

  v1::GetSweepStatusRequest status_req;
  status_req.set_sweep("svc");
  v1::GetSweepStatusResponse counts;
  ASSERT_TRUE(stub_->GetSweepStatus(Context().get(), status_req, &counts).ok());
  EXPECT_EQ(counts.done(), 1);
  EXPECT_EQ(counts.queued(), 1);
}

TEST_F(ServiceTest, BadFieldsAreInvalidArgumentAndChangeNothing) {
  grpc::Status status;
  Submit("name: svc\ngrid:\n  kernel: [relu]\n", &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("svc.yaml:3:"), std::string::npos)
      << status.error_message();
  Submit("", &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::LeaseJobsRequest lease_req;
  lease_req.set_worker_id("w 1");  // a space
  lease_req.set_max_jobs(1);
  lease_req.set_lease_ms(5000);
  v1::LeaseJobsResponse leases;
  EXPECT_EQ(stub_->LeaseJobs(Context().get(), lease_req, &leases).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  lease_req.set_worker_id("w1");
  lease_req.set_max_jobs(0);
  EXPECT_EQ(stub_->LeaseJobs(Context().get(), lease_req, &leases).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  lease_req.set_max_jobs(1);
  lease_req.set_lease_ms(10);
  EXPECT_EQ(stub_->LeaseJobs(Context().get(), lease_req, &leases).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  v1::HeartbeatRequest hb;
  hb.set_worker_id("w1");
  hb.set_job_id("nope");
  hb.set_epoch(0);
  hb.set_lease_ms(5000);
  v1::HeartbeatResponse hb_resp;
  EXPECT_EQ(stub_->Heartbeat(Context().get(), hb, &hb_resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  hb.set_epoch(1);
  EXPECT_EQ(stub_->Heartbeat(Context().get(), hb, &hb_resp).error_code(),
            grpc::StatusCode::NOT_FOUND);

  v1::GetSweepStatusRequest status_req;
  status_req.set_sweep("missing");
  v1::GetSweepStatusResponse counts;
  EXPECT_EQ(
      stub_->GetSweepStatus(Context().get(), status_req, &counts).error_code(),
      grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(store_->IntegrityCheck().value(), "ok");
}

TEST(CoordinatorExecutable, HelpAndBadFlags) {
  const testing::CommandResult help =
      testing::RunCommand(std::string(TAILSWEEP_COORDINATOR_BIN) + " --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--db"), std::string::npos);
  const testing::CommandResult bad = testing::RunCommand(
      std::string(TAILSWEEP_COORDINATOR_BIN) + " --data-dir /tmp");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--db"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace tailsweep
