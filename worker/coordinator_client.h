#ifndef TAILSWEEP_WORKER_COORDINATOR_CLIENT_H_
#define TAILSWEEP_WORKER_COORDINATOR_CLIENT_H_

// The worker's calls to the coordinator (proto/tailsweep.proto), one method
// per RPC: each fills the request (worker id, the lease's job and epoch),
// sets the deadline and the token, and answers the call's status.
// Checkpoint transfers run under a progress deadline instead (cut off when
// no chunk moves for a call's timeout), whatever their size. Answers
// that mean "unreachable" (Unreachable()) start or extend an exponential
// backoff with jitter (backoff.h), capped at a quarter lease; while it
// lasts, ready() is false and calls answer UNAVAILABLE without being made.
// Any answer ends it. Reachability changes are logged.
//
// Threads: the checkpoint transfers may run on other threads (one call per
// thread at a time, each with its own TransferCancel) while the other calls
// are made from one thread; the backoff is shared.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/schema/checkpoint_name.h"
#include "core/schema/clock.h"
#include "proto/tailsweep.grpc.pb.h"
#include "worker/backoff.h"
#include "worker/coordinator_link.h"
#include "worker/metrics_relay.h"

namespace tailsweep {

// Worth retrying: the coordinator is unreachable, restarting or was killed
// mid-call (UNAVAILABLE, DEADLINE_EXCEEDED; INTERNAL, UNKNOWN for a stream
// reset), or its store is busy (ABORTED). Every call is safe to repeat.
bool Unreachable(const grpc::Status& status);
// The lease is gone: stop the job, report nothing. (CANCELLED here is only
// ever the coordinator's: the client turns a transport's into UNAVAILABLE.)
bool LeaseGone(const grpc::Status& status);

// Cancels one checkpoint transfer from another thread, whether it is in
// flight or not started yet: it then answers CANCELLED. Thread-safe.
class TransferCancel {
 public:
  void Cancel();
  bool cancelled() const;

 private:
  friend class CoordinatorClient;
  // False when already cancelled (the call is not made).
  bool Attach(grpc::ClientContext* ctx);
  void Detach();

  mutable std::mutex mu_;
  grpc::ClientContext* ctx_ = nullptr;  // guarded by mu_
  bool cancelled_ = false;              // guarded by mu_
};

struct CoordinatorClientOptions {
  std::string worker_id;
  std::string token;  // "": none
  int64_t lease_ms = 30000;
  int64_t rpc_timeout_ms = 10000;
  int64_t backoff_base_ms = 250;
  int64_t backoff_cap_ms = 8000;
};

class CoordinatorClient {
 public:
  // `link` and `clock` must outlive the client. Each call takes its stubs
  // from the link, and tells it when the coordinator was unreachable.
  CoordinatorClient(CoordinatorLink* link, Clock* clock,
                    CoordinatorClientOptions options);

  // False while backing off.
  bool ready();

  // Asks for up to `max_jobs` leases that fit `free_slots` (free slots per
  // placement unit, core/schema/device_placement.h). A call that got no
  // answer (Unreachable) is repeated by the next LeaseJobs, with its request
  // id, size and free slots (not these), until one comes: the coordinator
  // then answers with the leases the lost answer held, so none is stranded.
  // *asked_ms: when the answered request was first sent (steady), which is
  // when its leases began at the latest; *placed_on: the free slots it sent,
  // on which the coordinator placed the leases.
  grpc::Status LeaseJobs(int max_jobs, const std::vector<int>& free_slots,
                         v1::LeaseJobsResponse* out, int64_t* asked_ms,
                         std::vector<int>* placed_on);
  grpc::Status Heartbeat(const v1::JobLease& lease);
  grpc::Status ReportMetrics(const v1::JobLease& lease,
                             const MetricsBatch& batch);
  // Sends `file`; *stored_step: the step the coordinator has now. A file
  // that cannot be read is DATA_LOSS or NOT_FOUND, not a lease answer.
  // `cancel`: null, or how another thread may cut the call off.
  grpc::Status UploadCheckpoint(const v1::JobLease& lease,
                                const CheckpointFile& file,
                                int64_t* stored_step,
                                TransferCancel* cancel = nullptr);
  // Receives the stored checkpoint into `checkpoint_dir` when it is newer
  // than `local_step`. *stored_step: its step (set when the answer says).
  // NOT_FOUND: none stored.
  grpc::Status DownloadCheckpoint(const v1::JobLease& lease,
                                  const std::string& checkpoint_dir,
                                  int64_t local_step, int64_t* stored_step,
                                  TransferCancel* cancel = nullptr);
  grpc::Status CompleteJob(const v1::JobLease& lease,
                           const std::string& result_json,
                           const std::string& stderr_tail);
  grpc::Status FailJob(const v1::JobLease& lease, const std::string& error,
                       const std::string& stderr_tail);
  grpc::Status ReleaseJob(const v1::JobLease& lease, const std::string& reason);

 private:
  // The longest a checkpoint transfer may take while it moves.
  static constexpr int64_t kTransferDeadlineMs = 6 * 3600 * 1000;

  // fn(ctx, stub) makes the call through the link's `calls` stub.
  template <typename Fn>
  grpc::Status Call(const char* what, Fn fn);
  // A streaming call under a progress deadline (progress_watchdog.h):
  // fn(ctx, watchdog, stub), through the link's `transfers` stub.
  template <typename Fn>
  grpc::Status Transfer(const char* what, TransferCancel* cancel, Fn fn);
  // Backoff and reachability logs from a call's answer. A CANCELLED that
  // is not the coordinator's (proto/status_details.h) becomes UNAVAILABLE.
  grpc::Status Answered(const char* what, grpc::Status status);

  CoordinatorLink* link_;
  Clock* clock_;
  const CoordinatorClientOptions options_;
  std::mutex backoff_mu_;
  Backoff backoff_;  // guarded by backoff_mu_
  int64_t lease_calls_ = 0;
  std::optional<v1::LeaseJobsRequest> unanswered_lease_;
  int64_t unanswered_since_ms_ = 0;  // when it was first sent
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_COORDINATOR_CLIENT_H_
