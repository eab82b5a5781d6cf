#ifndef TAILSWEEP_TESTS_COORDINATOR_SERVICE_FIXTURE_H_
#define TAILSWEEP_TESTS_COORDINATOR_SERVICE_FIXTURE_H_

// The Coordinator service on a loopback port over a fresh store, with a
// stub to call it: the fixture of the service tests.

#include <google/protobuf/descriptor.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/service.h"
#include "tests/testing/run_command.h"

namespace tailsweep {

inline constexpr char kSpec[] = R"(name: svc
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
    checkpoints_ = std::make_unique<CheckpointStore>(store_.get(),
                                                     dir_ + "/data", budget_);
    ServiceOptions options;
    options.max_checkpoint_bytes = 1 << 20;
    auth_ = auth_ ? auth_ : std::make_shared<TokenAuth>(token_);
    options.auth = auth_;
    service_ = std::make_unique<CoordinatorService>(
        store_.get(), checkpoints_.get(), options);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    health_ = std::make_unique<HealthService>(store_.get(), auth_);
    builder.RegisterService(service_.get());
    builder.RegisterService(health_.get());
    server_ = builder.BuildAndStart();
    ASSERT_GT(port, 0);
    address_ = "127.0.0.1:" + std::to_string(port);
    stub_ = v1::Coordinator::NewStub(
        grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
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

  // Submits kSpec and leases up to `jobs` of its jobs (it has two) to w1.
  std::vector<v1::JobLease> SubmitAndLease(int jobs) {
    grpc::Status status;
    Submit(kSpec, &status);
    EXPECT_TRUE(status.ok()) << status.error_message();
    v1::LeaseJobsRequest req;
    req.set_worker_id("w1");
    req.set_max_jobs(jobs);
    req.set_lease_ms(5000);
    v1::LeaseJobsResponse resp;
    EXPECT_TRUE(stub_->LeaseJobs(Context().get(), req, &resp).ok());
    return {resp.leases().begin(), resp.leases().end()};
  }
  v1::JobLease SubmitAndLease() { return SubmitAndLease(1).at(0); }

  std::string token_;                // set before SetUp to require it
  std::shared_ptr<TokenAuth> auth_;  // or this: tokens of every role
  CheckpointBudget budget_;          // set before SetUp to change it
  std::string dir_;
  ManualClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<CheckpointStore> checkpoints_;
  std::unique_ptr<CoordinatorService> service_;
  std::unique_ptr<HealthService> health_;
  std::string address_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

// Calls `fn(path, name, streaming)` for every method the coordinator serves
// (its own and Health.Check: Watch is not served); returns how many.
inline int ForEachServedMethod(
    const std::function<void(const std::string& path, const std::string& name,
                             bool streaming)>& fn) {
  int methods = 0;
  for (const char* name :
       {"tailsweep.v1.Coordinator", "grpc.health.v1.Health"}) {
    const google::protobuf::ServiceDescriptor* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
            name);
    EXPECT_NE(service, nullptr) << name;
    if (service == nullptr) continue;
    for (int i = 0; i < service->method_count(); ++i) {
      const google::protobuf::MethodDescriptor* m = service->method(i);
      if (m->name() == "Watch") continue;
      ++methods;
      fn(absl::StrCat("/", service->full_name(), "/", m->name()), m->name(),
         m->client_streaming() || m->server_streaming());
    }
  }
  return methods;
}

}  // namespace tailsweep

#endif  // TAILSWEEP_TESTS_COORDINATOR_SERVICE_FIXTURE_H_
