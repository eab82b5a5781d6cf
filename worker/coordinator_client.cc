#include "worker/coordinator_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "proto/status_details.h"

namespace tailsweep {

CoordinatorClient::CoordinatorClient(CoordinatorLink* link, Clock* clock,
                                     CoordinatorClientOptions options)
    : clock_(clock),
      options_(std::move(options)),
      api_(link, WorkerApiOptions{options_.worker_id, options_.token,
                                  options_.lease_ms, options_.rpc_timeout_ms}),
      // Capped at a quarter lease: a short outage must not cost the leases.
      backoff_(options_.backoff_base_ms,
               std::min(options_.backoff_cap_ms,
                        std::max<int64_t>(options_.lease_ms / 4, 1)),
               std::hash<std::string>{}(options_.worker_id)) {}

bool CoordinatorClient::ready() {
  const int64_t now = clock_->SteadyMs();
  std::lock_guard<std::mutex> lock(backoff_mu_);
  return backoff_.Ready(now);
}

template <typename Fn>
absl::Status CoordinatorClient::Call(const char* what, Fn fn) {
  if (!ready()) return absl::UnavailableError("backing off");
  return Answered(what, fn());
}

absl::Status CoordinatorClient::Answered(const char* what,
                                         absl::Status status) {
  const int64_t now = clock_->SteadyMs();
  std::lock_guard<std::mutex> lock(backoff_mu_);
  if (Unreachable(status)) {
    const int64_t wait = backoff_.Failed(now);
    spdlog::warn(
        "{}: coordinator {} ({}: {}); retry {} in {} ms", what,
        IsStorageRefused(status) ? "refused it for now" : "unreachable",
        static_cast<int>(status.code()), std::string(status.message()),
        backoff_.failures(), wait);
  } else {
    if (backoff_.failures() > 0) {
      spdlog::info("coordinator reachable again (after {} failed calls)",
                   backoff_.failures());
    }
    backoff_.Succeeded();
  }
  return status;
}

absl::Status CoordinatorClient::LeaseJobs(int max_jobs,
                                          const std::vector<int>& free_slots,
                                          LeaseAnswer* out, int64_t* asked_ms,
                                          std::vector<int>* placed_on) {
  if (!unanswered_lease_) {
    unanswered_since_ms_ = clock_->SteadyMs();
    unanswered_lease_ =
        LeaseRequest{absl::StrCat(options_.worker_id, "/", ++lease_calls_),
                     max_jobs, free_slots, options_.devices};
  }
  const absl::Status status =
      Call("lease", [&] { return api_.LeaseJobs(*unanswered_lease_, out); });
  // Without an answer the coordinator may have leased jobs to us: the same
  // request goes again (same id, same size), and it answers with those.
  *asked_ms = unanswered_since_ms_;
  *placed_on = unanswered_lease_->free_slots;
  if (!Unreachable(status)) unanswered_lease_.reset();
  return status;
}

absl::Status CoordinatorClient::Heartbeat(
    const JobLease& lease, const std::vector<WorkerApi::Output>& output) {
  return Call("heartbeat", [&] { return api_.Heartbeat(lease, output); });
}

absl::Status CoordinatorClient::ReportMetrics(const JobLease& lease,
                                              const MetricsBatch& batch,
                                              std::string* stop_early) {
  return Call("metrics", [&] {
    return api_.ReportMetrics(lease, batch.seq, batch.points, stop_early);
  });
}

absl::Status CoordinatorClient::UploadJobFile(const JobLease& lease,
                                              const AttemptFile& file,
                                              TransferCancel* cancel) {
  if (!ready()) return absl::UnavailableError("backing off");
  absl::Status status = api_.UploadJobFile(lease, file, cancel);
  if (cancel != nullptr && cancel->cancelled()) return status;
  return Answered("upload job file", std::move(status));
}

absl::Status CoordinatorClient::UploadCheckpoint(
    const JobLease& lease, const CheckpointFile& file, int64_t* stored_step,
    TransferCancel* cancel, std::optional<double> keep_metric) {
  if (!ready()) return absl::UnavailableError("backing off");
  absl::Status status =
      api_.UploadCheckpoint(lease, file, stored_step, cancel, keep_metric);
  // Cancelled by the worker: says nothing about the coordinator.
  if (cancel != nullptr && cancel->cancelled()) return status;
  return Answered("upload checkpoint", std::move(status));
}

absl::Status CoordinatorClient::DownloadCheckpoint(
    const JobLease& lease, const std::string& checkpoint_dir,
    int64_t local_step, int64_t* stored_step, TransferCancel* cancel) {
  if (!ready()) return absl::UnavailableError("backing off");
  absl::Status status = api_.DownloadCheckpoint(
      lease, checkpoint_dir, local_step, stored_step, cancel);
  if (cancel != nullptr && cancel->cancelled()) return status;
  return Answered("download checkpoint", std::move(status));
}

absl::Status CoordinatorClient::CompleteJob(
    const JobLease& lease, const std::string& result_json,
    const std::string& stderr_tail, const std::vector<std::string>& not_kept) {
  return Call("complete", [&] {
    return api_.CompleteJob(lease, result_json, stderr_tail, not_kept);
  });
}

absl::Status CoordinatorClient::FailJob(
    const JobLease& lease, const std::string& error,
    const std::string& stderr_tail, const std::vector<std::string>& not_kept,
    bool permanent) {
  return Call("fail", [&] {
    return api_.FailJob(lease, error, stderr_tail, not_kept, permanent);
  });
}

absl::Status CoordinatorClient::ReleaseJob(
    const JobLease& lease, const std::string& reason,
    const std::vector<std::string>& not_kept) {
  return Call("release",
              [&] { return api_.ReleaseJob(lease, reason, not_kept); });
}

}  // namespace tailsweep
