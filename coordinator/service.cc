#include "coordinator/service.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "coordinator/aggregate.h"

namespace tailsweep {
namespace {

grpc::Status Invalid(absl::string_view message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(message));
}

// A job or sweep id field: non-empty, bounded, printable.
grpc::Status CheckId(absl::string_view field, const std::string& value) {
  if (value.empty() || value.size() > 256) {
    return Invalid(absl::StrCat(field, " must be 1-256 characters"));
  }
  for (char c : value) {
    if (c < 0x21 || c > 0x7e) {
      return Invalid(
          absl::StrCat(field, " must be printable ASCII without spaces"));
    }
  }
  return grpc::Status::OK;
}

grpc::Status CheckEpoch(int64_t epoch) {
  if (epoch < 1)
    return Invalid(absl::StrCat("epoch must be >= 1 (got ", epoch, ")"));
  return grpc::Status::OK;
}

grpc::Status CheckLeaseMs(int64_t ms) {
  if (ms < 1000 || ms > 3600000) {
    return Invalid(
        absl::StrCat("lease_ms must be in [1000, 3600000] (got ", ms, ")"));
  }
  return grpc::Status::OK;
}

#define TS_GRPC_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    if (grpc::Status s_ = (expr); !s_.ok()) return s_; \
  } while (0)

}  // namespace

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

grpc::Status CoordinatorService::SubmitSweep(grpc::ServerContext*,
                                             const v1::SubmitSweepRequest* req,
                                             v1::SubmitSweepResponse* resp) {
  if (req->spec_yaml().empty()) return Invalid("spec_yaml is empty");
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

grpc::Status CoordinatorService::LeaseJobs(grpc::ServerContext*,
                                           const v1::LeaseJobsRequest* req,
                                           v1::LeaseJobsResponse* resp) {
  TS_GRPC_RETURN_IF_ERROR(CheckId("worker_id", req->worker_id()));
  if (req->max_jobs() < 1 || req->max_jobs() > 64) {
    return Invalid(absl::StrCat("max_jobs must be in [1, 64] (got ",
                                req->max_jobs(), ")"));
  }
  TS_GRPC_RETURN_IF_ERROR(CheckLeaseMs(req->lease_ms()));
  absl::StatusOr<std::vector<Lease>> leases =
      store_->LeaseJobs(req->worker_id(), req->max_jobs(), req->lease_ms());
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

grpc::Status CoordinatorService::Heartbeat(grpc::ServerContext*,
                                           const v1::HeartbeatRequest* req,
                                           v1::HeartbeatResponse* resp) {
  TS_GRPC_RETURN_IF_ERROR(CheckId("worker_id", req->worker_id()));
  TS_GRPC_RETURN_IF_ERROR(CheckId("job_id", req->job_id()));
  TS_GRPC_RETURN_IF_ERROR(CheckEpoch(req->epoch()));
  TS_GRPC_RETURN_IF_ERROR(CheckLeaseMs(req->lease_ms()));
  absl::StatusOr<int64_t> deadline = store_->Heartbeat(
      req->worker_id(), req->job_id(), req->epoch(), req->lease_ms());
  if (!deadline.ok()) return ToGrpc(deadline.status());
  resp->set_deadline_ms(*deadline);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ReportMetrics(
    grpc::ServerContext*, const v1::ReportMetricsRequest* req,
    v1::ReportMetricsResponse* resp) {
  TS_GRPC_RETURN_IF_ERROR(CheckId("job_id", req->job_id()));
  TS_GRPC_RETURN_IF_ERROR(CheckEpoch(req->epoch()));
  if (req->points_size() > 10000) {
    return Invalid(absl::StrCat("at most 10000 points per batch (got ",
                                req->points_size(), ")"));
  }
  std::vector<MetricPoint> points;
  points.reserve(req->points_size());
  for (const v1::MetricPoint& p : req->points()) {
    if (p.name().empty() || p.name().size() > 128) {
      return Invalid("metric name must be 1-128 characters");
    }
    if (p.step() < 0) return Invalid("metric step must be >= 0");
    points.push_back({p.name(), p.step(), p.value()});
  }
  absl::Status s = store_->AddMetrics(req->job_id(), req->epoch(), points);
  if (!s.ok()) return ToGrpc(s);
  resp->set_seq(req->seq());
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::CompleteJob(grpc::ServerContext*,
                                             const v1::CompleteJobRequest* req,
                                             v1::CompleteJobResponse*) {
  TS_GRPC_RETURN_IF_ERROR(CheckId("job_id", req->job_id()));
  TS_GRPC_RETURN_IF_ERROR(CheckEpoch(req->epoch()));
  if (req->result_json().empty()) return Invalid("result_json is empty");
  return ToGrpc(
      store_->Complete(req->job_id(), req->epoch(), req->result_json()));
}

grpc::Status CoordinatorService::FailJob(grpc::ServerContext*,
                                         const v1::FailJobRequest* req,
                                         v1::FailJobResponse*) {
  TS_GRPC_RETURN_IF_ERROR(CheckId("job_id", req->job_id()));
  TS_GRPC_RETURN_IF_ERROR(CheckEpoch(req->epoch()));
  return ToGrpc(store_->Fail(req->job_id(), req->epoch(), req->error()));
}

grpc::Status CoordinatorService::ReleaseJob(grpc::ServerContext*,
                                            const v1::ReleaseJobRequest* req,
                                            v1::ReleaseJobResponse*) {
  TS_GRPC_RETURN_IF_ERROR(CheckId("job_id", req->job_id()));
  TS_GRPC_RETURN_IF_ERROR(CheckEpoch(req->epoch()));
  return ToGrpc(store_->Release(req->job_id(), req->epoch(), req->reason()));
}

grpc::Status CoordinatorService::GetSweepStatus(
    grpc::ServerContext*, const v1::GetSweepStatusRequest* req,
    v1::GetSweepStatusResponse* resp) {
  TS_GRPC_RETURN_IF_ERROR(CheckId("sweep", req->sweep()));
  absl::StatusOr<SweepCounts> c = store_->Counts(req->sweep());
  if (!c.ok()) return ToGrpc(c.status());
  resp->set_queued(c->queued);
  resp->set_leased(c->leased);
  resp->set_done(c->done);
  resp->set_failed(c->failed);
  resp->set_cancelled(c->cancelled);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ListJobs(grpc::ServerContext*,
                                          const v1::ListJobsRequest* req,
                                          v1::ListJobsResponse* resp) {
  TS_GRPC_RETURN_IF_ERROR(CheckId("sweep", req->sweep()));
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

grpc::Status CoordinatorService::CancelSweep(grpc::ServerContext*,
                                             const v1::CancelSweepRequest* req,
                                             v1::CancelSweepResponse* resp) {
  TS_GRPC_RETURN_IF_ERROR(CheckId("sweep", req->sweep()));
  absl::StatusOr<int64_t> n = store_->CancelSweep(req->sweep());
  if (!n.ok()) return ToGrpc(n.status());
  resp->set_jobs_cancelled(*n);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ResumeSweep(grpc::ServerContext*,
                                             const v1::ResumeSweepRequest* req,
                                             v1::ResumeSweepResponse* resp) {
  TS_GRPC_RETURN_IF_ERROR(CheckId("sweep", req->sweep()));
  absl::StatusOr<int64_t> n = store_->ResumeSweep(req->sweep());
  if (!n.ok()) return ToGrpc(n.status());
  resp->set_jobs_requeued(*n);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ListWorkers(grpc::ServerContext*,
                                             const v1::ListWorkersRequest*,
                                             v1::ListWorkersResponse* resp) {
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

grpc::Status CoordinatorService::GetResults(grpc::ServerContext*,
                                            const v1::GetResultsRequest* req,
                                            v1::GetResultsResponse* resp) {
  TS_GRPC_RETURN_IF_ERROR(CheckId("sweep", req->sweep()));
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
    grpc::ServerContext*, grpc::ServerReader<v1::CheckpointChunk>* reader,
    v1::UploadCheckpointResponse* resp) {
  v1::CheckpointChunk first;
  if (!reader->Read(&first) || !first.has_header()) {
    return Invalid("the stream's first message must be a header");
  }
  const v1::CheckpointHeader& h = first.header();
  TS_GRPC_RETURN_IF_ERROR(CheckId("job_id", h.job_id()));
  TS_GRPC_RETURN_IF_ERROR(CheckEpoch(h.epoch()));
  if (h.step() < 1) {
    return Invalid(absl::StrCat("step must be >= 1 (got ", h.step(), ")"));
  }
  if (h.bytes() < 1) {
    return Invalid(absl::StrCat("bytes must be >= 1 (got ", h.bytes(), ")"));
  }
  if (h.bytes() > max_checkpoint_bytes_) {
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("checkpoint of ", h.bytes(),
                     " bytes is over the limit of ", max_checkpoint_bytes_,
                     " (--max-checkpoint-bytes)"));
  }
  if (h.sha256().size() != 64 ||
      h.sha256().find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Invalid("sha256 must be 64 lowercase hex digits");
  }
  absl::StatusOr<int64_t> stored = checkpoints_->Upload(
      h, [&](v1::CheckpointChunk* chunk) { return reader->Read(chunk); });
  if (!stored.ok()) return ToGrpc(stored.status());
  resp->set_stored_step(*stored);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::DownloadCheckpoint(
    grpc::ServerContext*, const v1::DownloadCheckpointRequest* req,
    grpc::ServerWriter<v1::CheckpointChunk>* writer) {
  TS_GRPC_RETURN_IF_ERROR(CheckId("job_id", req->job_id()));
  TS_GRPC_RETURN_IF_ERROR(CheckEpoch(req->epoch()));
  return ToGrpc(checkpoints_->Download(
      req->job_id(), req->epoch(),
      [&](const v1::CheckpointChunk& chunk) { return writer->Write(chunk); }));
}

}  // namespace tailsweep
