#include "tests/worker/worker_fixture.h"

#include <spdlog/spdlog.h>

namespace tailsweep {

WorkerFixture::WorkerFixture() : launcher_(&clock_, &calls_) {
  spdlog::set_level(spdlog::level::off);
  dir_ = (std::filesystem::path(::testing::TempDir()) /
          absl::StrCat(
              "worker_test_",
              ::testing::UnitTest::GetInstance()->current_test_info()->name()))
             .string();
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  options_.worker_id = "w";
  options_.lab_bin = "/nonexistent/tailsweep-lab";
  options_.work_dir = dir_;
  options_.devices = {"cpu"};
  options_.lease_ms = 30000;  // heartbeats every 10 s: none in short jobs
  options_.poll_ms = 100;
  options_.exit_when_idle = true;
  options_.shutdown_grace_ms = 5000;
  Wire();
}

WorkerFixture::~WorkerFixture() { std::filesystem::remove_all(dir_); }

void WorkerFixture::RunWorker() {
  clock_.At(600000, [this] { stop_ = SIGTERM; });
  FixedLink link({&stub_, &stub_});
  Worker worker(&link, &clock_, &launcher_, &files_, tasks_, options_);
  worker.Run(stop_);
}

void WorkerFixture::Record(std::string what, const Status& status) {
  if (!status.ok()) absl::StrAppend(&what, ": ", CodeName(status.error_code()));
  if (stamps_) what = absl::StrCat("t=", clock_.SteadyMs(), " ", what);
  calls_.push_back(std::move(what));
}

void WorkerFixture::Wire() {
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
  // Logs and artifacts are taken, and not recorded: the call lists the
  // tests compare are the lease's story.
  ON_CALL(stub_, UploadJobFileRaw(_, _))
      .WillByDefault([](auto*, v1::UploadJobFileResponse*) {
        auto* writer =
            new NiceMock<grpc::testing::MockClientWriter<v1::JobFileChunk>>();
        ON_CALL(*writer, Write(_, _)).WillByDefault(Return(true));
        ON_CALL(*writer, WritesDone()).WillByDefault(Return(true));
        ON_CALL(*writer, Finish()).WillByDefault(Return(Status::OK));
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
