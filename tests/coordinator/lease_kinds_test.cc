// Workers are leased only the kinds they run (LeaseJobsRequest.kinds); one
// that names none is an older build and gets train and tails jobs only.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "tests/coordinator/service_fixture.h"

namespace tailsweep {
namespace {

constexpr char kCommandSpec[] = R"(name: cmd
kind: command
command: [/bin/true]
grid:
  x: [1, 2]
)";

v1::LeaseJobsResponse LeaseOfKinds(v1::Coordinator::Stub& stub,
                                   const std::vector<std::string>& kinds,
                                   grpc::Status* status) {
  v1::LeaseJobsRequest req;
  req.set_worker_id("w1");
  req.set_max_jobs(8);
  req.set_lease_ms(5000);
  for (const std::string& k : kinds) req.add_kinds(k);
  v1::LeaseJobsResponse resp;
  grpc::ClientContext ctx;
  *status = stub.LeaseJobs(&ctx, req, &resp);
  return resp;
}

TEST_F(ServiceTest, AWorkerThatNamesNoKindsGetsNoCommandJobs) {
  grpc::Status status;
  Submit(kCommandSpec, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  Submit(kSpec, &status);  // 2 train jobs
  ASSERT_TRUE(status.ok()) << status.error_message();

  v1::LeaseJobsResponse old = LeaseOfKinds(*stub_, {}, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(old.leases_size(), 2);
  for (const v1::JobLease& l : old.leases()) EXPECT_EQ(l.kind(), "train");
  // Nothing more for it, though jobs are queued: another worker may run
  // them.
  old = LeaseOfKinds(*stub_, {}, &status);
  EXPECT_EQ(old.leases_size(), 0);
  EXPECT_TRUE(old.unfinished_jobs());

  // A kind the coordinator does not know is ignored, not an error.
  v1::LeaseJobsResponse now = LeaseOfKinds(
      *stub_, {"train", "tails", "command", "later-kind"}, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(now.leases_size(), 2);
  for (const v1::JobLease& l : now.leases()) EXPECT_EQ(l.kind(), "command");
}

TEST_F(ServiceTest, AWorkerIsLeasedOnlyTheKindsItNames) {
  grpc::Status status;
  Submit(kSpec, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::LeaseJobsResponse resp = LeaseOfKinds(*stub_, {"command"}, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(resp.leases_size(), 0);
  resp = LeaseOfKinds(*stub_, {std::string(65, 'k')}, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("kinds[0]"), std::string::npos)
      << status.error_message();
}

}  // namespace
}  // namespace tailsweep
