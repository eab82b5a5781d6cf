#include "proto/worker_api.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/schema/file_util.h"
#include "core/schema/job_kind.h"
#include "proto/checkpoint_transfer.h"
#include "proto/client_channel.h"
#include "proto/progress_watchdog.h"
#include "proto/status_details.h"
#include "proto/tailsweep.grpc.pb.h"
#include "proto/wire_records.h"
#include "proto/wire_status.h"

namespace tailsweep {

bool Unreachable(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

bool LeaseGone(const absl::Status& s) {
  return absl::IsFailedPrecondition(s) || absl::IsPermissionDenied(s) ||
         absl::IsCancelled(s) || absl::IsNotFound(s);
}

bool Refused(const absl::Status& s) {
  return absl::IsInvalidArgument(s) || absl::IsOutOfRange(s) ||
         absl::IsResourceExhausted(s);
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

WorkerApi::WorkerApi(CoordinatorLink* link, WorkerApiOptions options)
    : link_(link), options_(std::move(options)) {}

template <typename Fn>
absl::Status WorkerApi::Call(Fn fn) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(options_.rpc_timeout_ms));
  AddToken(&ctx, options_.token);
  // Held for the call: the link may move on meanwhile.
  const std::shared_ptr<const CoordinatorStubs> stubs = link_->Stubs();
  return Answered(FromGrpc(fn(&ctx, stubs->calls)));
}

template <typename Fn>
absl::Status WorkerApi::Transfer(TransferCancel* cancel, Fn fn) {
  const absl::Status cancelled =
      absl::CancelledError("cancelled by the worker");
  // As long as it needs while chunks move; cut off (and retried as
  // unreachable) once it stalls for a call's timeout.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(kTransferDeadlineMs));
  AddToken(&ctx, options_.token);
  if (cancel != nullptr && !cancel->Attach(&ctx)) return cancelled;
  absl::Status status;
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
    status = absl::DeadlineExceededError(
        absl::StrCat("no progress for ", options_.rpc_timeout_ms, " ms"));
  }
  return Answered(status);
}

absl::Status WorkerApi::Answered(absl::Status status) {
  if (absl::IsCancelled(status) && !IsJobCancelled(status)) {
    // Cut off in transport, not the coordinator's verdict on the job.
    status = absl::UnavailableError(
        absl::StrCat("call cut off (", status.message(), ")"));
  }
  // Perhaps it is elsewhere now (a run directory's coordinator moved).
  if (Unreachable(status)) link_->Unreachable();
  return status;
}

absl::Status WorkerApi::LeaseJobs(const LeaseRequest& request,
                                  LeaseAnswer* out) {
  v1::LeaseJobsRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_max_jobs(request.max_jobs);
  req.set_lease_ms(options_.lease_ms);
  for (int f : request.free_slots) req.add_free_slots(f);
  for (const std::string& d : request.devices) req.add_devices(d);
  // This build runs every kind it knows.
  for (JobKind k : AllJobKinds()) req.add_kinds(std::string(JobKindName(k)));
  req.set_request_id(request.request_id);
  v1::LeaseJobsResponse resp;
  absl::Status status =
      Call([&](grpc::ClientContext* ctx, v1::Coordinator::StubInterface* stub) {
        return stub->LeaseJobs(ctx, req, &resp);
      });
  if (!status.ok()) return status;
  out->leases.clear();
  for (const v1::JobLease& lease : resp.leases()) {
    absl::StatusOr<JobLease> converted = FromProto(lease);
    if (!converted.ok()) return converted.status();
    out->leases.push_back(*std::move(converted));
  }
  out->unfinished_jobs = resp.unfinished_jobs();
  return absl::OkStatus();
}

absl::Status WorkerApi::Heartbeat(const JobLease& lease,
                                  const std::vector<Output>& output) {
  v1::HeartbeatRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(lease.job_id);
  req.set_epoch(lease.epoch);
  req.set_lease_ms(options_.lease_ms);
  for (const Output& o : output) {
    v1::LiveOutput* out = req.add_output();
    out->set_stream(o.stream);
    out->set_offset(o.offset);
    out->set_data(o.data);
  }
  v1::HeartbeatResponse resp;
  return Call(
      [&](grpc::ClientContext* ctx, v1::Coordinator::StubInterface* stub) {
        return stub->Heartbeat(ctx, req, &resp);
      });
}

absl::Status WorkerApi::ReportMetrics(const JobLease& lease, int64_t seq,
                                      const std::vector<MetricPoint>& points,
                                      std::string* stop_early) {
  v1::ReportMetricsRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(lease.job_id);
  req.set_epoch(lease.epoch);
  req.set_seq(seq);
  for (const MetricPoint& p : points) ToProto(p, req.add_points());
  v1::ReportMetricsResponse resp;
  absl::Status status =
      Call([&](grpc::ClientContext* ctx, v1::Coordinator::StubInterface* stub) {
        return stub->ReportMetrics(ctx, req, &resp);
      });
  if (stop_early != nullptr) *stop_early = status.ok() ? resp.stop_early() : "";
  return status;
}

absl::Status WorkerApi::UploadCheckpoint(const JobLease& lease,
                                         const CheckpointFile& file,
                                         int64_t* stored_step,
                                         TransferCancel* cancel,
                                         std::optional<double> keep_metric) {
  v1::CheckpointHeader header;
  header.set_worker_id(options_.worker_id);
  header.set_job_id(lease.job_id);
  header.set_epoch(lease.epoch);
  header.set_step(file.step);
  header.set_name(std::filesystem::path(file.path).filename().string());
  if (keep_metric) {
    const CheckpointKeep& k = lease.outputs.checkpoints;
    header.mutable_keep()->set_keep(k.keep);
    header.mutable_keep()->set_keep_metric(k.metric);
    header.mutable_keep()->set_keep_maximize(k.maximize);
    header.mutable_keep()->set_keep_at_most(k.at_most);
    header.set_metric(*keep_metric);
  }
  v1::UploadCheckpointResponse resp;
  // A broken stream (Unavailable) is the call's own answer; any other
  // SendFile error is the file's, and the call is cancelled.
  absl::Status file_error = absl::OkStatus();
  absl::Status status =
      Transfer(cancel, [&](grpc::ClientContext* ctx, ProgressWatchdog& progress,
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
        return FromGrpc(writer->Finish());
      });
  if (!file_error.ok()) return absl::DataLossError(file_error.message());
  if (status.ok()) *stored_step = resp.stored_step();
  return status;
}

absl::Status WorkerApi::UploadJobFile(const JobLease& lease,
                                      const AttemptFile& file,
                                      TransferCancel* cancel) {
  absl::StatusOr<FileDigest> digest = DigestFile(file.path);
  if (!digest.ok()) return absl::DataLossError(digest.status().message());
  v1::JobFileChunk chunk;
  v1::JobFileHeader* h = chunk.mutable_header();
  h->set_worker_id(options_.worker_id);
  h->set_job_id(lease.job_id);
  h->set_epoch(lease.epoch);
  h->set_kind(file.kind);
  h->set_name(file.name);
  h->set_bytes(digest->bytes);
  h->set_sha256(digest->sha256);
  h->set_original_bytes(file.original_bytes);
  h->set_cut(file.cut);
  h->set_gzip(file.gzip);
  v1::UploadJobFileResponse resp;
  absl::Status file_error = absl::OkStatus();
  absl::Status status =
      Transfer(cancel, [&](grpc::ClientContext* ctx, ProgressWatchdog& progress,
                           v1::Coordinator::StubInterface* stub) {
        std::unique_ptr<grpc::ClientWriterInterface<v1::JobFileChunk>> writer =
            stub->UploadJobFile(ctx, &resp);
        absl::Status sent = writer->Write(chunk)
                                ? absl::OkStatus()
                                : absl::UnavailableError("stream closed");
        if (sent.ok()) {
          sent = transfer::SendFileData(file.path, digest->bytes,
                                        [&](absl::string_view data) {
                                          v1::JobFileChunk c;
                                          c.set_data(data.data(), data.size());
                                          const bool ok = writer->Write(c);
                                          progress.Progress();
                                          return ok;
                                        });
        }
        if (!sent.ok() && !absl::IsUnavailable(sent)) {
          file_error = sent;
          ctx->TryCancel();
        }
        writer->WritesDone();
        return FromGrpc(writer->Finish());
      });
  if (!file_error.ok()) return absl::DataLossError(file_error.message());
  return status;
}

absl::Status WorkerApi::DownloadCheckpoint(const JobLease& lease,
                                           const std::string& checkpoint_dir,
                                           int64_t local_step,
                                           int64_t* stored_step,
                                           TransferCancel* cancel) {
  v1::DownloadCheckpointRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(lease.job_id);
  req.set_epoch(lease.epoch);
  absl::Status received = absl::OkStatus();
  absl::Status status = Transfer(cancel, [&](grpc::ClientContext* ctx,
                                             ProgressWatchdog& progress,
                                             v1::Coordinator::StubInterface*
                                                 stub) {
    std::unique_ptr<grpc::ClientReaderInterface<v1::CheckpointChunk>> reader =
        stub->DownloadCheckpoint(ctx, req);
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
            (std::filesystem::path(checkpoint_dir) / header.name()).string());
      }
      if (received.ok()) *stored_step = header.step();
      if (header.step() <= local_step || !received.ok()) ctx->TryCancel();
    }
    const grpc::Status finished = reader->Finish();
    // Cancelled by us once we had what we needed.
    if (received.ok() && *stored_step > 0 &&
        finished.error_code() == grpc::StatusCode::CANCELLED) {
      return absl::OkStatus();
    }
    return FromGrpc(finished);
  });
  if (!received.ok()) return absl::DataLossError(received.message());
  return status;
}

absl::Status WorkerApi::CompleteJob(const JobLease& lease,
                                    const std::string& result_json,
                                    const std::string& stderr_tail,
                                    const std::vector<std::string>& not_kept) {
  v1::CompleteJobRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(lease.job_id);
  req.set_epoch(lease.epoch);
  req.set_result_json(result_json);
  req.set_stderr_tail(stderr_tail);
  for (const std::string& note : not_kept) req.add_not_kept(note);
  v1::CompleteJobResponse resp;
  return Call(
      [&](grpc::ClientContext* ctx, v1::Coordinator::StubInterface* stub) {
        return stub->CompleteJob(ctx, req, &resp);
      });
}

absl::Status WorkerApi::FailJob(const JobLease& lease, const std::string& error,
                                const std::string& stderr_tail,
                                const std::vector<std::string>& not_kept,
                                bool permanent) {
  v1::FailJobRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(lease.job_id);
  req.set_epoch(lease.epoch);
  req.set_error(error);
  req.set_stderr_tail(stderr_tail);
  req.set_permanent(permanent);
  for (const std::string& note : not_kept) req.add_not_kept(note);
  v1::FailJobResponse resp;
  return Call(
      [&](grpc::ClientContext* ctx, v1::Coordinator::StubInterface* stub) {
        return stub->FailJob(ctx, req, &resp);
      });
}

absl::Status WorkerApi::ReleaseJob(const JobLease& lease,
                                   const std::string& reason,
                                   const std::vector<std::string>& not_kept) {
  v1::ReleaseJobRequest req;
  req.set_worker_id(options_.worker_id);
  req.set_job_id(lease.job_id);
  req.set_epoch(lease.epoch);
  req.set_reason(reason);
  for (const std::string& note : not_kept) req.add_not_kept(note);
  v1::ReleaseJobResponse resp;
  return Call(
      [&](grpc::ClientContext* ctx, v1::Coordinator::StubInterface* stub) {
        return stub->ReleaseJob(ctx, req, &resp);
      });
}

}  // namespace tailsweep
