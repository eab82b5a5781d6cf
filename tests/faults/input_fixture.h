#ifndef TAILSWEEP_TESTS_FAULTS_INPUT_FIXTURE_H_
#define TAILSWEEP_TESTS_FAULTS_INPUT_FIXTURE_H_

// The fixture of the input and sharing faults (sharing_faults_test.cc,
// input_faults_test.cc): a real coordinator (testing::Cluster), sweeps
// submitted under their own file names, and the worker's side of the API
// spoken by the test itself where the moment of each call must be exact.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "proto/tailsweep.grpc.pb.h"
#include "tests/faults/fault_fixture.h"
#include "tests/testing/cluster.h"

namespace tailsweep {

// A train sweep over `kernels` of the tiny model.
inline std::string TrainSpec(const std::string& name,
                             const std::string& kernels, int steps) {
  return TinySpec(name, absl::StrCat("  kernel: [", kernels, "]\n"),
                  {{"steps", absl::StrCat(steps)}});
}

inline size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + what.size())) {
    ++n;
  }
  return n;
}

class InputFaults : public ::testing::Test, public testing::Cluster {
 protected:
  InputFaults() : testing::Cluster(TAILSWEEP_BIN_DIR, "tailsweep_input_") {}

  std::string JobOf(const std::string& kernel) {
    return QueryText(
        absl::StrCat("SELECT job_id FROM jobs WHERE json_extract(params, "
                     "'$.kernel') = '",
                     kernel, "'"));
  }
  // Submits `spec` under its own file name (several sweeps in one test),
  // retrying while the coordinator starts.
  void SubmitAs(const std::string& file, const std::string& spec) {
    std::ofstream(dir_ + "/" + file) << spec;
    testing::CommandResult last;
    if (testing::WaitUntil(
            [&] {
              last = Cli("submit " + dir_ + "/" + file);
              return last.exit_code == 0;
            },
            testing::EventDeadline(), std::chrono::milliseconds(100))) {
      return;
    }
    ADD_FAILURE() << "could not submit " << file << ": " << last.err;
  }
  // The pids of live processes whose command line mentions `text`.
  std::vector<pid_t> PidsMentioning(const std::string& text) {
    const testing::CommandResult r = testing::RunCommand(
        "pgrep -f -- '[" + text.substr(0, 1) + "]" + text.substr(1) + "'");
    std::vector<pid_t> out;
    for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
      int pid = 0;
      if (absl::SimpleAtoi(line, &pid)) out.push_back(pid);
    }
    return out;
  }

  // The worker's side of the API, spoken by the test.
  v1::Coordinator::Stub& Stub() {
    if (!stub_) {
      stub_ = v1::Coordinator::NewStub(
          grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
    }
    return *stub_;
  }
  std::unique_ptr<grpc::ClientContext> Context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(10));
    return ctx;
  }
  // Waits for the coordinator, then leases up to `n` jobs as `worker`.
  std::vector<v1::JobLease> LeaseAs(const std::string& worker, int n) {
    v1::LeaseJobsRequest req;
    req.set_worker_id(worker);
    req.set_max_jobs(n);
    req.set_lease_ms(60000);
    v1::LeaseJobsResponse resp;
    grpc::Status s;
    testing::WaitUntil(
        [&] {
          s = Stub().LeaseJobs(Context().get(), req, &resp);
          return s.error_code() != grpc::StatusCode::UNAVAILABLE;
        },
        testing::EventDeadline(), std::chrono::milliseconds(100));
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.leases().begin(), resp.leases().end()};
  }
  grpc::Status Complete(const std::string& worker, const v1::JobLease& lease,
                        const std::string& result) {
    v1::CompleteJobRequest req;
    req.set_worker_id(worker);
    req.set_job_id(lease.job_id());
    req.set_epoch(lease.epoch());
    req.set_result_json(result);
    v1::CompleteJobResponse resp;
    return Stub().CompleteJob(Context().get(), req, &resp);
  }

  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_TESTS_FAULTS_INPUT_FIXTURE_H_
