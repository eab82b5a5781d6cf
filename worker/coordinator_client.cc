#include "worker/coordinator_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>

#include "absl/strings/str_cat.h"
#include "proto/checkpoint_transfer.h"
#include "proto/client_channel.h"
#include "proto/status_details.h"
#include "worker/progress_watchdog.h"

namespace tailsweep {

bool Unreachable(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::ABORTED:
      return true;
    default:
      return false;
  }
}

bool LeaseGone(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
         s.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
         s.error_code() == grpc::StatusCode::CANCELLED ||
         s.error_code() == grpc::StatusCode::NOT_FOUND;
}

void TransferCancel::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (ctx_ != nullptr) ctx_->TryCancel();
}

bool TransferCancel::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool TransferCancel::Attach(grpc::ClientContext* ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return false;
  ctx_ = ctx;
  return true;
}

void TransferCancel::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  ctx_ = nullptr;
}

CoordinatorClient::CoordinatorClient(CoordinatorLink* link, Clock* clock,
                                     CoordinatorClientOptions options)
    : link_(link),
      clock_(clock),
      options_(std::move(options)),
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
grpc::Status CoordinatorClient::Call(const char* what, Fn fn) {
  if (!ready())
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "backing off");
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(options_.rpc_timeout_ms));
  AddToken(&ctx, options_.token);
  // Held for the call: the link may move on meanwhile.
  const std::shared_ptr<const CoordinatorStubs> stubs = link_->Stubs();
  return Answered(what, fn(&ctx, stubs->calls));
}

template <typename Fn>
grpc::Status CoordinatorClient::Transfer(const char* what,
                                         TransferCancel* cancel, Fn fn) {
  const grpc::Status cancelled(grpc::StatusCode::CANCELLED,
                               "cancelled by the worker");
  if (!ready())
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "backing off");
  // As long as it needs while chunks move; cut off (and retried as
  // unreachable) once it stalls for a call's timeout.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(kTransferDeadlineMs));
  AddToken(&ctx, options_.token);
  if (cancel != nullptr && !cancel->Attach(&ctx)) return cancelled;
  grpc::Status status;
  bool stalled = false;
  {
    const std::shared_ptr<const CoordinatorStubs> stubs = link_->Stubs();
    ProgressWatchdog watchdog(&ctx, options_.rpc_timeout_ms);
    status = fn(&ctx, watchdog, stubs->transfers);
    stalled = watchdog.fired();
  }
  if (cancel != nullptr) {
    cancel->Detach();
    // Our own doing: says nothing about the coordinator.
    if (cancel->cancelled()) return cancelled;
  }
  if (stalled) {
    status = grpc::Status(
        grpc::StatusCode::DEADLINE_EXCEEDED,
        absl::StrCat("no progress for ", options_.rpc_timeout_ms, " ms"));
  }
  return Answered(what, status);
}

grpc::Status CoordinatorClient::Answered(const char* what,
                                         grpc::Status status) {
  if (status.error_code() == grpc::StatusCode::CANCELLED &&
      !IsJobCancelled(status)) {
    // Cut off in transport, not the coordinator's verdict on the job.
    status = grpc::Status(
        grpc::StatusCode::UNAVAILABLE,
        absl::StrCat("call cut off (", status.error_message(), ")"));
  }
  const int64_t now = clock_->SteadyMs();
  {
    std::lock_guard<std::mutex> lock(backoff_mu_);
    if (Unreachable(status)) {
      const int64_t wait = backoff_.Failed(now);
      spdlog::warn(
          "{}: coordinator {} ({}: {}); retry {} in {} ms", what,
          IsStorageRefused(status) ? "refused it for now" : "unreachable",
          static_cast<int>(status.error_code()), status.error_message(),
          backoff_.failures(), wait);
    } else {
      if (backoff_.failures() > 0) {
        spdlog::info("coordinator reachable again (after {} failed calls)",
                     backoff_.failures());
      }
      backoff_.Succeeded();
    }
  }
  // Perhaps it is elsewhere now (a run directory's coordinator moved).
  if (Unreachable(status)) link_->Unreachable();
  return status;
}

grpc::Status CoordinatorClient::LeaseJobs(int max_jobs,
                                          const std::vector<int>& free_slots,
                                          v1::LeaseJobsResponse* out,
                                          int64_t* asked_ms,
                                          std::vector<int>* placed_on) {
  if (!unanswered_lease_) {
    unanswered_since_ms_ = clock_->SteadyMs();
    v1::LeaseJobsRequest req;
    req.set_worker_id(options_.worker_id);
    req.set_max_jobs(max_jobs);
    req.set_lease_ms(options_.lease_ms);
    for (int f : free_slots) req.add_free_slots(f);
    req.set_request_id(absl::StrCat(options_.worker_id, "/", ++lease_calls_));
    unanswered_lease_ = req;
  }
  const grpc::Status status =
      Call("lease",
           [&](grpc::ClientContext* ctx, v1::Coordinator::StubInterface* stub) {
             return stub->LeaseJobs(ctx, *unanswered_lease_, out);
           });
  // Without an answer the coordinator may have leased jobs to us: the same
  // request goes again (same id, same size), and it answers with those.
  *asked_ms = unanswered_since_ms_;
  placed_on->assign(unanswered_lease_->free_slots().begin(),
                    unanswered_lease_->free_slots().end());
  if (!Unreachable(status)) unanswered_lease_.reset();
  return status;
}

grpc::Status CoordinatorClient::Heartbeat(const v1::JobLease& lease) {
  v1::HeartbeatRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(lease.job_id());
  req.set_epoch(lease.epoch());
  req.set_lease_ms(options_.lease_ms);
  v1::HeartbeatResponse resp;
  return Call("heartbeat", [&](grpc::ClientContext* ctx,
                               v1::Coordinator::StubInterface* stub) {
    return stub->Heartbeat(ctx, req, &resp);
  });
}

grpc::Status CoordinatorClient::ReportMetrics(const v1::JobLease& lease,
                                              const MetricsBatch& batch) {
  v1::ReportMetricsRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(lease.job_id());
  req.set_epoch(lease.epoch());
  req.set_seq(batch.seq);
  for (const NamedPoint& p : batch.points) {
    v1::MetricPoint* point = req.add_points();
    point->set_name(p.name);
    point->set_step(p.step);
    point->set_value(p.value);
  }
  v1::ReportMetricsResponse resp;
  return Call("metrics", [&](grpc::ClientContext* ctx,
                             v1::Coordinator::StubInterface* stub) {
    return stub->ReportMetrics(ctx, req, &resp);
  });
}

grpc::Status CoordinatorClient::UploadCheckpoint(const v1::JobLease& lease,
                                                 const CheckpointFile& file,
                                                 int64_t* stored_step,
                                                 TransferCancel* cancel) {
  v1::CheckpointHeader header;
  header.set_worker_id(options_.worker_id);
  header.set_job_id(lease.job_id());
  header.set_epoch(lease.epoch());
  header.set_step(file.step);
  header.set_name(std::filesystem::path(file.path).filename().string());
  v1::UploadCheckpointResponse resp;
  // A broken stream (Unavailable) is the call's own answer; any other
  // SendFile error is the file's, and the call is cancelled.
  absl::Status file_error = absl::OkStatus();
  grpc::Status status = Transfer(
      "upload checkpoint", cancel,
      [&](grpc::ClientContext* ctx, ProgressWatchdog& progress,
          v1::Coordinator::StubInterface* stub) {
        std::unique_ptr<grpc::ClientWriterInterface<v1::CheckpointChunk>>
            writer = stub->UploadCheckpoint(ctx, &resp);
        const absl::Status sent = transfer::SendFile(
            file.path, header, [&](const v1::CheckpointChunk& chunk) {
              const bool ok = writer->Write(chunk);
              progress.Progress();
              return ok;
            });
        if (!sent.ok() && !absl::IsUnavailable(sent)) {
          file_error = sent;
          ctx->TryCancel();
        }
        writer->WritesDone();
        return writer->Finish();
      });
  if (!file_error.ok()) {
    return grpc::Status(grpc::StatusCode::DATA_LOSS,
                        std::string(file_error.message()));
  }
  if (status.ok()) *stored_step = resp.stored_step();
  return status;
}

grpc::Status CoordinatorClient::DownloadCheckpoint(
    const v1::JobLease& lease, const std::string& checkpoint_dir,
    int64_t local_step, int64_t* stored_step, TransferCancel* cancel) {
  v1::DownloadCheckpointRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(lease.job_id());
  req.set_epoch(lease.epoch());
  absl::Status received = absl::OkStatus();
  grpc::Status status = Transfer(
      "download checkpoint", cancel,
      [&](grpc::ClientContext* ctx, ProgressWatchdog& progress,
          v1::Coordinator::StubInterface* stub) {
        std::unique_ptr<grpc::ClientReaderInterface<v1::CheckpointChunk>>
            reader = stub->DownloadCheckpoint(ctx, req);
        v1::CheckpointChunk first;
        if (reader->Read(&first) && first.has_header()) {
          const v1::CheckpointHeader& header = first.header();
          absl::StatusOr<int64_t> named = CheckpointStepOf(header.name());
          if (!named.ok()) {
            received = named.status();
          } else if (header.step() > local_step) {
            received = transfer::ReceiveFile(
                header,
                [&](v1::CheckpointChunk* c) {
                  const bool more = reader->Read(c);
                  progress.Progress();
                  return more;
                },
                (std::filesystem::path(checkpoint_dir) / header.name())
                    .string());
          }
          if (received.ok()) *stored_step = header.step();
          if (header.step() <= local_step || !received.ok()) ctx->TryCancel();
        }
        grpc::Status finished = reader->Finish();
        // Cancelled by us once we had what we needed.
        if (received.ok() && *stored_step > 0 &&
            finished.error_code() == grpc::StatusCode::CANCELLED) {
          return grpc::Status::OK;
        }
        return finished;
      });
  if (!received.ok()) {
    return grpc::Status(grpc::StatusCode::DATA_LOSS,
                        std::string(received.message()));
  }
  return status;
}

grpc::Status CoordinatorClient::CompleteJob(const v1::JobLease& lease,
                                            const std::string& result_json,
                                            const std::string& stderr_tail) {
  v1::CompleteJobRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(lease.job_id());
  req.set_epoch(lease.epoch());
  req.set_result_json(result_json);
  req.set_stderr_tail(stderr_tail);
  v1::CompleteJobResponse resp;
  return Call("complete", [&](grpc::ClientContext* ctx,
                              v1::Coordinator::StubInterface* stub) {
    return stub->CompleteJob(ctx, req, &resp);
  });
}

grpc::Status CoordinatorClient::FailJob(const v1::JobLease& lease,
                                        const std::string& error,
                                        const std::string& stderr_tail) {
  v1::FailJobRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(lease.job_id());
  req.set_epoch(lease.epoch());
  req.set_error(error);
  req.set_stderr_tail(stderr_tail);
  v1::FailJobResponse resp;
  return Call("fail", [&](grpc::ClientContext* ctx,
                          v1::Coordinator::StubInterface* stub) {
    return stub->FailJob(ctx, req, &resp);
  });
}

grpc::Status CoordinatorClient::ReleaseJob(const v1::JobLease& lease,
                                           const std::string& reason) {
  v1::ReleaseJobRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(lease.job_id());
  req.set_epoch(lease.epoch());
  req.set_reason(reason);
  v1::ReleaseJobResponse resp;
  return Call("release", [&](grpc::ClientContext* ctx,
                             v1::Coordinator::StubInterface* stub) {
    return stub->ReleaseJob(ctx, req, &resp);
  });
}

}  // namespace tailsweep
