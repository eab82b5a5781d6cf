#ifndef TAILSWEEP_WORKER_WORKER_H_
#define TAILSWEEP_WORKER_WORKER_H_

// The worker daemon's loop: lease a job per free slot, run each in its own
// child process (`tailsweep lab train` or `lab tails`), heartbeat its lease,
// relay its metrics, checkpoints and result, and stop it when its lease is
// fenced (FAILED_PRECONDITION) or cancelled.
//
// Nothing is lost while the coordinator is unreachable:
// - metrics are read from the job's metrics.jsonl (on disk) into numbered
//   batches; at most `max_unacked_batches` unacknowledged batches are held in
//   memory and resent in order, the rest waits in the file;
// - a checkpoint is uploaded only once every metric logged before it is
//   acknowledged, so resuming from it elsewhere loses no point;
// - a finished job keeps its lease alive (heartbeats) until its metrics and
//   then its result are acknowledged;
// - calls back off exponentially with jitter while the coordinator is
//   unreachable, and carry on when it answers again.
//
// Single-threaded; every RPC has a deadline. Not thread-safe.

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proto/tailsweep.grpc.pb.h"
#include "worker/backoff.h"
#include "worker/child_process.h"

namespace tailsweep {

struct WorkerOptions {
  std::string worker_id;      // stable per daemon, e.g. host-pid
  std::string tailsweep_bin;  // the `tailsweep` executable
  std::string work_dir;       // one subdirectory per job
  std::string token;          // bearer token sent on every call; "": none
  std::vector<std::string> devices = {"cpu"};  // cpu or cuda:N
  int slots_per_device = 1;
  int threads_per_slot = 1;
  int64_t lease_ms = 30000;
  int64_t poll_ms = 200;
  int64_t rpc_timeout_ms = 10000;
  // Reconnect backoff while the coordinator is unreachable.
  int64_t backoff_base_ms = 250;
  int64_t backoff_cap_ms = 8000;
  // Metric batches in memory per job, and points per batch.
  int max_unacked_batches = 16;
  int max_batch_points = 5000;
  // After SIGTERM: how long jobs may take to checkpoint and be reported.
  int64_t shutdown_grace_ms = 30000;
  // Exit when no job is running and none could be leased (tests, scripts).
  bool exit_when_idle = false;
};

class Worker {
 public:
  Worker(v1::Coordinator::StubInterface* stub, WorkerOptions options);
  // Runs until `stop` becomes true (then forwards SIGTERM to running jobs,
  // which checkpoint and exit; their leases are given back), or until idle
  // when asked.
  void Run(const std::atomic<bool>& stop);

  int64_t jobs_completed() const { return completed_; }
  int64_t jobs_failed() const { return failed_; }

 private:
  struct Job {
    v1::JobLease lease;
    std::string device;
    std::string dir;
    std::unique_ptr<ChildProcess> child;
    std::optional<int> exit_code;  // set once the child has exited
    int64_t next_heartbeat_ms = 0;
    int64_t metrics_offset = 0;   // bytes of metrics.jsonl read
    ino_t metrics_inode = 0;      // of the metrics.jsonl they were read from
    bool metrics_at_end = false;  // the last read reached the file's end
    int64_t next_seq = 1;
    std::vector<v1::ReportMetricsRequest> unacked;  // oldest first
    int64_t uploaded_step = 0;  // newest checkpoint the coordinator has
    bool fenced = false;        // the lease is gone: stop, report nothing
  };

  // Tends every job once: running ones, then finished ones.
  void Round();
  void LeaseFreeSlots();
  // The started job, or null when it could not start (then it is failed).
  std::unique_ptr<Job> Start(const v1::JobLease& lease,
                             const std::string& device);
  // Stops and forgets local attempts of `job_id` (re-leased to us).
  void DropLocal(const std::string& job_id);
  // One round for a running job; false once its child has exited (then it
  // moves to finished_) or it was fenced (then it is dropped).
  bool TendRunning(Job& job);
  // One round for a job whose child exited; false once it is reported.
  bool TendFinished(Job& job);
  void Heartbeat(Job& job);
  void RelayMetrics(Job& job);
  void UploadCheckpoint(Job& job, int64_t step, const std::string& path);
  void DownloadCheckpoint(Job& job);
  // SIGKILL and reap: for attempts whose lease is gone.
  void StopNow(Job& job);
  // Reports the finished job's outcome; false to try again next round.
  bool Report(Job& job);

  // Runs an RPC unless backing off; UNAVAILABLE and DEADLINE_EXCEEDED start
  // (or extend) the backoff, any answer ends it.
  template <typename Fn>
  grpc::Status Call(const char* what, Fn fn);
  std::unique_ptr<grpc::ClientContext> Context() const;

  v1::Coordinator::StubInterface* stub_;
  WorkerOptions options_;
  Backoff backoff_;
  std::map<std::string, std::unique_ptr<Job>> running_;  // by slot name
  std::vector<std::unique_ptr<Job>> finished_;           // being reported
  int64_t completed_ = 0;
  int64_t failed_ = 0;
  int64_t lease_calls_ = 0;
  bool idle_ = false;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_WORKER_H_
