// The Coordinator service's read-only handlers (service.h).

#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/aggregate.h"
#include "coordinator/service.h"
#include "coordinator/validate.h"

namespace tailsweep {
namespace {

void SetCell(const KeyValues& cell,
             google::protobuf::RepeatedPtrField<v1::KeyValue>* out) {
  for (const auto& [k, v] : cell) {
    v1::KeyValue* kv = out->Add();
    kv->set_key(k);
    kv->set_value(v);
  }
}

void SetCounts(const SweepCounts& c, v1::GetSweepStatusResponse* out) {
  out->set_queued(c.queued);
  out->set_leased(c.leased);
  out->set_done(c.done);
  out->set_failed(c.failed);
  out->set_cancelled(c.cancelled);
}

// The metrics page token: the last point's name and step.
std::string PageToken(const MetricPoint& last) {
  return absl::StrCat(last.name, "\n", last.step);
}
absl::Status ParsePageToken(const std::string& token, std::string* name,
                            int64_t* step) {
  const size_t cut = token.rfind('\n');
  if (cut == std::string::npos || cut == 0 ||
      !absl::SimpleAtoi(token.substr(cut + 1), step)) {
    return absl::InvalidArgumentError(
        "page_token is not one this service gave out");
  }
  *name = token.substr(0, cut);
  return absl::OkStatus();
}

}  // namespace

grpc::Status CoordinatorService::GetSweepStatus(
    grpc::ServerContext* ctx, const v1::GetSweepStatusRequest* req,
    v1::GetSweepStatusResponse* resp) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(ValidateSweepName(req->sweep()));
  absl::StatusOr<SweepCounts> c = store_->Counts(req->sweep());
  if (!c.ok()) return ToGrpc(c.status());
  SetCounts(*c, resp);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ListJobs(grpc::ServerContext* ctx,
                                          const v1::ListJobsRequest* req,
                                          v1::ListJobsResponse* resp) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  std::optional<JobState> state;
  for (JobState s : {JobState::kQueued, JobState::kLeased, JobState::kDone,
                     JobState::kFailed, JobState::kCancelled}) {
    if (req->state() == JobStateName(s)) state = s;
  }
  absl::StatusOr<std::vector<JobRow>> jobs = store_->Jobs(req->sweep(), state);
  if (!jobs.ok()) return ToGrpc(jobs.status());
  for (const JobRow& j : *jobs) {
    v1::JobInfo* out = resp->add_jobs();
    out->set_job_id(j.job_id);
    SetCell(j.cell, out->mutable_cell());
    out->set_state(std::string(JobStateName(j.state)));
    out->set_epoch(j.epoch);
    out->set_attempt(j.attempt);
    out->set_holder(j.holder);
    out->set_last_error(j.last_error);
    out->set_result_json(j.result_json);
  }
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
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  absl::StatusOr<SweepKind> kind = store_->Kind(req->sweep());
  if (!kind.ok()) return ToGrpc(kind.status());
  absl::StatusOr<std::vector<JobRow>> jobs = store_->Jobs(req->sweep());
  if (!jobs.ok()) return ToGrpc(jobs.status());
  resp->set_jobs(static_cast<int64_t>(jobs->size()));
  for (const JobRow& j : *jobs) {
    if (j.state == JobState::kDone) resp->set_done(resp->done() + 1);
  }
  if (*kind == SweepKind::kTails) {
    resp->set_kind("tails");
    for (const TailsSummary& t : SummarizeTails(*jobs, req->over_seeds())) {
      v1::TailsResultRow* row = resp->add_tails();
      SetCell(t.cell, row->mutable_cell());
      row->set_seam(t.row.seam);
      row->set_n(t.row.n);
      row->set_index(t.row.index);
      row->set_ed_mean(t.row.ed_mean);
      row->set_ed_sd(t.row.ed_sd);
      row->set_w2_mean(t.row.w2_mean);
      row->set_w2_sd(t.row.w2_sd);
      row->set_ed_noise(t.row.ed_noise);
      row->set_w2_noise(t.row.w2_noise);
      row->set_seeds(t.seeds);
    }
    return grpc::Status::OK;
  }
  resp->set_kind("train");
  const std::vector<CellSummary> summaries =
      Summarize(*jobs, req->over_seeds());
  for (const CellSummary& s : summaries) {
    v1::CellResult* row = resp->add_rows();
    SetCell(s.cell, row->mutable_cell());
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
  const PivotTable pivot =
      Pivot(summaries, req->group_by().empty() ? "kernel" : req->group_by());
  v1::PivotTable* out = resp->mutable_pivot();
  out->set_group_by(pivot.group_by);
  for (const std::string& c : pivot.columns) out->add_columns(c);
  for (const PivotTable::Row& r : pivot.rows) {
    v1::PivotRow* row = out->add_rows();
    row->set_label(r.label);
    for (int cell : r.cells) row->add_cells(cell);
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ListSweeps(grpc::ServerContext* ctx,
                                            const v1::ListSweepsRequest*,
                                            v1::ListSweepsResponse* resp) {
  TS_AUTHORIZE(ctx);
  absl::StatusOr<std::vector<Store::SweepRow>> sweeps = store_->Sweeps();
  if (!sweeps.ok()) return ToGrpc(sweeps.status());
  for (const Store::SweepRow& s : *sweeps) {
    v1::SweepInfo* out = resp->add_sweeps();
    out->set_name(s.name);
    out->set_kind(s.kind == SweepKind::kTails ? "tails" : "train");
    out->set_created_ms(s.created_ms);
    SetCounts(s.counts, out->mutable_counts());
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::GetMetrics(grpc::ServerContext* ctx,
                                            const v1::GetMetricsRequest* req,
                                            v1::GetMetricsResponse* resp) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  Store::MetricsQuery q;
  q.job_id = req->job_id();
  q.names.assign(req->names().begin(), req->names().end());
  q.step_min = req->step_min();
  q.step_max = req->step_max();
  const int64_t page =
      req->page_size() > 0 ? req->page_size() : kDefaultMetricsPage;
  q.limit = page + 1;  // one more tells whether a next page exists
  if (!req->page_token().empty()) {
    TS_GRPC_RETURN_IF_ERROR(
        ParsePageToken(req->page_token(), &q.after_name, &q.after_step));
  }
  absl::StatusOr<std::vector<MetricPoint>> points = store_->Metrics(q);
  if (!points.ok()) return ToGrpc(points.status());
  const bool more = static_cast<int64_t>(points->size()) > page;
  if (more) points->resize(static_cast<size_t>(page));
  for (const MetricPoint& p : *points) {
    v1::MetricPoint* out = resp->add_points();
    out->set_name(p.name);
    out->set_step(p.step);
    out->set_value(p.value);
  }
  if (more) resp->set_next_page_token(PageToken(points->back()));
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::GetJobLog(grpc::ServerContext* ctx,
                                           const v1::GetJobLogRequest* req,
                                           v1::GetJobLogResponse* resp) {
  TS_AUTHORIZE(ctx);
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  absl::StatusOr<Store::JobLogs> log = store_->JobLog(req->job());
  if (!log.ok()) return ToGrpc(log.status());
  resp->set_job_id(log->job_id);
  resp->set_state(std::string(JobStateName(log->state)));
  resp->set_last_error(log->last_error);
  for (const Store::JobLogEntry& e : log->logs) {
    v1::JobLog* out = resp->add_logs();
    out->set_epoch(e.epoch);
    out->set_outcome(e.outcome);
    out->set_stderr_tail(e.stderr_tail);
    out->set_at_ms(e.at_ms);
  }
  return grpc::Status::OK;
}

}  // namespace tailsweep
