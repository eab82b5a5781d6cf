// The Coordinator service over a real loopback gRPC channel.

#include "coordinator/service.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "proto/checkpoint_transfer.h"
#include "tests/coordinator/service_fixture.h"
#include "tests/testing/raw_call.h"
#include "tests/testing/results.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

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
  metrics.set_worker_id("w1");
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
  done.set_result_json(testing::TestResult(R"({"ratio_median": 0.9})"));
  done.set_worker_id("w1");
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
      EXPECT_EQ(j.result_json(),
                testing::TestResult(R"({"ratio_median": 0.9})"));
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

// Ids and free text have length limits; each refusal names its field.
TEST_F(ServiceTest, RequestIdsAndFreeTextAreLengthLimited) {
  v1::LeaseJobsRequest lease_req;
  lease_req.set_worker_id("w1");
  lease_req.set_max_jobs(1);
  lease_req.set_lease_ms(5000);
  v1::LeaseJobsResponse leases;
  for (const std::string& bad :
       {std::string(257, 'r'), std::string("r 1"), std::string("r\x1b")}) {
    lease_req.set_request_id(bad);
    const grpc::Status s =
        stub_->LeaseJobs(Context().get(), lease_req, &leases);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("request_id"), std::string::npos);
  }
  lease_req.set_request_id(std::string(256, 'r'));
  EXPECT_TRUE(stub_->LeaseJobs(Context().get(), lease_req, &leases).ok());
  lease_req.set_request_id("");
  lease_req.set_worker_id(std::string(257, 'w'));
  EXPECT_EQ(stub_->LeaseJobs(Context().get(), lease_req, &leases).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  v1::ReleaseJobRequest release;
  release.set_worker_id("w1");
  release.set_job_id("j");
  release.set_epoch(1);
  release.set_reason(std::string(1025, 'x'));
  v1::ReleaseJobResponse released;
  grpc::Status s = stub_->ReleaseJob(Context().get(), release, &released);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("reason must be at most 1024 bytes"),
            std::string::npos)
      << s.error_message();
  v1::FailJobRequest fail;
  fail.set_worker_id("w1");
  fail.set_job_id("j");
  fail.set_epoch(1);
  fail.set_error(std::string((64 << 10) + 1, 'e'));
  v1::FailJobResponse failed;
  s = stub_->FailJob(Context().get(), fail, &failed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("error must be at most"), std::string::npos);
  v1::CompleteJobRequest done;
  done.set_worker_id("w1");
  done.set_job_id("j");
  done.set_epoch(1);
  done.set_result_json("{}");
  done.set_stderr_tail(std::string((64 << 10) + 1, 't'));
  v1::CompleteJobResponse completed;
  s = stub_->CompleteJob(Context().get(), done, &completed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("stderr_tail must be at most"),
            std::string::npos);
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

namespace tailsweep {
namespace {

class CheckpointServiceTest : public ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    grpc::Status status;
    Submit(kSpec, &status);
    ASSERT_TRUE(status.ok()) << status.error_message();
    lease_ = Lease("w1");
    file_ = dir_ + "/step-00000040.pt";
    std::ofstream(file_) << std::string(600 * 1024, 'x') << "tail";
  }
  v1::JobLease Lease(const std::string& worker) {
    v1::LeaseJobsRequest req;
    req.set_worker_id(worker);
    req.set_max_jobs(1);
    req.set_lease_ms(5000);
    v1::LeaseJobsResponse resp;
    EXPECT_TRUE(stub_->LeaseJobs(Context().get(), req, &resp).ok());
    return resp.leases_size() == 1 ? resp.leases(0) : v1::JobLease();
  }
  // Uploads `path` as step `step` under `epoch`; `damage` flips a byte of
  // the data on the way.
  grpc::Status Upload(const std::string& path, int64_t step, int64_t epoch,
                      bool damage = false,
                      v1::UploadCheckpointResponse* resp = nullptr) {
    v1::UploadCheckpointResponse ignored;
    auto ctx = Context();
    auto writer = stub_->UploadCheckpoint(ctx.get(), resp ? resp : &ignored);
    v1::CheckpointHeader header;
    header.set_job_id(lease_.job_id());
    header.set_epoch(epoch);
    header.set_step(step);
    header.set_worker_id("w1");
    header.set_name(std::filesystem::path(path).filename().string());
    absl::Status sent =
        transfer::SendFile(path, header, [&](const v1::CheckpointChunk& chunk) {
          v1::CheckpointChunk c = chunk;
          if (damage && c.has_data()) (*c.mutable_data())[3] ^= 1;
          return writer->Write(c);
        });
    writer->WritesDone();
    return writer->Finish();
  }
  grpc::Status Download(int64_t epoch, const std::string& path) {
    v1::DownloadCheckpointRequest req;
    req.set_worker_id("w1");
    req.set_job_id(lease_.job_id());
    req.set_epoch(epoch);
    auto ctx = Context();
    auto reader = stub_->DownloadCheckpoint(ctx.get(), req);
    v1::CheckpointChunk first;
    absl::Status received = absl::OkStatus();
    if (reader->Read(&first) && first.has_header()) {
      received = transfer::ReceiveFile(
          first.header(),
          [&](v1::CheckpointChunk* c) { return reader->Read(c); }, path);
    }
    grpc::Status status = reader->Finish();
    if (status.ok() && !received.ok()) return ToGrpc(received);
    return status;
  }
  std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  v1::JobLease lease_;
  std::string file_;
};

TEST_F(CheckpointServiceTest, UploadedCheckpointComesBackByteForByte) {
  v1::UploadCheckpointResponse resp;
  grpc::Status up = Upload(file_, 40, lease_.epoch(), false, &resp);
  ASSERT_TRUE(up.ok()) << up.error_message();
  EXPECT_EQ(resp.stored_step(), 40);
  grpc::Status down = Download(lease_.epoch(), dir_ + "/got.pt");
  ASSERT_TRUE(down.ok()) << down.error_message();
  EXPECT_EQ(Read(dir_ + "/got.pt"), Read(file_));
  // Stored under the data directory, by job and epoch.
  EXPECT_TRUE(std::filesystem::exists(
      dir_ + "/data/checkpoints/" + lease_.job_id() + "/" +
      std::to_string(lease_.epoch()) + "/step-00000040.pt"));
  // An older step is acknowledged and dropped.
  const std::string older = dir_ + "/step-00000020.pt";
  std::ofstream(older) << "older";
  ASSERT_TRUE(Upload(older, 20, lease_.epoch(), false, &resp).ok());
  EXPECT_EQ(resp.stored_step(), 40);
  ASSERT_TRUE(Download(lease_.epoch(), dir_ + "/again.pt").ok());
  EXPECT_EQ(Read(dir_ + "/again.pt"), Read(file_));
}

TEST_F(CheckpointServiceTest, DamagedStaleOrOversizedUploadsAreRefused) {
  EXPECT_EQ(Upload(file_, 40, lease_.epoch(), /*damage=*/true).error_code(),
            grpc::StatusCode::DATA_LOSS);
  EXPECT_EQ(Upload(file_, 40, lease_.epoch() + 1).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  const std::string big = dir_ + "/step-00000050.pt";
  std::ofstream(big) << std::string((1 << 20) + 1, 'b');
  EXPECT_EQ(Upload(big, 50, lease_.epoch()).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  const std::string sneaky = dir_ + "/..pt";
  std::ofstream(sneaky) << "x";
  EXPECT_EQ(Upload(sneaky, 50, lease_.epoch()).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // Nothing was stored: there is no checkpoint to download.
  EXPECT_EQ(Download(lease_.epoch(), dir_ + "/none.pt").error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/none.pt"));
}

TEST_F(CheckpointServiceTest, OnlyTheLiveLeaseMayDownload) {
  ASSERT_TRUE(Upload(file_, 40, lease_.epoch()).ok());
  // The damaged file on disk is caught before anything is sent.
  const std::string stored = dir_ + "/data/checkpoints/" + lease_.job_id() +
                             "/" + std::to_string(lease_.epoch()) +
                             "/step-00000040.pt";
  EXPECT_EQ(Download(lease_.epoch() + 7, dir_ + "/x.pt").error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  std::fstream(stored, std::ios::in | std::ios::out | std::ios::binary)
      .write("y", 1);
  // No intact one: the job starts over, and the answer says why.
  const grpc::Status none = Download(lease_.epoch(), dir_ + "/x.pt");
  EXPECT_EQ(none.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(none.error_message().find("damaged"), std::string::npos)
      << none.error_message();
}

TEST_F(CheckpointServiceTest, ADamagedNewestCheckpointFallsBackToTheOneBefore) {
  ASSERT_TRUE(Upload(file_, 40, lease_.epoch()).ok());
  const std::string newer = dir_ + "/step-00000060.pt";
  std::ofstream(newer) << std::string(600 * 1024, 'n');
  ASSERT_TRUE(Upload(newer, 60, lease_.epoch()).ok());
  const std::string epoch_dir = dir_ + "/data/checkpoints/" + lease_.job_id() +
                                "/" + std::to_string(lease_.epoch());
  // Both are kept: the newest and its fallback; a third replaces the
  // oldest.
  EXPECT_TRUE(std::filesystem::exists(epoch_dir + "/step-00000040.pt"));
  EXPECT_TRUE(std::filesystem::exists(epoch_dir + "/step-00000060.pt"));
  std::fstream(epoch_dir + "/step-00000060.pt",
               std::ios::in | std::ios::out | std::ios::binary)
      .write("y", 1);
  ASSERT_TRUE(Download(lease_.epoch(), dir_ + "/got.pt").ok());
  EXPECT_EQ(Read(dir_ + "/got.pt"), Read(file_));  // step 40's
  const std::string events =
      testing::RunCommand("sqlite3 " + dir_ +
                          "/db \"SELECT kind || ': ' || detail FROM events "
                          "WHERE job_id = '" +
                          lease_.job_id() + "'\"")
          .out;
  EXPECT_NE(events.find("checkpoint_damaged: step 60"), std::string::npos)
      << events;
  EXPECT_NE(events.find("checkpoint_fallback: resumed from step 40"),
            std::string::npos)
      << events;
}

class CheckpointBudgetTest : public CheckpointServiceTest {
 protected:
  void SetUp() override {
    budget_.max_data_bytes = 2'000'000;
    budget_.min_free_bytes = 32'000'000;
    budget_.free_bytes = [this](const std::string&) -> absl::StatusOr<int64_t> {
      return free_bytes_.load();
    };
    CheckpointServiceTest::SetUp();
  }
  std::atomic<int64_t> free_bytes_{int64_t{1} << 40};
};

TEST_F(CheckpointBudgetTest, WhatNoJobNeedsGoesFirstThenUploadsAreRefused) {
  const std::string a = lease_.job_id();
  const std::string a_dir =
      dir_ + "/data/checkpoints/" + a + "/" + std::to_string(lease_.epoch());
  const std::string newer = dir_ + "/step-00000060.pt";
  std::ofstream(newer) << std::string(600 * 1024, 'n');
  ASSERT_TRUE(Upload(file_, 40, lease_.epoch()).ok());
  ASSERT_TRUE(Upload(newer, 60, lease_.epoch()).ok());
  TS_ASSERT_OK(
      store_->Complete("w1", a, lease_.epoch(), testing::TestResult()));
  // Job b fills the budget: 1.2 MB of a's and 1.2 MB of b's is over 2 MB,
  // so a's older checkpoint (a is done) is pruned to make room.
  lease_ = Lease("w1");
  ASSERT_NE(lease_.job_id(), a);
  ASSERT_TRUE(Upload(file_, 40, lease_.epoch()).ok());
  const grpc::Status b60 = Upload(newer, 60, lease_.epoch());
  ASSERT_TRUE(b60.ok()) << b60.error_message();
  EXPECT_FALSE(std::filesystem::exists(a_dir + "/step-00000040.pt"));
  // Then a's newest goes (a is done), and after that nothing is spare:
  // b's own two are needed, and an upload over the budget is refused.
  const std::string third = dir_ + "/step-00000080.pt";
  std::ofstream(third) << std::string(900 * 1024, 't');
  const grpc::Status b80 = Upload(third, 80, lease_.epoch());
  EXPECT_EQ(b80.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << b80.error_message();
  EXPECT_NE(b80.error_message().find("--max-data-bytes"), std::string::npos)
      << b80.error_message();
  EXPECT_FALSE(std::filesystem::exists(a_dir + "/step-00000060.pt"));
  // The free space kept for the database: refused below it, with why.
  free_bytes_ = 10'000'000;
  const std::string small = dir_ + "/step-00000090.pt";
  std::ofstream(small) << "s";
  const grpc::Status floor = Upload(small, 90, lease_.epoch());
  EXPECT_EQ(floor.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(floor.error_message().find("--min-free-bytes"), std::string::npos)
      << floor.error_message();
  // What was stored is intact and downloadable.
  ASSERT_TRUE(Download(lease_.epoch(), dir_ + "/got.pt").ok());
  EXPECT_EQ(Read(dir_ + "/got.pt"), Read(newer));
}

class CheckpointJobCapTest : public CheckpointServiceTest {
 protected:
  void SetUp() override {
    budget_.max_job_bytes = 1'300'000;
    CheckpointServiceTest::SetUp();
  }
  std::vector<std::string> NotKept() {
    absl::StatusOr<JobRow> job = store_->Job(lease_.job_id());
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? job->not_kept : std::vector<std::string>{};
  }
};

TEST_F(CheckpointJobCapTest, AnUploadPastAJobsCapIsRefusedAndTheJobSaysSo) {
  // 600 KB each: the newest and the one before fit 1.3 MB; the fallback
  // before those is dropped by an upload, so it does not count.
  for (int64_t step : {40, 60, 80}) {
    const std::string file =
        absl::StrCat(dir_, "/step-", absl::StrFormat("%08d", step), ".pt");
    std::ofstream(file) << std::string(600 * 1024, 'x') << "tail";
    const grpc::Status up = Upload(file, step, lease_.epoch());
    ASSERT_TRUE(up.ok()) << step << ": " << up.error_message();
  }
  const std::string big = dir_ + "/step-00000100.pt";
  std::ofstream(big) << std::string(900 * 1024, 'b');
  const grpc::Status over = Upload(big, 100, lease_.epoch());
  EXPECT_EQ(over.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(over.error_message().find("--max-job-checkpoint-bytes"),
            std::string::npos)
      << over.error_message();
  // Over --max-checkpoint-bytes (1 MiB here) too.
  const std::string huge = dir_ + "/step-00000120.pt";
  std::ofstream(huge) << std::string(1100 * 1024, 'h');
  EXPECT_EQ(Upload(huge, 120, lease_.epoch()).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  // The job's record names both, with their steps and sizes; the job
  // still holds its lease and its step-80 checkpoint.
  const std::vector<std::string> notes = NotKept();
  ASSERT_EQ(notes.size(), 2u) << absl::StrJoin(notes, "\n");
  EXPECT_NE(notes[0].find("step 100 (0.9 MB)"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("--max-checkpoint-bytes"), std::string::npos)
      << notes[1];
  EXPECT_EQ(store_->Job(lease_.job_id())->state, JobState::kLeased);
  ASSERT_TRUE(Download(lease_.epoch(), dir_ + "/got.pt").ok());
  EXPECT_EQ(Read(dir_ + "/got.pt"), Read(dir_ + "/step-00000080.pt"));
  // A caller without the lease leaves no note.
  v1::JobLease held = lease_;
  lease_.set_epoch(lease_.epoch() + 7);
  EXPECT_FALSE(Upload(huge, 140, lease_.epoch()).ok());
  lease_ = held;
  EXPECT_EQ(NotKept().size(), 2u);
}

TEST_F(CheckpointJobCapTest, AnEndReportsNotesAreKeptWithTheJob) {
  v1::CompleteJobRequest done;
  done.set_worker_id("w1");
  done.set_job_id(lease_.job_id());
  done.set_epoch(lease_.epoch());
  done.set_result_json(testing::TestResult());
  for (int i = 0; i < 17; ++i) done.add_not_kept("artifact a.bin not kept");
  v1::CompleteJobResponse resp;
  // At most 16 notes (run_outputs.h); the worker's NotKeptNotes folds more.
  EXPECT_EQ(stub_->CompleteJob(Context().get(), done, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  done.clear_not_kept();
  done.add_not_kept("artifact big.bin (2.2 MB) not uploaded: past 2 MiB");
  done.add_not_kept("log stdout (40 MB) not stored:\nrefused");
  const grpc::Status ok = stub_->CompleteJob(Context().get(), done, &resp);
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  // Oldest first, one line each, in ListJobs too.
  EXPECT_EQ(NotKept(), (std::vector<std::string>{
                           "artifact big.bin (2.2 MB) not uploaded: past 2 MiB",
                           "log stdout (40 MB) not stored: refused"}));
  v1::ListJobsRequest list;
  list.set_sweep("svc");
  v1::ListJobsResponse jobs;
  ASSERT_TRUE(stub_->ListJobs(Context().get(), list, &jobs).ok());
  int noted = 0;
  for (const v1::JobInfo& j : jobs.jobs()) {
    if (j.job_id() == lease_.job_id()) noted = j.not_kept_size();
  }
  EXPECT_EQ(noted, 2);
}

}  // namespace
}  // namespace tailsweep

namespace tailsweep {
namespace {

class TokenServiceTest : public ServiceTest {
 protected:
  void SetUp() override {
    token_ = "s3cret-token";
    ServiceTest::SetUp();
  }
};

TEST_F(TokenServiceTest, EveryMethodOfEveryServiceAsksForTheToken) {
  const int methods = ForEachServedMethod(
      [&](const std::string& path, const std::string&, bool streaming) {
        std::string answer;
        for (const char* wrong :
             {"", "Bearer wrong", "Bearer s3cret-tokenX", "s3cret-token"}) {
          EXPECT_EQ(
              testing::RawCall(address_, path, "", &answer, streaming, wrong)
                  .error_code(),
              grpc::StatusCode::UNAUTHENTICATED)
              << path << " with '" << wrong << "'";
        }
        EXPECT_NE(testing::RawCall(address_, path, "", &answer, streaming,
                                   "Bearer s3cret-token")
                      .error_code(),
                  grpc::StatusCode::UNAUTHENTICATED)
            << path;
      });
  EXPECT_EQ(methods, 29);  // 28 Coordinator calls and Health.Check
}

TEST_F(ServiceTest, OversizedMessagesAreResourceExhausted) {
  grpc::Status status;
  Submit(std::string(5 << 20, '#'), &status);  // gRPC's 4 MiB default
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(ServiceTest, HealthIsServingWhileTheStoreWorks) {
  std::string answer;
  ASSERT_TRUE(testing::RawCall(address_, "/grpc.health.v1.Health/Check", "",
                               &answer, false)
                  .ok());
  EXPECT_EQ(answer, std::string("\x08\x01", 2));
}

}  // namespace
}  // namespace tailsweep
