#include "coordinator/service.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "coordinator/aggregate.h"
#include "coordinator/validate.h"

namespace tailsweep {
namespace {

// The first lines of every handler: the token, then the fields.
#define TS_GRPC_RETURN_IF_ERROR(expr)                          \
  do {                                                         \
    if (absl::Status s_ = (expr); !s_.ok()) return ToGrpc(s_); \
  } while (0)
#define TS_AUTHORIZE(ctx) \
  TS_GRPC_RETURN_IF_ERROR(auth_.Check(Authorization(ctx)))

}  // namespace

std::string Authorization(const grpc::ServerContext* ctx) {
  const auto& md = ctx->client_metadata();
  const auto it = md.find("authorization");
  return it == md.end() ? ""
                        : std::string(it->second.data(), it->second.size());
}

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

grpc::Status CoordinatorService::SubmitSweep(grpc::ServerContext* ctx,
                                             const v1::SubmitSweepRequest* req,
                                             v1::SubmitSweepResponse* resp) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  const std::string source =
      req->source_name().empty() ? "spec" : req->source_name();
  absl::StatusOr<SweepSpec> spec = ParseSweepSpec(req->spec_yaml(), source);
  if (!spec.ok()) return ToGrpc(spec.status());
  absl::StatusOr<std::vector<JobSpec>> jobs = ExpandSweep(*spec);
  if (!jobs.ok()) return ToGrpc(jobs.status());
  absl::StatusOr<SubmitResult> result = store_->SubmitSweep(*spec, *jobs);
  if (!result.ok()) return ToGrpc(result.status());
  resp->set_sweep(spec->name);
  resp->set_jobs_added(result->added);
  resp->set_jobs_existing(result->existing);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::LeaseJobs(grpc::ServerContext* ctx,
                                           const v1::LeaseJobsRequest* req,
                                           v1::LeaseJobsResponse* resp) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  absl::StatusOr<std::vector<Lease>> leases = store_->LeaseJobs(
      req->worker_id(), req->max_jobs(), req->lease_ms(), req->request_id());
  if (!leases.ok()) return ToGrpc(leases.status());
  for (const Lease& l : *leases) {
    v1::JobLease* out = resp->add_leases();
    out->set_job_id(l.job_id);
    out->set_sweep(l.sweep);
    out->set_kind(l.kind);
    out->set_epoch(l.epoch);
    out->set_attempt(l.attempt);
    out->set_deadline_ms(l.deadline_ms);
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
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  absl::StatusOr<int64_t> deadline = store_->Heartbeat(
      req->worker_id(), req->job_id(), req->epoch(), req->lease_ms());
  if (!deadline.ok()) return ToGrpc(deadline.status());
  resp->set_deadline_ms(*deadline);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ReportMetrics(
    grpc::ServerContext* ctx, const v1::ReportMetricsRequest* req,
    v1::ReportMetricsResponse* resp) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  std::vector<MetricPoint> points;
  points.reserve(req->points_size());
  for (const v1::MetricPoint& p : req->points()) {
    points.push_back({p.name(), p.step(), p.value()});
  }
  absl::Status s =
      store_->AddMetrics(req->worker_id(), req->job_id(), req->epoch(), points);
  if (!s.ok()) return ToGrpc(s);
  resp->set_seq(req->seq());
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::CompleteJob(grpc::ServerContext* ctx,
                                             const v1::CompleteJobRequest* req,
                                             v1::CompleteJobResponse*) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  return ToGrpc(store_->Complete(req->worker_id(), req->job_id(), req->epoch(),
                                 req->result_json()));
}

grpc::Status CoordinatorService::FailJob(grpc::ServerContext* ctx,
                                         const v1::FailJobRequest* req,
                                         v1::FailJobResponse*) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  return ToGrpc(store_->Fail(req->worker_id(), req->job_id(), req->epoch(),
                             req->error()));
}

grpc::Status CoordinatorService::ReleaseJob(grpc::ServerContext* ctx,
                                            const v1::ReleaseJobRequest* req,
                                            v1::ReleaseJobResponse*) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  return ToGrpc(store_->Release(req->worker_id(), req->job_id(), req->epoch(),
                                req->reason()));
}

grpc::Status CoordinatorService::GetSweepStatus(
    grpc::ServerContext* ctx, const v1::GetSweepStatusRequest* req,
    v1::GetSweepStatusResponse* resp) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(ValidateSweepName(req->sweep()));
  absl::StatusOr<SweepCounts> c = store_->Counts(req->sweep());
  if (!c.ok()) return ToGrpc(c.status());
  resp->set_queued(c->queued);
  resp->set_leased(c->leased);
  resp->set_done(c->done);
  resp->set_failed(c->failed);
  resp->set_cancelled(c->cancelled);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ListJobs(grpc::ServerContext* ctx,
                                          const v1::ListJobsRequest* req,
                                          v1::ListJobsResponse* resp) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(ValidateSweepName(req->sweep()));
  absl::StatusOr<std::vector<JobRow>> jobs = store_->Jobs(req->sweep());
  if (!jobs.ok()) return ToGrpc(jobs.status());
  for (const JobRow& j : *jobs) {
    v1::JobInfo* out = resp->add_jobs();
    out->set_job_id(j.job_id);
    for (const auto& [k, v] : j.cell) {
      v1::KeyValue* kv = out->add_cell();
      kv->set_key(k);
      kv->set_value(v);
    }
    out->set_state(std::string(JobStateName(j.state)));
    out->set_epoch(j.epoch);
    out->set_attempt(j.attempt);
    out->set_holder(j.holder);
    out->set_last_error(j.last_error);
    out->set_result_json(j.result_json);
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::CancelSweep(grpc::ServerContext* ctx,
                                             const v1::CancelSweepRequest* req,
                                             v1::CancelSweepResponse* resp) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(ValidateSweepName(req->sweep()));
  absl::StatusOr<int64_t> n = store_->CancelSweep(req->sweep());
  if (!n.ok()) return ToGrpc(n.status());
  resp->set_jobs_cancelled(*n);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ResumeSweep(grpc::ServerContext* ctx,
                                             const v1::ResumeSweepRequest* req,
                                             v1::ResumeSweepResponse* resp) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(ValidateSweepName(req->sweep()));
  absl::StatusOr<int64_t> n = store_->ResumeSweep(req->sweep());
  if (!n.ok()) return ToGrpc(n.status());
  resp->set_jobs_requeued(*n);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ListWorkers(grpc::ServerContext* ctx,
                                             const v1::ListWorkersRequest*,
                                             v1::ListWorkersResponse* resp) {
  TS_AUTHORIZE(ctx);
  absl::StatusOr<std::vector<Store::WorkerRow>> workers = store_->Workers();
  if (!workers.ok()) return ToGrpc(workers.status());
  for (const Store::WorkerRow& w : *workers) {
    v1::WorkerInfo* out = resp->add_workers();
    out->set_worker_id(w.worker_id);
    out->set_last_seen_ms(w.last_seen_ms);
    out->set_jobs_held(w.jobs_held);
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::GetResults(grpc::ServerContext* ctx,
                                            const v1::GetResultsRequest* req,
                                            v1::GetResultsResponse* resp) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(ValidateSweepName(req->sweep()));
  absl::StatusOr<std::vector<JobRow>> jobs = store_->Jobs(req->sweep());
  if (!jobs.ok()) return ToGrpc(jobs.status());
  for (const CellSummary& s : Summarize(*jobs, req->over_seeds())) {
    v1::CellResult* row = resp->add_rows();
    for (const auto& [k, v] : s.cell) {
      v1::KeyValue* kv = row->add_cell();
      kv->set_key(k);
      kv->set_value(v);
    }
    row->set_jobs(s.jobs);
    row->set_done(s.done);
    row->set_ratio_median(s.ratio_median);
    row->set_ratio_mean(s.ratio_mean);
    row->set_ratio_ci_low(s.ratio_ci_low);
    row->set_ratio_ci_high(s.ratio_ci_high);
    row->set_seed_min(s.seed_min);
    row->set_seed_max(s.seed_max);
    row->set_collapsed(s.collapsed);
    row->set_diverged(s.diverged);
    row->set_collapse_step(s.collapse_step);
    row->set_hill_stat(s.hill_stat);
    row->set_bold(s.bold);
    row->set_failed(s.failed);
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::UploadCheckpoint(
    grpc::ServerContext* ctx, grpc::ServerReader<v1::CheckpointChunk>* reader,
    v1::UploadCheckpointResponse* resp) {
  TS_AUTHORIZE(ctx);
  v1::CheckpointChunk first;
  if (!reader->Read(&first) || !first.has_header()) {
    return ToGrpc(absl::InvalidArgumentError(
        "the stream's first message must be a header"));
  }
  const v1::CheckpointHeader& h = first.header();
  TS_GRPC_RETURN_IF_ERROR(Validate(h, max_checkpoint_bytes_));
  absl::StatusOr<int64_t> stored = checkpoints_->Upload(
      h, [&](v1::CheckpointChunk* chunk) { return reader->Read(chunk); });
  if (!stored.ok()) return ToGrpc(stored.status());
  resp->set_stored_step(*stored);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::DownloadCheckpoint(
    grpc::ServerContext* ctx, const v1::DownloadCheckpointRequest* req,
    grpc::ServerWriter<v1::CheckpointChunk>* writer) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  return ToGrpc(checkpoints_->Download(
      req->worker_id(), req->job_id(), req->epoch(),
      [&](const v1::CheckpointChunk& chunk) { return writer->Write(chunk); }));
}

grpc::Status HealthService::Check(
    grpc::ServerContext* ctx, const grpc::health::v1::HealthCheckRequest* req,
    grpc::health::v1::HealthCheckResponse* resp) {
  TS_AUTHORIZE(ctx);
  if (!req->service().empty() &&
      req->service() != v1::Coordinator::service_full_name()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "unknown service '" + req->service() + "'");
  }
  resp->set_status(store_->Healthy().ok()
                       ? grpc::health::v1::HealthCheckResponse::SERVING
                       : grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  return grpc::Status::OK;
}

}  // namespace tailsweep
