// The Coordinator service's read-only handlers (service.h).

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <variant>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/downsample.h"
#include "coordinator/service.h"
#include "coordinator/validate.h"
#include "core/schema/job_kinds.h"
#include "proto/wire_records.h"

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

v1::JobInfo JobInfoOf(const JobRow& j) {
  v1::JobInfo info;
  info.set_job_id(j.job_id);
  SetCell(j.cell, info.mutable_cell());
  info.set_state(std::string(JobStateName(j.state)));
  info.set_job_state(std::string(JobStateName(j.job_state)));
  info.set_epoch(j.epoch);
  info.set_attempt(j.attempt);
  info.set_holder(j.holder);
  info.set_last_error(j.last_error);
  info.set_result_json(j.result_json);
  SetCell(j.params, info.mutable_params());
  info.set_updated_ms(j.updated_ms);
  info.set_gpu_hours(j.gpu_hours);
  info.set_cpu_hours(j.cpu_hours);
  info.set_best_checkpoint_step(j.best_checkpoint_step);
  for (const std::string& note : j.not_kept) info.add_not_kept(note);
  return info;
}

// A sweep's results: its kind's table from every job (grid order).
absl::StatusOr<ResultsSnapshot> ResultsOf(Store& store,
                                          const std::string& sweep,
                                          bool over_seeds,
                                          const std::string& group_by) {
  ResultsSnapshot s;
  absl::StatusOr<JobKind> kind = store.Kind(sweep);
  if (!kind.ok()) return kind.status();
  s.kind = std::string(JobKindName(*kind));
  absl::StatusOr<std::vector<JobRow>> rows = store.Jobs(sweep);
  if (!rows.ok()) return rows.status();
  std::vector<ResultJob> jobs;
  jobs.reserve(rows->size());
  for (JobRow& j : *rows) {
    if (j.state == JobState::kDone) ++s.done;
    jobs.push_back({std::move(j.job_id), std::move(j.cell), j.state,
                    std::move(j.result_json), j.gpu_hours, j.cpu_hours});
  }
  s.jobs = static_cast<int64_t>(jobs.size());
  s.table = KindDef(*kind).summarize(jobs, over_seeds);
  AddHoursColumns(jobs, over_seeds, s.table);
  if (!group_by.empty()) s.pivot = PivotOf(s.table, group_by);
  return s;
}

// ---- Reads without `table` (clients before 0.2.0; removed in the next
// release): the same table in the first release's messages, its columns
// by name.

double NumberAt(const ResultsTable& t, size_t row, absl::string_view name) {
  const std::optional<size_t> c = t.ColumnIndex(name);
  return c ? NumberOf(t.rows[row][*c]) : std::nan("");
}
int64_t IntegerAt(const ResultsTable& t, size_t row, absl::string_view name) {
  const double v = NumberAt(t, row, name);
  return std::isnan(v) ? 0 : static_cast<int64_t>(v);
}
void SetKeys(const ResultsTable& t, size_t row,
             google::protobuf::RepeatedPtrField<v1::KeyValue>* out) {
  for (size_t c = 0; c < t.columns.size(); ++c) {
    const auto* v = std::get_if<std::string>(&t.rows[row][c]);
    if (t.columns[c].role != ColumnRole::kKey || v == nullptr) continue;
    v1::KeyValue* kv = out->Add();
    kv->set_key(t.columns[c].name);
    kv->set_value(*v);
  }
}

v1::CellResult LegacyCellResult(const ResultsTable& t, size_t i) {
  v1::CellResult row;
  SetKeys(t, i, row.mutable_cell());
  row.set_jobs(IntegerAt(t, i, "jobs"));
  row.set_done(IntegerAt(t, i, "done"));
  row.set_failed(IntegerAt(t, i, "failed"));
  row.set_ratio_median(NumberAt(t, i, "ratio_median"));
  row.set_ratio_mean(NumberAt(t, i, "ratio_mean"));
  row.set_ratio_ci_low(NumberAt(t, i, "ratio_ci_low"));
  row.set_ratio_ci_high(NumberAt(t, i, "ratio_ci_high"));
  row.set_seed_min(NumberAt(t, i, "seed_min"));
  row.set_seed_max(NumberAt(t, i, "seed_max"));
  row.set_collapsed(IntegerAt(t, i, "collapsed"));
  row.set_diverged(IntegerAt(t, i, "diverged"));
  row.set_collapse_step(NumberAt(t, i, "collapse_step"));
  row.set_hill_stat(NumberAt(t, i, "hill_stat"));
  row.set_bold(NumberAt(t, i, "bold") == 1.0);
  row.set_stopped_early(IntegerAt(t, i, "stopped_early"));
  row.set_steps_saved(IntegerAt(t, i, "steps_saved"));
  row.set_position(static_cast<int64_t>(i));
  return row;
}

v1::TailsResultRow LegacyTailsRow(const ResultsTable& t, size_t i) {
  v1::TailsResultRow row;
  SetKeys(t, i, row.mutable_cell());
  row.set_seam(NumberAt(t, i, "seam"));
  row.set_n(IntegerAt(t, i, "n"));
  row.set_index(NumberAt(t, i, "index"));
  row.set_ed_mean(NumberAt(t, i, "ed_mean"));
  row.set_ed_sd(NumberAt(t, i, "ed_sd"));
  row.set_w2_mean(NumberAt(t, i, "w2_mean"));
  row.set_w2_sd(NumberAt(t, i, "w2_sd"));
  row.set_ed_noise(NumberAt(t, i, "ed_noise"));
  row.set_w2_noise(NumberAt(t, i, "w2_noise"));
  row.set_seeds(IntegerAt(t, i, "seeds"));
  return row;
}

}  // namespace

namespace {

// The early-stopped runs of `sweep` and the steps they saved, and its
// settings and hours, into the counts every read of a sweep carries
// (status, the list, one sweep). `row`: the sweep's when read already.
absl::Status SetEarlyStops(Store& store, const std::string& sweep,
                           v1::GetSweepStatusResponse* counts,
                           const Store::SweepRow* row = nullptr) {
  absl::StatusOr<Store::EarlyStops> early = store.EarlyStopsOf(sweep);
  if (!early.ok()) return early.status();
  counts->set_runs_stopped_early(early->runs);
  counts->set_steps_saved(early->steps_saved);
  Store::SweepRow read;
  if (row == nullptr) {
    absl::StatusOr<Store::SweepRow> settings = store.SettingsOf(sweep);
    if (!settings.ok()) return settings.status();
    read = *std::move(settings);
    row = &read;
  }
  ToProto(row->settings, counts->mutable_settings());
  ToProto(row->hours, counts->mutable_hours());
  return absl::OkStatus();
}

}  // namespace

grpc::Status CoordinatorService::GetSweepStatus(
    grpc::ServerContext* ctx, const v1::GetSweepStatusRequest* req,
    v1::GetSweepStatusResponse* resp) {
  TS_AUTHORIZE(ctx, "GetSweepStatus");
  TS_GRPC_RETURN_IF_ERROR(ValidateSweepName(req->sweep()));
  absl::StatusOr<JobCounts> c = store_->Counts(req->sweep());
  if (!c.ok()) return Answer(c.status());
  ToProto(*c, resp);
  if (absl::Status e = SetEarlyStops(*store_, req->sweep(), resp); !e.ok()) {
    return Answer(e);
  }
  if (absl::Status h = store_->Healthy(); !h.ok()) {
    resp->set_coordinator_problem(std::string(h.message()));
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ListJobsInLane(grpc::ServerContext* ctx,
                                                const v1::ListJobsRequest* req,
                                                v1::ListJobsResponse* resp) {
  TS_AUTHORIZE(ctx, "ListJobs");
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  Store::JobsQuery q;
  q.sweep = req->sweep();
  for (JobState s : {JobState::kQueued, JobState::kLeased, JobState::kDone,
                     JobState::kFailed, JobState::kCancelled}) {
    if (req->state() == JobStateName(s)) q.state = s;
  }
  absl::StatusOr<int64_t> after = ParseOffsetToken(req->page_token());
  if (!after.ok()) return Answer(after.status());
  q.after_position = *after;
  for (const v1::KeyValue& kv : req->where()) {
    auto key = std::find_if(q.where.begin(), q.where.end(),
                            [&](const auto& w) { return w.first == kv.key(); });
    if (key == q.where.end()) {
      q.where.push_back({kv.key(), {}});
      key = q.where.end() - 1;
    }
    key->second.push_back(kv.value());
  }
  q.updated_since_ms = req->updated_since_ms();
  const int64_t page =
      req->page_size() > 0 ? req->page_size() : kDefaultListPage;
  q.limit = page + 1;  // one more tells whether a next page exists
  // The store reads past the page's bytes by a margin (its measure is the
  // rows' text, close to their proto size), so the page below is always
  // cut by its own count, with a token, before the rows run out.
  q.max_bytes = 2 * kMaxPageBytes;
  absl::StatusOr<std::vector<JobRow>> jobs = store_->Jobs(q);
  if (!jobs.ok()) return Answer(jobs.status());
  int64_t bytes = 0;
  for (size_t i = 0; i < jobs->size(); ++i) {
    v1::JobInfo info = JobInfoOf((*jobs)[i]);
    bytes += static_cast<int64_t>(info.ByteSizeLong());
    const bool full =
        static_cast<int64_t>(i) == page || (i > 0 && bytes > kMaxPageBytes);
    if (full) {
      resp->set_next_page_token(absl::StrCat((*jobs)[i - 1].position));
      break;
    }
    *resp->add_jobs() = std::move(info);
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ListWorkers(grpc::ServerContext* ctx,
                                             const v1::ListWorkersRequest*,
                                             v1::ListWorkersResponse* resp) {
  TS_AUTHORIZE(ctx, "ListWorkers");
  absl::StatusOr<std::vector<Store::WorkerRow>> workers = store_->Workers();
  if (!workers.ok()) return Answer(workers.status());
  for (const Store::WorkerRow& w : *workers) {
    v1::WorkerInfo* out = resp->add_workers();
    out->set_worker_id(w.worker_id);
    out->set_last_seen_ms(w.last_seen_ms);
    out->set_jobs_held(w.jobs_held);
    out->set_devices(w.devices);
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::GetResultsInLane(
    grpc::ServerContext* ctx, const v1::GetResultsRequest* req,
    v1::GetResultsResponse* resp) {
  TS_AUTHORIZE(ctx, "GetResults");
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  absl::StatusOr<ResultsToken> token = ParseResultsToken(req->page_token());
  if (!token.ok()) return Answer(token.status());
  // A table read pivots on the client; the first release's read gets the
  // pivot it pages by, grouped by `kernel` unless it asks otherwise.
  const std::string group_by =
      req->table() ? ""
                   : (req->group_by().empty() ? "kernel" : req->group_by());
  const bool over_seeds = req->over_seeds();
  uint64_t id = token->snapshot;
  absl::StatusOr<std::shared_ptr<const ResultsSnapshot>> snapshot =
      result_pages_.Get(
          {req->sweep(), over_seeds, group_by}, store_->Generation(), &id, [&] {
            return ResultsOf(*store_, req->sweep(), over_seeds, group_by);
          });
  if (!snapshot.ok()) return Answer(snapshot.status());
  const ResultsSnapshot& snap = **snapshot;
  const ResultsTable& table = snap.table;
  resp->set_kind(snap.kind);
  resp->set_jobs(snap.jobs);
  resp->set_done(snap.done);
  // Rows after the token's until the page is full; the next token names
  // the snapshot and the last row sent.
  const size_t first = static_cast<size_t>(token->after + 1);
  const size_t page = static_cast<size_t>(
      req->page_size() > 0 ? req->page_size() : kDefaultListPage);
  int64_t bytes = 0;
  auto full = [&](size_t i, int64_t row_bytes) {
    bytes += row_bytes;
    if (i - first < page && (i == first || bytes <= kMaxPageBytes)) {
      return false;
    }
    resp->set_next_page_token(absl::StrCat(id, ".", i - 1));
    return true;
  };
  if (req->table()) {
    ToProtoHeader(table, resp->mutable_table());
    for (size_t i = first; i < table.rows.size(); ++i) {
      v1::ResultsRow row = ToProto(table.rows[i]);
      if (full(i, static_cast<int64_t>(row.ByteSizeLong()))) break;
      *resp->mutable_table()->add_rows() = std::move(row);
    }
    return grpc::Status::OK;
  }
  // The first release's shapes: a tails table's rows, else train's cells
  // (a command sweep's counts per cell; its client made the rest).
  if (table.ColumnIndex("seam")) {
    for (size_t i = first; i < table.rows.size(); ++i) {
      v1::TailsResultRow row = LegacyTailsRow(table, i);
      if (full(i, static_cast<int64_t>(row.ByteSizeLong()))) break;
      *resp->add_tails() = std::move(row);
    }
    return grpc::Status::OK;
  }
  v1::PivotTable* out = resp->mutable_pivot();
  out->set_group_by(snap.pivot.group_by);
  for (const std::string& c : snap.pivot.columns) out->add_columns(c);
  for (size_t i = first; i < snap.pivot.rows.size(); ++i) {
    const ResultsPivot::Row& r = snap.pivot.rows[i];
    // The page's copy of the row, its cells renumbered into this page.
    v1::PivotRow row;
    row.set_label(r.label);
    std::vector<v1::CellResult> cells;
    for (int cell : r.cells) {
      if (cell < 0) {
        row.add_cells(-1);
        continue;
      }
      row.add_cells(resp->rows_size() + static_cast<int>(cells.size()));
      cells.push_back(LegacyCellResult(table, static_cast<size_t>(cell)));
    }
    int64_t row_bytes = static_cast<int64_t>(row.ByteSizeLong());
    for (const v1::CellResult& c : cells) {
      row_bytes += static_cast<int64_t>(c.ByteSizeLong());
    }
    if (full(i, row_bytes)) break;
    *out->add_rows() = std::move(row);
    for (v1::CellResult& c : cells) *resp->add_rows() = std::move(c);
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::ListSweeps(grpc::ServerContext* ctx,
                                            const v1::ListSweepsRequest*,
                                            v1::ListSweepsResponse* resp) {
  TS_AUTHORIZE(ctx, "ListSweeps");
  absl::StatusOr<std::vector<Store::SweepRow>> sweeps = store_->Sweeps();
  if (!sweeps.ok()) return Answer(sweeps.status());
  for (const Store::SweepRow& s : *sweeps) {
    v1::SweepInfo* out = resp->add_sweeps();
    out->set_name(s.name);
    out->set_kind(std::string(JobKindName(s.kind)));
    out->set_created_ms(s.created_ms);
    ToProto(s.counts, out->mutable_counts());
    if (absl::Status e =
            SetEarlyStops(*store_, s.name, out->mutable_counts(), &s);
        !e.ok()) {
      return Answer(e);
    }
  }
  if (absl::Status h = store_->Healthy(); !h.ok()) {
    resp->set_coordinator_problem(std::string(h.message()));
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::GetSweep(grpc::ServerContext* ctx,
                                          const v1::GetSweepRequest* req,
                                          v1::GetSweepResponse* resp) {
  TS_AUTHORIZE(ctx, "GetSweep");
  TS_GRPC_RETURN_IF_ERROR(ValidateSweepName(req->sweep()));
  absl::StatusOr<Store::SweepDetail> s = store_->Sweep(req->sweep());
  if (!s.ok()) return Answer(s.status());
  v1::SweepInfo* info = resp->mutable_sweep();
  info->set_name(s->row.name);
  info->set_kind(std::string(JobKindName(s->row.kind)));
  info->set_created_ms(s->row.created_ms);
  ToProto(s->row.counts, info->mutable_counts());
  if (absl::Status e =
          SetEarlyStops(*store_, req->sweep(), info->mutable_counts());
      !e.ok()) {
    return Answer(e);
  }
  resp->set_spec_yaml(s->spec);
  SetCell(s->fixed, resp->mutable_fixed());
  resp->set_version(s->version);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::GetJobLog(grpc::ServerContext* ctx,
                                           const v1::GetJobLogRequest* req,
                                           v1::GetJobLogResponse* resp) {
  TS_AUTHORIZE(ctx, "GetJobLog");
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  absl::StatusOr<Store::JobLogs> log = store_->JobLog(req->job());
  if (!log.ok()) return Answer(log.status());
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

grpc::Status CoordinatorService::GetJob(grpc::ServerContext* ctx,
                                        const v1::GetJobRequest* req,
                                        v1::GetJobResponse* resp) {
  TS_AUTHORIZE(ctx, "GetJob");
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  absl::StatusOr<JobRow> job = store_->Job(req->job());
  if (!job.ok()) return Answer(job.status());
  *resp->mutable_job() = JobInfoOf(*job);
  absl::StatusOr<std::vector<CheckpointRow>> checkpoints =
      store_->Checkpoints(job->job_id, /*with_kept=*/true);
  if (!checkpoints.ok() && !absl::IsNotFound(checkpoints.status())) {
    return Answer(checkpoints.status());
  }
  for (const CheckpointRow& c :
       checkpoints.ok() ? *checkpoints : std::vector<CheckpointRow>{}) {
    v1::StoredCheckpoint* out = resp->add_checkpoints();
    out->set_step(c.step);
    out->set_name(std::filesystem::path(c.file).filename().string());
    out->set_bytes(c.bytes);
    out->set_sha256(c.sha256);
    out->set_uploaded_ms(c.uploaded_ms);
    out->set_best(c.best);
    if (c.best) out->set_metric(c.metric);
  }
  absl::StatusOr<std::vector<JobFileRow>> files = store_->JobFiles(job->job_id);
  if (!files.ok()) return Answer(files.status());
  for (const JobFileRow& f : *files) {
    v1::StoredJobFile* out = resp->add_files();
    out->set_kind(f.kind);
    out->set_name(f.name);
    out->set_epoch(f.epoch);
    out->set_bytes(f.bytes);
    out->set_original_bytes(f.original_bytes);
    out->set_cut(f.cut);
    out->set_sha256(f.sha256);
    out->set_uploaded_ms(f.uploaded_ms);
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::GetBoundaries(
    grpc::ServerContext* ctx, const v1::GetBoundariesRequest* req,
    v1::GetBoundariesResponse* resp) {
  TS_AUTHORIZE(ctx, "GetBoundaries");
  TS_GRPC_RETURN_IF_ERROR(ValidateSweepName(req->sweep()));
  absl::StatusOr<std::vector<CellSearch>> plan = search_.Plan(req->sweep());
  if (!plan.ok()) return Answer(plan.status());
  absl::StatusOr<Store::SweepDetail> detail = store_->Sweep(req->sweep());
  if (!detail.ok()) return Answer(detail.status());
  absl::StatusOr<SweepSpec> spec = ParseSweepSpec(detail->spec, req->sweep());
  if (spec.ok() && spec->search) resp->set_key(spec->search->key);
  for (const CellSearch& c : *plan) ToProto(c, resp->add_cells());
  return grpc::Status::OK;
}

// The bulk reads, each run in the read lane (read_lane.h): behind the
// workers' calls for the cores. Series read at max_points are a screen's
// curves; read whole, page by page, they are an export.
#define TS_IN_READ_LANE(Method, Request, Response, kind)                      \
  grpc::Status CoordinatorService::Method(                                    \
      grpc::ServerContext* ctx, const v1::Request* req, v1::Response* resp) { \
    grpc::Status status;                                                      \
    reads_.Run(kind, [&] { status = Method##InLane(ctx, req, resp); });       \
    return status;                                                            \
  }
TS_IN_READ_LANE(ListJobs, ListJobsRequest, ListJobsResponse,
                ReadLane::Kind::kView)
TS_IN_READ_LANE(GetResults, GetResultsRequest, GetResultsResponse,
                ReadLane::Kind::kView)
TS_IN_READ_LANE(GetMetrics, GetMetricsRequest, GetMetricsResponse,
                req->max_points() > 0 ? ReadLane::Kind::kView
                                      : ReadLane::Kind::kExport)
TS_IN_READ_LANE(ListSweepMetrics, ListSweepMetricsRequest,
                ListSweepMetricsResponse,
                req->max_points() > 0 ? ReadLane::Kind::kView
                                      : ReadLane::Kind::kExport)
#undef TS_IN_READ_LANE

}  // namespace tailsweep
