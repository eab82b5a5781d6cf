#ifndef TAILSWEEP_TESTS_WORKER_WORKER_FIXTURE_H_
#define TAILSWEEP_TESTS_WORKER_WORKER_FIXTURE_H_

// A Worker wired to the generated gRPC mock of the coordinator, a fake
// clock, fake jobs (tests/testing/fake_job_launcher.h) in a temporary work
// directory and the real job files. Every call the worker makes and every
// launcher event goes into `calls_`, one string each, e.g.
//   "LeaseJobs -> a", "Heartbeat job=a epoch=1",
//   "ReportMetrics seq=2 points=9 steps=2", "UploadCheckpoint step=2",
//   "CompleteJob", "kill a"
// with ": CODE" appended when the answer is not OK, and "t=MS " in front
// when stamps_ is set. Tests change the answers through the answer_*
// functions and assert the whole history with one comparison.

#include <gmock/gmock.h>
#include <grpcpp/test/mock_stream.h>
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/testing/coordinator_mock.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_job_launcher.h"
#include "tests/testing/fake_task_runner.h"
#include "worker/job_files.h"
#include "worker/worker.h"

namespace tailsweep {

inline const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    default:
      return "OTHER";
  }
}

inline v1::JobLease Lease(
    const std::string& job_id, int64_t epoch,
    std::vector<std::pair<std::string, std::string>> params = {}) {
  v1::JobLease lease;
  lease.set_job_id(job_id);
  lease.set_sweep("s");
  lease.set_kind("train");
  lease.set_epoch(epoch);
  lease.set_attempt(1);
  for (const auto& [k, v] : params) {
    v1::KeyValue* kv = lease.add_params();
    kv->set_key(k);
    kv->set_value(v);
  }
  return lease;
}

// The job files of the real filesystem, whose free space is what a test
// says (plenty unless it sets `free_bytes`).
class SizedJobFiles final : public LocalJobFiles {
 public:
  absl::StatusOr<int64_t> FreeBytes(const std::string&) override {
    return free_bytes.load();
  }
  std::atomic<int64_t> free_bytes{int64_t{1} << 40};
};

class WorkerFixture : public ::testing::Test {
 protected:
  using Status = grpc::Status;

  // The fixture's bodies live in worker_fixture.cc: constructing the mock
  // instantiates every one of its methods, which costs a translation unit
  // seconds to compile; the tests only construct the fixture.
  WorkerFixture();
  ~WorkerFixture() override;

  // Leases `leases` on the next LeaseJobs calls, one list per call; then
  // nothing.
  void Offer(std::vector<std::vector<v1::JobLease>> leases) {
    for (auto& l : leases) offers_.push_back(std::move(l));
  }

  // Runs the worker until it is idle (or stop_ is set, or 10 fake minutes).
  void RunWorker();

  void Record(std::string what, const Status& status);

  std::string dir_;
  WorkerOptions options_;
  FakeClock clock_;
  std::vector<std::string> calls_;
  FakeJobLauncher launcher_;
  SizedJobFiles files_;
  // Transfers run inline unless a test holds them (&held_tasks_).
  InlineTaskRunner inline_tasks_;
  HeldTaskRunner held_tasks_;
  TaskRunner* tasks_ = &inline_tasks_;
  ::testing::NiceMock<v1::MockCoordinatorStub> stub_;
  std::atomic<int> stop_{0};  // a signal number: stop
  bool stamps_ = false;
  std::deque<std::vector<v1::JobLease>> offers_;
  std::vector<v1::ReportMetricsRequest> reported_;  // acknowledged batches
  v1::FailJobRequest failed_;
  v1::CompleteJobRequest completed_;

  std::vector<std::string> lease_request_ids_;  // every LeaseJobs call's
  // Empty LeaseJobs answers that say jobs are still unfinished elsewhere.
  int unfinished_answers_ = 0;

  // Answers; default: OK. A LeaseJobs call that is not answered OK leases
  // nothing, as if its answer was lost.
  std::function<Status(const v1::LeaseJobsRequest&)> answer_lease_ =
      [](const auto&) { return Status::OK; };
  std::function<Status(const v1::HeartbeatRequest&)> answer_heartbeat_ =
      [](const auto&) { return Status::OK; };
  std::function<Status(const v1::ReportMetricsRequest&)> answer_metrics_ =
      [](const auto&) { return Status::OK; };
  std::function<Status(const v1::CheckpointHeader&)> answer_upload_ =
      [](const auto&) { return Status::OK; };
  std::function<Status()> answer_report_ = [] { return Status::OK; };

 private:
  void Wire();
};

}  // namespace tailsweep

#endif  // TAILSWEEP_TESTS_WORKER_WORKER_FIXTURE_H_
