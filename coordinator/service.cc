#include "coordinator/service.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "coordinator/sqlite_db.h"
#include "coordinator/validate.h"
#include "core/schema/job_kinds.h"
#include "core/schema/logging.h"
#include "core/schema/submission.h"
#include "proto/status_details.h"
#include "proto/wire_records.h"

namespace tailsweep {
std::string Authorization(const grpc::ServerContext* ctx) {
  const auto& md = ctx->client_metadata();
  const auto it = md.find("authorization");
  return it == md.end() ? ""
                        : std::string(it->second.data(), it->second.size());
}

absl::Status Authorize(const TokenAuth& auth, Telemetry* telemetry,
                       const grpc::ServerContext* ctx,
                       absl::string_view method) {
  const std::string authorization = Authorization(ctx);
  absl::Status s = auth.Check(authorization, AccessOf(method),
                              absl::StrCat("call ", method));
  if (!s.ok() && telemetry != nullptr) {
    const absl::StatusOr<Role> role = auth.Authenticate(authorization);
    telemetry->AuthRefused(role.ok() ? RoleName(*role) : "none",
                           std::string(method));
  }
  return s;
}

void ToProto(const SweepSettings& s, v1::SweepSettings* out) {
  out->set_priority(s.priority);
  out->set_max_running(s.max_running);
  out->set_paused(s.paused);
  out->set_held(s.held);
  out->set_max_failures(s.max_failures);
  out->set_failures(s.failures);
  out->set_timeout_s(s.timeout_s);
  for (const auto& [k, v] : s.tags) (*out->mutable_tags())[k] = v;
  out->set_notes(s.notes);
  out->set_stop_rule(s.stop);
}

void ToProto(const RunOutputs& o, v1::JobOutputs* out) {
  out->set_keep(o.checkpoints.keep);
  out->set_keep_metric(o.checkpoints.metric);
  out->set_keep_maximize(o.checkpoints.maximize);
  out->set_keep_at_most(o.checkpoints.at_most);
  for (const std::string& g : o.artifacts) out->add_artifacts(g);
  out->set_artifacts_max_mib(o.artifacts_max_mib);
  out->set_logs_max_mib(o.logs_max_mib);
}

void ToProto(const SweepHours& h, v1::SweepHours* out) {
  out->set_gpu_hours(h.gpu_hours);
  out->set_cpu_hours(h.cpu_hours);
  out->set_preempted_gpu_hours(h.preempted_gpu_hours);
  out->set_preempted_cpu_hours(h.preempted_cpu_hours);
}

grpc::Status Answer(const absl::Status& status) {
  // The store says CANCELLED for a job the user cancelled only: marked, so
  // the holder can tell it from a call cut off in transport.
  if (status.code() == absl::StatusCode::kCancelled) {
    return ToGrpc(JobCancelledStatus(status.message()));
  }
  // A write the store refused for now (its disk is full): marked, so the
  // worker can say so rather than "unreachable".
  if (status.code() == absl::StatusCode::kUnavailable &&
      sql::StorageFaultOf(status) == sql::StorageFault::kTransient) {
    return ToGrpc(StorageRefusedStatus(status.message()));
  }
  return ToGrpc(status);
}

grpc::Status CoordinatorService::SubmitSweep(grpc::ServerContext* ctx,
                                             const v1::SubmitSweepRequest* req,
                                             v1::SubmitSweepResponse* resp) {
  TS_AUTHORIZE(ctx, "SubmitSweep");
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  const std::string source =
      req->source_name().empty() ? "spec" : req->source_name();
  absl::StatusOr<SweepSpec> parsed = ParseSweepSpec(req->spec_yaml(), source);
  if (!parsed.ok()) return Answer(parsed.status());
  std::optional<std::string> spec_dir;
  if (!req->spec_dir().empty()) spec_dir = req->spec_dir();
  absl::StatusOr<Submission> sub = PrepareSubmission(
      *std::move(parsed), source,
      {req->overrides().begin(), req->overrides().end()}, spec_dir);
  if (!sub.ok()) return Answer(sub.status());
  const SweepSpec& spec = sub->spec;
  resp->set_sweep(spec.name);
  resp->set_jobs(static_cast<int32_t>(sub->jobs.size()));
  resp->set_spec_yaml(spec.text);
  if (req->dry_run()) {
    absl::StatusOr<int64_t> there = store_->JobsInSweep(spec.name, sub->jobs);
    if (!there.ok()) return Answer(there.status());
    resp->set_dry_run(true);
    resp->set_jobs_existing(*there);
    resp->set_jobs_added(static_cast<int64_t>(sub->jobs.size()) - *there);
    return grpc::Status::OK;
  }
  absl::StatusOr<SubmitResult> result = store_->SubmitSweep(spec, sub->jobs);
  if (!result.ok()) return Answer(result.status());
  // A boundary sweep submitted again may have results to plan from.
  if (absl::Status s = search_.Submitted(spec); !s.ok()) return Answer(s);
  if (notices_) notices_->SweepReopened(spec.name);
  resp->set_jobs_added(result->added);
  resp->set_jobs_existing(result->existing);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::AddJobs(grpc::ServerContext* ctx,
                                         const v1::AddJobsRequest* req,
                                         v1::AddJobsResponse* resp) {
  TS_AUTHORIZE(ctx, "AddJobs");
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  absl::StatusOr<Store::SweepDetail> detail = store_->Sweep(req->sweep());
  if (!detail.ok()) return Answer(detail.status());
  if (detail->spec.empty()) {
    return Answer(absl::FailedPreconditionError(absl::StrCat(
        "sweep '", req->sweep(),
        "' was stored before sweeps kept their spec; jobs cannot be added "
        "to it: submit a new sweep")));
  }
  absl::StatusOr<SweepSpec> spec = ParseSweepSpec(detail->spec, req->sweep());
  if (!spec.ok()) return Answer(spec.status());
  std::vector<JobSpec> jobs;
  for (const v1::JobCell& cell : req->cells()) {
    KeyValues values;
    for (const v1::KeyValue& kv : cell.values()) {
      values.emplace_back(kv.key(), kv.value());
    }
    absl::StatusOr<JobSpec> job = AddedJob(*spec, values);
    if (!job.ok()) return Answer(job.status());
    resp->add_job_ids(job->id);
    jobs.push_back(*std::move(job));
  }
  absl::StatusOr<SubmitResult> result =
      store_->SubmitSweep(*spec, jobs, /*first_position=*/-1);
  if (!result.ok()) return Answer(result.status());
  if (result->added > 0) {
    spdlog::info("sweep {}: {} job(s) added", req->sweep(), result->added);
  }
  resp->set_jobs_added(static_cast<int32_t>(result->added));
  resp->set_jobs_existing(static_cast<int32_t>(result->existing));
  if (notices_) notices_->SweepReopened(req->sweep());
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::LeaseJobs(grpc::ServerContext* ctx,
                                           const v1::LeaseJobsRequest* req,
                                           v1::LeaseJobsResponse* resp) {
  TS_AUTHORIZE(ctx, "LeaseJobs");
  ReadLane::WorkerCall first(reads_);  // bulk reads wait (read_lane.h)
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  // Only kinds the worker runs; one that names none is an older build.
  std::vector<std::string> kinds(req->kinds().begin(), req->kinds().end());
  if (kinds.empty()) {
    for (JobKind k : AllJobKinds()) {
      if (KindDef(k).old_workers_run) kinds.emplace_back(JobKindName(k));
    }
  }
  absl::StatusOr<std::vector<Lease>> leases = store_->LeaseJobs(
      req->worker_id(), req->max_jobs(), req->lease_ms(), req->request_id(),
      {req->free_slots().begin(), req->free_slots().end()}, kinds,
      {req->devices().begin(), req->devices().end()});
  if (!leases.ok()) return Answer(leases.status());
  if (leases->empty()) {
    absl::StatusOr<bool> more = store_->HasUnfinishedJobs();
    if (!more.ok()) return Answer(more.status());
    resp->set_unfinished_jobs(*more);
  }
  if (telemetry_)
    telemetry_->LeasesGranted(static_cast<int64_t>(leases->size()));
  for (const Lease& l : *leases) {
    spdlog::info("{}: leased to {} (sweep {}, attempt {})",
                 JobTag(l.job_id, l.epoch), req->worker_id(), l.sweep,
                 l.attempt);
    if (notices_) notices_->Progress(l.job_id, l.epoch);
    v1::JobLease* out = resp->add_leases();
    out->set_job_id(l.job_id);
    out->set_sweep(l.sweep);
    out->set_kind(l.kind);
    out->set_epoch(l.epoch);
    out->set_attempt(l.attempt);
    out->set_deadline_ms(l.deadline_ms);
    out->set_timeout_s(l.timeout_s);
    if (l.outputs) ToProto(*l.outputs, out->mutable_outputs());
    for (const auto& [k, v] : l.params) {
      v1::KeyValue* kv = out->add_params();
      kv->set_key(k);
      kv->set_value(v);
    }
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::Heartbeat(grpc::ServerContext* ctx,
                                           const v1::HeartbeatRequest* req,
                                           v1::HeartbeatResponse* resp) {
  TS_AUTHORIZE(ctx, "Heartbeat");
  ReadLane::WorkerCall first(reads_);  // bulk reads wait (read_lane.h)
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  absl::StatusOr<int64_t> deadline = store_->Heartbeat(
      req->worker_id(), req->job_id(), req->epoch(), req->lease_ms());
  if (!deadline.ok()) {
    spdlog::warn("{}: renewal by {} refused: {}",
                 JobTag(req->job_id(), req->epoch()), req->worker_id(),
                 deadline.status().ToString());
    return Answer(deadline.status());
  }
  resp->set_deadline_ms(*deadline);
  if (telemetry_) telemetry_->LeaseRenewed();
  for (const v1::LiveOutput& o : req->output()) {
    files_.AddLive(req->job_id(), req->epoch(), o);
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ReportMetrics(
    grpc::ServerContext* ctx, const v1::ReportMetricsRequest* req,
    v1::ReportMetricsResponse* resp) {
  TS_AUTHORIZE(ctx, "ReportMetrics");
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  std::vector<MetricPoint> points;
  points.reserve(req->points_size());
  for (const v1::MetricPoint& p : req->points()) points.push_back(FromProto(p));
  absl::StatusOr<StopRules::Before> before =
      stop_rules_.Read(req->job_id(), points);
  if (!before.ok()) return Answer(before.status());
  absl::Status s =
      store_->AddMetrics(req->worker_id(), req->job_id(), req->epoch(), points);
  if (!s.ok()) return Answer(s);
  if (telemetry_) telemetry_->PointsIngested(req->points_size());
  if (notices_ && req->points_size() > 0) {
    notices_->Progress(req->job_id(), req->epoch());
  }
  resp->set_seq(req->seq());
  if (!before->rules.empty()) {
    absl::StatusOr<std::string> stop =
        stop_rules_.Judge(req->job_id(), points, *before);
    if (!stop.ok()) return Answer(stop.status());
    if (!stop->empty()) {
      spdlog::info("{}: stopped early: {}", JobTag(req->job_id(), req->epoch()),
                   *stop);
      resp->set_stop_early(*stop);
    }
  }
  return grpc::Status::OK;
}

namespace {

// An end report's notes of what its attempt made but did not store.
template <typename Request>
void RecordNotKeptOf(Store* store, const Request& req) {
  if (req.not_kept().empty()) return;
  std::vector<std::string> notes(req.not_kept().begin(), req.not_kept().end());
  if (absl::Status s = store->RecordNotKept(req.job_id(), req.epoch(), notes);
      !s.ok()) {
    spdlog::warn("{}: its notes of what was not kept are lost: {}",
                 JobTag(req.job_id(), req.epoch()), s.ToString());
  }
}

}  // namespace

grpc::Status CoordinatorService::CompleteJob(grpc::ServerContext* ctx,
                                             const v1::CompleteJobRequest* req,
                                             v1::CompleteJobResponse*) {
  TS_AUTHORIZE(ctx, "CompleteJob");
  ReadLane::WorkerCall first(reads_);  // bulk reads wait (read_lane.h)
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  const absl::Status s =
      store_->Complete(req->worker_id(), req->job_id(), req->epoch(),
                       req->result_json(), req->stderr_tail());
  if (s.ok()) {
    spdlog::info("{}: done ({})", JobTag(req->job_id(), req->epoch()),
                 req->worker_id());
    RecordNotKeptOf(store_, *req);
    stop_rules_.Forget(req->job_id());
    files_.ForgetLive(req->job_id());
    search_.JobFinished();
    if (notices_) notices_->JobDone(req->job_id());
  } else {
    spdlog::warn("{}: result from {} refused: {}",
                 JobTag(req->job_id(), req->epoch()), req->worker_id(),
                 s.ToString());
  }
  return Answer(s);
}

grpc::Status CoordinatorService::FailJob(grpc::ServerContext* ctx,
                                         const v1::FailJobRequest* req,
                                         v1::FailJobResponse*) {
  TS_AUTHORIZE(ctx, "FailJob");
  ReadLane::WorkerCall first(reads_);  // bulk reads wait (read_lane.h)
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  spdlog::warn("{}: attempt failed on {}: {}",
               JobTag(req->job_id(), req->epoch()), req->worker_id(),
               req->error().substr(0, 300));
  const absl::Status s =
      store_->Fail(req->worker_id(), req->job_id(), req->epoch(), req->error(),
                   req->stderr_tail(), req->permanent());
  if (s.ok()) {
    RecordNotKeptOf(store_, *req);
    files_.ForgetLive(req->job_id());
    search_.JobFinished();
    if (notices_) notices_->JobFailed(req->job_id(), req->error());
  }
  return Answer(s);
}

grpc::Status CoordinatorService::ReleaseJob(grpc::ServerContext* ctx,
                                            const v1::ReleaseJobRequest* req,
                                            v1::ReleaseJobResponse*) {
  TS_AUTHORIZE(ctx, "ReleaseJob");
  ReadLane::WorkerCall first(reads_);  // bulk reads wait (read_lane.h)
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  const absl::Status s = store_->Release(req->worker_id(), req->job_id(),
                                         req->epoch(), req->reason());
  if (s.ok()) {
    RecordNotKeptOf(store_, *req);
    files_.ForgetLive(req->job_id());
    if (notices_) notices_->Ended(req->job_id());  // preempted: no notice
  }
  return Answer(s);
}

grpc::Status CoordinatorService::CancelSweep(grpc::ServerContext* ctx,
                                             const v1::CancelSweepRequest* req,
                                             v1::CancelSweepResponse* resp) {
  TS_AUTHORIZE(ctx, "CancelSweep");
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  absl::StatusOr<Store::CancelResult> n =
      store_->CancelSweep(req->sweep(), req->job());
  if (!n.ok()) return Answer(n.status());
  spdlog::info(
      "sweep {}{} cancelled: {} jobs, {} of them still run for "
      "other sweeps",
      req->sweep(),
      req->job().empty() ? "" : " job " + req->job().substr(0, 12),
      n->cancelled, n->kept);
  resp->set_jobs_cancelled(n->cancelled);
  resp->set_jobs_kept_running(n->kept);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ResumeSweep(grpc::ServerContext* ctx,
                                             const v1::ResumeSweepRequest* req,
                                             v1::ResumeSweepResponse* resp) {
  TS_AUTHORIZE(ctx, "ResumeSweep");
  TS_GRPC_RETURN_IF_ERROR(ValidateSweepName(req->sweep()));
  absl::StatusOr<int64_t> n = store_->ResumeSweep(req->sweep());
  if (!n.ok()) return Answer(n.status());
  resp->set_jobs_requeued(*n);
  if (notices_) notices_->SweepReopened(req->sweep());
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::UpdateSweep(grpc::ServerContext* ctx,
                                             const v1::UpdateSweepRequest* req,
                                             v1::UpdateSweepResponse* resp) {
  TS_AUTHORIZE(ctx, "UpdateSweep");
  TS_GRPC_RETURN_IF_ERROR(ValidateSweepName(req->sweep()));
  Store::SweepUpdate update;
  if (req->has_priority()) update.priority = req->priority();
  if (req->has_max_running()) update.max_running = req->max_running();
  if (req->has_paused()) update.paused = req->paused();
  if (req->has_notes()) update.notes = req->notes();
  for (const auto& [k, v] : req->tags()) update.tags.emplace_back(k, v);
  std::sort(update.tags.begin(), update.tags.end());
  absl::StatusOr<SweepSettings> now = store_->UpdateSweep(req->sweep(), update);
  if (!now.ok()) return Answer(now.status());
  spdlog::info("sweep {} updated: priority {}, max_running {}, {}",
               req->sweep(), now->priority, now->max_running,
               now->paused ? "paused" : "not paused");
  ToProto(*now, resp->mutable_settings());
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::RemoveSweep(grpc::ServerContext* ctx,
                                             const v1::RemoveSweepRequest* req,
                                             v1::RemoveSweepResponse* resp) {
  TS_AUTHORIZE(ctx, "RemoveSweep");
  TS_GRPC_RETURN_IF_ERROR(ValidateSweepName(req->sweep()));
  absl::StatusOr<Store::RemoveResult> r =
      store_->RemoveSweep(req->sweep(), req->force(), req->dry_run());
  if (!r.ok()) return Answer(r.status());
  // The rows are gone first: a crash between leaves only files no row
  // points to (removed by hand or by the next upload's sweep of them).
  const int64_t bytes = checkpoints_->RemoveFiles(r->files, req->dry_run());
  if (!req->dry_run()) {
    spdlog::info(
        "sweep {} removed: {} jobs ({} kept for other sweeps), {} metric "
        "points, {} checkpoint files ({} bytes)",
        req->sweep(), r->jobs, r->shared_jobs, r->metric_points,
        r->files.size(), bytes);
  }
  resp->set_jobs(r->jobs);
  resp->set_shared_jobs(r->shared_jobs);
  resp->set_running(r->running);
  resp->set_metric_points(r->metric_points);
  resp->set_checkpoint_files(static_cast<int64_t>(r->files.size()));
  resp->set_checkpoint_bytes(bytes);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::UploadCheckpoint(
    grpc::ServerContext* ctx, grpc::ServerReader<v1::CheckpointChunk>* reader,
    v1::UploadCheckpointResponse* resp) {
  TS_AUTHORIZE(ctx, "UploadCheckpoint");
  v1::CheckpointChunk first;
  if (!reader->Read(&first) || !first.has_header()) {
    return Answer(absl::InvalidArgumentError(
        "the stream's first message must be a header"));
  }
  const v1::CheckpointHeader& h = first.header();
  absl::Status valid = Validate(h, max_checkpoint_bytes_);
  absl::StatusOr<int64_t> stored =
      valid.ok() ? checkpoints_->Upload(h,
                                        [&](v1::CheckpointChunk* chunk) {
                                          return reader->Read(chunk);
                                        })
                 : valid;
  if (stored.status().code() == absl::StatusCode::kResourceExhausted &&
      store_->CheckLease(h.worker_id(), h.job_id(), h.epoch()).ok()) {
    // Over a cap: the job's record says so (`tailsweep jobs`).
    store_
        ->RecordNotKept(h.job_id(), h.epoch(),
                        {std::string(stored.status().message())})
        .IgnoreError();
  }
  if (!stored.ok()) return Answer(stored.status());
  resp->set_stored_step(*stored);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::DownloadCheckpoint(
    grpc::ServerContext* ctx, const v1::DownloadCheckpointRequest* req,
    grpc::ServerWriter<v1::CheckpointChunk>* writer) {
  TS_AUTHORIZE(ctx, "DownloadCheckpoint");
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  return Answer(checkpoints_->Download(
      req->worker_id(), req->job_id(), req->epoch(),
      [&](const v1::CheckpointChunk& chunk) { return writer->Write(chunk); }));
}

grpc::Status CoordinatorService::FetchCheckpoint(
    grpc::ServerContext* ctx, const v1::FetchCheckpointRequest* req,
    grpc::ServerWriter<v1::CheckpointChunk>* writer) {
  TS_AUTHORIZE(ctx, "FetchCheckpoint");
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  absl::StatusOr<JobRow> job = store_->Job(req->job());
  if (!job.ok()) return Answer(job.status());
  return Answer(checkpoints_->Fetch(
      job->job_id, req->step(),
      [&](const v1::CheckpointChunk& chunk) { return writer->Write(chunk); }));
}

grpc::Status CoordinatorService::UploadJobFile(
    grpc::ServerContext* ctx, grpc::ServerReader<v1::JobFileChunk>* reader,
    v1::UploadJobFileResponse*) {
  TS_AUTHORIZE(ctx, "UploadJobFile");
  v1::JobFileChunk first;
  if (!reader->Read(&first) || !first.has_header()) {
    return Answer(absl::InvalidArgumentError(
        "the stream's first message must be a header"));
  }
  const v1::JobFileHeader& h = first.header();
  TS_GRPC_RETURN_IF_ERROR(Validate(h));
  TS_GRPC_RETURN_IF_ERROR(JobFileStore::Validate(h));
  // Logs and artifacts are not urgent: they are taken in the read lane,
  // behind the workers' leases, heartbeats and results (read_lane.h), and
  // each chunk waits for those in flight too.
  v1::JobFileChunk chunk;
  absl::Status s;
  reads_.Run(ReadLane::Kind::kExport, [&] {
    s = files_.Upload(h, transfer::JobFileData(
                             [&](v1::JobFileChunk* c) {
                               reads_.YieldToWorkers();
                               return reader->Read(c);
                             },
                             &chunk));
  });
  if (!s.ok()) {
    spdlog::warn("{}: {} {} not stored: {}", JobTag(h.job_id(), h.epoch()),
                 h.kind(), h.name(), s.ToString());
  }
  return Answer(s);
}

grpc::Status CoordinatorService::ReadJobFile(
    grpc::ServerContext* ctx, const v1::ReadJobFileRequest* req,
    grpc::ServerWriter<v1::JobFileChunk>* writer) {
  TS_AUTHORIZE(ctx, "ReadJobFile");
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  absl::StatusOr<JobRow> job = store_->Job(req->job());
  if (!job.ok()) return Answer(job.status());
  absl::Status s;
  reads_.Run(ReadLane::Kind::kExport, [&] {
    s = files_.Read(job->job_id, *req, [&](const v1::JobFileChunk& chunk) {
      return writer->Write(chunk);
    });
  });
  return Answer(s);
}

grpc::Status HealthService::Check(
    grpc::ServerContext* ctx, const grpc::health::v1::HealthCheckRequest* req,
    grpc::health::v1::HealthCheckResponse* resp) {
  TS_AUTHORIZE(ctx, "Check");
  if (!req->service().empty() &&
      req->service() != v1::Coordinator::service_full_name()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "unknown service '" + req->service() + "'");
  }
  const absl::Status healthy = store_->Healthy();
  resp->set_status(healthy.ok()
                       ? grpc::health::v1::HealthCheckResponse::SERVING
                       : grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  // The answer has no field for why: the reason goes in trailing metadata.
  if (!healthy.ok()) {
    ctx->AddTrailingMetadata(kHealthReasonKey, std::string(healthy.message()));
  }
  return grpc::Status::OK;
}

}  // namespace tailsweep
