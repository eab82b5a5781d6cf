#ifndef TAILSWEEP_WORKER_WORKER_H_
#define TAILSWEEP_WORKER_WORKER_H_

// The worker daemon's loop: lease a job per free slot, run each in its own
// child process (`tailsweep lab train` or `lab tails`), heartbeat its lease,
// relay its metrics in numbered batches (unacknowledged batches are kept and
// resent), report its result or failure, and stop it when its lease is
// fenced (FAILED_PRECONDITION) or cancelled. Single-threaded; every RPC has
// a deadline. Not thread-safe.

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proto/tailsweep.grpc.pb.h"
#include "worker/child_process.h"

namespace tailsweep {

struct WorkerOptions {
  std::string worker_id;      // stable per daemon, e.g. host-pid
  std::string tailsweep_bin;  // the `tailsweep` executable
  std::string work_dir;       // one subdirectory per job
  std::vector<std::string> devices = {"cpu"};  // cpu or cuda:N
  int slots_per_device = 1;
  int threads_per_slot = 1;
  int64_t lease_ms = 30000;
  int64_t poll_ms = 200;
  int64_t rpc_timeout_ms = 10000;
  // Exit when no job is running and none could be leased (tests, scripts).
  bool exit_when_idle = false;
};

class Worker {
 public:
  Worker(v1::Coordinator::StubInterface* stub, WorkerOptions options);
  // Runs until `stop` becomes true (then forwards SIGTERM to running jobs,
  // which checkpoint and exit, and returns), or until idle when asked.
  void Run(const std::atomic<bool>& stop);

  int64_t jobs_completed() const { return completed_; }
  int64_t jobs_failed() const { return failed_; }

 private:
  struct Running {
    v1::JobLease lease;
    std::string device;
    std::string dir;
    std::unique_ptr<ChildProcess> child;
    int64_t next_heartbeat_ms = 0;
    int64_t metrics_offset = 0;  // bytes of metrics.jsonl relayed
    int64_t next_seq = 1;
    std::deque<v1::ReportMetricsRequest> unacked;
    bool fenced = false;
  };

  void LeaseFreeSlots();
  // The started job, or null when it could not start (then it is failed).
  std::unique_ptr<Running> Start(const v1::JobLease& lease,
                                 const std::string& device);
  // Returns false when the job is over (finished, failed or fenced).
  bool Tend(Running& job);
  void RelayMetrics(Running& job);
  // SIGKILL and reap: for attempts whose lease is gone.
  void StopNow(Running& job);
  void Finish(Running& job, int exit_code);
  void ReportFailure(const v1::JobLease& lease, const std::string& error);
  std::unique_ptr<grpc::ClientContext> Context() const;

  v1::Coordinator::StubInterface* stub_;
  WorkerOptions options_;
  std::map<std::string, std::unique_ptr<Running>> running_;  // by slot name
  int64_t completed_ = 0;
  int64_t failed_ = 0;
  bool idle_ = false;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_WORKER_H_
