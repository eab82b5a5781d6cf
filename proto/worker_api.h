#ifndef TAILSWEEP_PROTO_WORKER_API_H_
#define TAILSWEEP_PROTO_WORKER_API_H_

// The worker's calls to the coordinator (proto/tailsweep.proto), one method
// per RPC, in core/schema's types: each fills the request (worker id, the
// lease's job and epoch), sets the deadline and the token, makes the call
// through the link's stubs and answers an absl::Status (wire_status.h).
// Checkpoint transfers run under a progress deadline instead (cut off when
// no chunk moves for a call's timeout), whatever their size. A CANCELLED
// that is not the coordinator's mark (status_details.h) is a call cut off in
// transport and answers UNAVAILABLE. An Unreachable answer tells the link
// (it may look for the coordinator elsewhere). No retry policy lives here:
// that is the worker's (worker/coordinator_client.h).
//
// Threads: each method may be called from any thread; a TransferCancel
// serves one transfer at a time.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/schema/checkpoint_name.h"
#include "core/schema/job_lease.h"
#include "core/schema/metric_point.h"
#include "proto/coordinator_link.h"

namespace grpc {
class ClientContext;
}

namespace tailsweep {

// Worth retrying: the coordinator is unreachable, restarting or was killed
// mid-call (UNAVAILABLE, DEADLINE_EXCEEDED; INTERNAL, UNKNOWN for a stream
// reset), or its store is busy (ABORTED). Every call is safe to repeat.
bool Unreachable(const absl::Status& status);
// The lease is gone: stop the job, report nothing. (CANCELLED here is only
// ever the coordinator's: the transport's answers UNAVAILABLE.)
bool LeaseGone(const absl::Status& status);
// The coordinator refuses the request itself, and would refuse it again
// (INVALID_ARGUMENT, OUT_OF_RANGE, RESOURCE_EXHAUSTED: a field out of its
// bounds, a message over --max-message-bytes): a failure of the job's
// report, not of the link; repeating the same call cannot help.
bool Refused(const absl::Status& status);

// Cancels one checkpoint transfer from another thread, whether it is in
// flight or not started yet: it then answers CANCELLED. Thread-safe.
class TransferCancel {
 public:
  void Cancel();
  bool cancelled() const;

 private:
  friend class WorkerApi;
  // False when already cancelled (the call is not made).
  bool Attach(grpc::ClientContext* ctx);
  void Detach();

  mutable std::mutex mu_;
  grpc::ClientContext* ctx_ = nullptr;  // guarded by mu_
  bool cancelled_ = false;              // guarded by mu_
};

struct WorkerApiOptions {
  std::string worker_id;
  std::string token;  // "": none
  int64_t lease_ms = 30000;
  int64_t rpc_timeout_ms = 10000;
};

// One LeaseJobs request. The same request_id sent again is answered with
// the leases an unanswered earlier call made (the coordinator remembers).
struct LeaseRequest {
  std::string request_id;
  int max_jobs = 1;
  std::vector<int> free_slots;       // per placement unit (device_placement.h)
  std::vector<std::string> devices;  // the worker's: "cpu" or "cuda:N"
};

class WorkerApi {
 public:
  // `link` must outlive the api.
  WorkerApi(CoordinatorLink* link, WorkerApiOptions options);

  const WorkerApiOptions& options() const { return options_; }

  absl::Status LeaseJobs(const LeaseRequest& request, LeaseAnswer* out);
  // `output`: what the job's stdout and stderr grew by (LiveOutput).
  struct Output {
    std::string stream;  // stdout | stderr
    int64_t offset = 0;
    std::string data;
  };
  absl::Status Heartbeat(const JobLease& lease,
                         const std::vector<Output>& output = {});
  // *stop_early (when given): why the sweep's stop rule stopped the run,
  // or "" (ReportMetricsResponse.stop_early).
  absl::Status ReportMetrics(const JobLease& lease, int64_t seq,
                             const std::vector<MetricPoint>& points,
                             std::string* stop_early = nullptr);
  // Sends `file`; *stored_step: the step the coordinator has now. A file
  // that cannot be read is DATA_LOSS or NOT_FOUND, not a lease answer.
  // `cancel`: null, or how another thread may cut the call off.
  // `keep_metric`: the metric's value at its step, when the sweep keeps
  // checkpoints for their metric (lease.outputs.checkpoints) and this one
  // is a candidate.
  absl::Status UploadCheckpoint(
      const JobLease& lease, const CheckpointFile& file, int64_t* stored_step,
      TransferCancel* cancel = nullptr,
      std::optional<double> keep_metric = std::nullopt);
  // Sends a file the attempt made (UploadJobFile).
  absl::Status UploadJobFile(const JobLease& lease, const AttemptFile& file,
                             TransferCancel* cancel = nullptr);
  // Receives the stored checkpoint into `checkpoint_dir` when it is newer
  // than `local_step`. *stored_step: its step (set when the answer says).
  // NOT_FOUND: none stored.
  absl::Status DownloadCheckpoint(const JobLease& lease,
                                  const std::string& checkpoint_dir,
                                  int64_t local_step, int64_t* stored_step,
                                  TransferCancel* cancel = nullptr);
  // `not_kept`: what the attempt made but did not store, and why; at most
  // kMaxNotKeptNotes of kMaxNotKeptBytes (run_outputs.h: NotKeptNotes).
  absl::Status CompleteJob(const JobLease& lease,
                           const std::string& result_json,
                           const std::string& stderr_tail,
                           const std::vector<std::string>& not_kept = {});
  // `permanent`: a retry would fail again (FailJobRequest.permanent).
  absl::Status FailJob(const JobLease& lease, const std::string& error,
                       const std::string& stderr_tail,
                       const std::vector<std::string>& not_kept = {},
                       bool permanent = false);
  absl::Status ReleaseJob(const JobLease& lease, const std::string& reason,
                          const std::vector<std::string>& not_kept = {});

 private:
  // The longest a checkpoint transfer may take while it moves.
  static constexpr int64_t kTransferDeadlineMs = 6 * 3600 * 1000;

  // fn(ctx, stub) makes the call through the link's `calls` stub.
  template <typename Fn>
  absl::Status Call(Fn fn);
  // A streaming call under a progress deadline (progress_watchdog.h):
  // fn(ctx, watchdog, stub), through the link's `transfers` stub.
  template <typename Fn>
  absl::Status Transfer(TransferCancel* cancel, Fn fn);
  absl::Status Answered(absl::Status status);

  CoordinatorLink* link_;
  const WorkerApiOptions options_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_PROTO_WORKER_API_H_
