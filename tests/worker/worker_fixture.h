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
#include <spdlog/spdlog.h>

#include <atomic>
#include <deque>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/tailsweep_mock.grpc.pb.h"
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

class WorkerFixture : public ::testing::Test {
 protected:
  using Status = grpc::Status;

  WorkerFixture() : launcher_(&clock_, &calls_) {
    spdlog::set_level(spdlog::level::off);
    dir_ =
        (std::filesystem::path(::testing::TempDir()) /
         absl::StrCat(
             "worker_test_",
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
            .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    options_.worker_id = "w";
    options_.tailsweep_bin = "/nonexistent/tailsweep";
    options_.work_dir = dir_;
    options_.devices = {"cpu"};
    options_.lease_ms = 30000;  // heartbeats every 10 s: none in short jobs
    options_.poll_ms = 100;
    options_.exit_when_idle = true;
    options_.shutdown_grace_ms = 5000;
    Wire();
  }
  ~WorkerFixture() override { std::filesystem::remove_all(dir_); }

  // Leases `leases` on the next LeaseJobs calls, one list per call; then
  // nothing.
  void Offer(std::vector<std::vector<v1::JobLease>> leases) {
    for (auto& l : leases) offers_.push_back(std::move(l));
  }

  // Runs the worker until it is idle (or stop_ is set, or 10 fake minutes).
  void RunWorker() {
    clock_.At(600000, [this] { stop_ = SIGTERM; });
    FixedLink link({&stub_, &stub_});
    Worker worker(&link, &clock_, &launcher_, &files_, tasks_, options_);
    worker.Run(stop_);
  }

  void Record(std::string what, const Status& status) {
    if (!status.ok())
      absl::StrAppend(&what, ": ", CodeName(status.error_code()));
    if (stamps_) what = absl::StrCat("t=", clock_.SteadyMs(), " ", what);
    calls_.push_back(std::move(what));
  }

  std::string dir_;
  WorkerOptions options_;
  FakeClock clock_;
  std::vector<std::string> calls_;
  FakeJobLauncher launcher_;
  LocalJobFiles files_;
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

inline void WorkerFixture::Wire() {
  using ::testing::_;
  using ::testing::NiceMock;
  using ::testing::Return;
  ON_CALL(stub_, LeaseJobs(_, _, _))
      .WillByDefault([this](auto*, const v1::LeaseJobsRequest& req,
                            v1::LeaseJobsResponse* resp) {
        lease_request_ids_.push_back(req.request_id());
        const Status s = answer_lease_(req);
        if (!s.ok()) {
          Record("LeaseJobs", s);
          return s;
        }
        std::string got;
        if (!offers_.empty()) {
          for (const v1::JobLease& l : offers_.front()) {
            *resp->add_leases() = l;
            absl::StrAppend(&got, got.empty() ? "" : ",", l.job_id());
          }
          offers_.pop_front();
        }
        if (got.empty() && unfinished_answers_ > 0) {
          --unfinished_answers_;
          resp->set_unfinished_jobs(true);
          got = "none (unfinished)";
        }
        Record(
            absl::StrCat(
                "LeaseJobs",
                req.max_jobs() > 1 ? absl::StrCat(" max=", req.max_jobs()) : "",
                " -> ", got.empty() ? "none" : got),
            Status::OK);
        return Status::OK;
      });
  ON_CALL(stub_, Heartbeat(_, _, _))
      .WillByDefault([this](auto*, const v1::HeartbeatRequest& req, auto*) {
        const Status s = answer_heartbeat_(req);
        Record(absl::StrCat("Heartbeat job=", req.job_id(),
                            " epoch=", req.epoch()),
               s);
        return s;
      });
  ON_CALL(stub_, ReportMetrics(_, _, _))
      .WillByDefault(
          [this](auto*, const v1::ReportMetricsRequest& req, auto* resp) {
            const Status s = answer_metrics_(req);
            int64_t lo = 0, hi = 0;
            for (const auto& p : req.points()) {
              lo = lo == 0 ? p.step() : std::min(lo, p.step());
              hi = std::max(hi, p.step());
            }
            Record(absl::StrCat("ReportMetrics seq=", req.seq(),
                                " points=", req.points_size(), " steps=", lo,
                                lo == hi ? "" : absl::StrCat("-", hi)),
                   s);
            if (s.ok()) {
              reported_.push_back(req);
              resp->set_seq(req.seq());
            }
            return s;
          });
  ON_CALL(stub_, UploadCheckpointRaw(_, _))
      .WillByDefault([this](auto*, v1::UploadCheckpointResponse* resp) {
        auto* writer = new NiceMock<
            grpc::testing::MockClientWriter<v1::CheckpointChunk>>();
        auto header = std::make_shared<v1::CheckpointHeader>();
        ON_CALL(*writer, Write(_, _))
            .WillByDefault([header](const v1::CheckpointChunk& c, auto) {
              if (c.has_header()) *header = c.header();
              return true;
            });
        ON_CALL(*writer, WritesDone()).WillByDefault(Return(true));
        ON_CALL(*writer, Finish()).WillByDefault([this, header, resp] {
          const Status s = answer_upload_(*header);
          Record(absl::StrCat("UploadCheckpoint step=", header->step()), s);
          if (s.ok()) resp->set_stored_step(header->step());
          return s;
        });
        return writer;
      });
  ON_CALL(stub_, DownloadCheckpointRaw(_, _))
      .WillByDefault([this](auto*, const v1::DownloadCheckpointRequest& req) {
        auto* reader = new NiceMock<
            grpc::testing::MockClientReader<v1::CheckpointChunk>>();
        ON_CALL(*reader, Read(_)).WillByDefault(Return(false));
        const Status none(grpc::StatusCode::NOT_FOUND, "no checkpoint");
        ON_CALL(*reader, Finish()).WillByDefault(Return(none));
        Record(absl::StrCat("DownloadCheckpoint job=", req.job_id()), none);
        return reader;
      });
  ON_CALL(stub_, CompleteJob(_, _, _))
      .WillByDefault([this](auto*, const v1::CompleteJobRequest& req, auto*) {
        const Status s = answer_report_();
        Record("CompleteJob", s);
        completed_ = req;
        return s;
      });
  ON_CALL(stub_, FailJob(_, _, _))
      .WillByDefault([this](auto*, const v1::FailJobRequest& req, auto*) {
        const Status s = answer_report_();
        Record("FailJob", s);
        failed_ = req;
        return s;
      });
  ON_CALL(stub_, ReleaseJob(_, _, _))
      .WillByDefault([this](auto*, const v1::ReleaseJobRequest& req, auto*) {
        const Status s = answer_report_();
        Record(absl::StrCat("ReleaseJob reason=", req.reason()), s);
        return s;
      });
}

}  // namespace tailsweep

#endif  // TAILSWEEP_TESTS_WORKER_WORKER_FIXTURE_H_
