#ifndef TAILSWEEP_WORKER_COORDINATOR_CLIENT_H_
#define TAILSWEEP_WORKER_COORDINATOR_CLIENT_H_

// The worker's retry policy over its calls to the coordinator
// (proto/worker_api.h, which makes them). Answers that mean "unreachable"
// (Unreachable()) start or extend an exponential backoff with jitter
// (backoff.h), capped at a quarter lease; while it lasts, ready() is false
// and calls answer UNAVAILABLE without being made. Any answer ends it. A
// lease request that got no answer is repeated as it was (same id), so the
// leases the lost answer held are not stranded. Reachability changes are
// logged.
//
// Threads: the checkpoint transfers may run on other threads (one call per
// thread at a time, each with its own TransferCancel) while the other calls
// are made from one thread; the backoff is shared.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/schema/checkpoint_name.h"
#include "core/schema/clock.h"
#include "core/schema/job_lease.h"
#include "proto/worker_api.h"
#include "worker/backoff.h"
#include "worker/metrics_relay.h"

namespace tailsweep {

struct CoordinatorClientOptions {
  std::string worker_id;
  std::string token;  // "": none
  int64_t lease_ms = WorkerApiOptions{}.lease_ms;
  int64_t rpc_timeout_ms = WorkerApiOptions{}.rpc_timeout_ms;
  int64_t backoff_base_ms = 250;
  int64_t backoff_cap_ms = 8000;
  // Sent with every lease call: a worker on the CPU alone is leased no job
  // that asks for GPUs (proto: LeaseJobsRequest.devices).
  std::vector<std::string> devices;
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
  absl::Status LeaseJobs(int max_jobs, const std::vector<int>& free_slots,
                         LeaseAnswer* out, int64_t* asked_ms,
                         std::vector<int>* placed_on);
  absl::Status Heartbeat(const JobLease& lease,
                         const std::vector<WorkerApi::Output>& output = {});
  absl::Status ReportMetrics(const JobLease& lease, const MetricsBatch& batch,
                             std::string* stop_early = nullptr);
  // As WorkerApi's.
  absl::Status UploadCheckpoint(
      const JobLease& lease, const CheckpointFile& file, int64_t* stored_step,
      TransferCancel* cancel = nullptr,
      std::optional<double> keep_metric = std::nullopt);
  absl::Status UploadJobFile(const JobLease& lease, const AttemptFile& file,
                             TransferCancel* cancel = nullptr);
  absl::Status DownloadCheckpoint(const JobLease& lease,
                                  const std::string& checkpoint_dir,
                                  int64_t local_step, int64_t* stored_step,
                                  TransferCancel* cancel = nullptr);
  // `not_kept`: what the attempt made but did not store, and why.
  absl::Status CompleteJob(const JobLease& lease,
                           const std::string& result_json,
                           const std::string& stderr_tail,
                           const std::vector<std::string>& not_kept = {});
  absl::Status FailJob(const JobLease& lease, const std::string& error,
                       const std::string& stderr_tail,
                       const std::vector<std::string>& not_kept = {},
                       bool permanent = false);
  absl::Status ReleaseJob(const JobLease& lease, const std::string& reason,
                          const std::vector<std::string>& not_kept = {});

 private:
  // fn() makes the call through api_, unless backing off.
  template <typename Fn>
  absl::Status Call(const char* what, Fn fn);
  // Backoff and reachability logs from a call's answer.
  absl::Status Answered(const char* what, absl::Status status);

  Clock* clock_;
  const CoordinatorClientOptions options_;
  WorkerApi api_;
  std::mutex backoff_mu_;
  Backoff backoff_;  // guarded by backoff_mu_
  int64_t lease_calls_ = 0;
  std::optional<LeaseRequest> unanswered_lease_;
  int64_t unanswered_since_ms_ = 0;  // when it was first sent
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_COORDINATOR_CLIENT_H_
