#include "report/report_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/job_config.h"
#include "core/schema/boundary_search.h"
#include "core/schema/job_kinds.h"
#include "core/schema/job_result.h"
#include "core/schema/json_number.h"
#include "core/schema/metrics_line.h"
#include "core/schema/sweep_spec.h"
#include "core/schema/version.h"
#include "proto/wire_records.h"
#include "report/command_results.h"
#include "report/result_json.h"

namespace tailsweep {
namespace {

using nlohmann::json;

std::string Dump(const json& doc) {
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

// 5 significant digits, non-finite as null.
json Num(double v) {
  if (!std::isfinite(v)) return nullptr;
  char text[32];
  std::snprintf(text, sizeof text, "%.5g", v);
  return std::strtod(text, nullptr);
}

json Object(const google::protobuf::RepeatedPtrField<v1::KeyValue>& kvs,
            const char* skip = nullptr) {
  json out = json::object();
  for (const v1::KeyValue& kv : kvs) {
    if (skip == nullptr || kv.key() != skip) out[kv.key()] = kv.value();
  }
  return out;
}

std::string ParamOr(const v1::JobInfo& job, const std::string& key,
                    const std::string& fallback) {
  for (const v1::KeyValue& kv : job.params()) {
    if (kv.key() == key) return kv.value();
  }
  return fallback;
}

// What a report draws of a job with `layers` layers, read by read: a train
// job's loss and spread ratio at `curve_points` and attention per layer at
// `attention_points`; a command job's every metric (no names) at
// `curve_points`.
struct CurveRead {
  std::vector<std::string> names;
  int max_points = 0;
};
std::vector<CurveRead> CurveReads(int64_t layers, bool every_metric,
                                  const ReportOptions& o) {
  if (every_metric) return {{{}, o.curve_points}};
  std::vector<CurveRead> reads = {
      {{kLossMetric, kSpreadRatioMetric}, o.curve_points}};
  std::vector<std::string> attention;
  for (int64_t l = 0; l < layers; ++l) {
    attention.push_back(LayerMetricName(kAttentionEntropyMetric, l));
    attention.push_back(LayerMetricName(kAttentionMaxWeightMetric, l));
  }
  // (No names would read every metric.)
  if (!attention.empty()) reads.push_back({attention, o.attention_points});
  return reads;
}

// Adds a point to curves shaped {name: [[steps], [values]]}.
void AddPoint(json& curves, const std::string& name, int64_t step,
              double value) {
  json& s = curves[name];
  if (s.is_null()) s = json::array({json::array(), json::array()});
  s[0].push_back(step);
  s[1].push_back(Num(value));
}

// One job's curves as {name: [[steps], [values]]} (CurveReads).
absl::StatusOr<json> Series(const CoordinatorApi& calls, const v1::JobInfo& job,
                            int64_t layers, bool every_metric,
                            const ReportOptions& o) {
  json series = json::object();
  for (const CurveRead& r : CurveReads(layers, every_metric, o)) {
    v1::GetMetricsRequest req;
    req.set_job_id(job.job_id());
    req.set_max_points(r.max_points);
    for (const std::string& n : r.names) req.add_names(n);
    absl::StatusOr<std::vector<v1::MetricPoint>> points =
        GetAllMetrics(calls, std::move(req));
    if (!points.ok()) return points.status();
    for (const v1::MetricPoint& p : *points) {
      AddPoint(series, p.name(), p.step(), p.value());
    }
  }
  return series;
}

// `result`: the job's, when it is a train result that parses.
json JobDoc(const v1::JobInfo& job, int64_t layers,
            const std::optional<TrainResult>& result) {
  json doc = {{"id", job.job_id()},
              {"seed", ParamOr(job, "seed", "")},
              {"state", job.state()},
              {"holder", job.holder()},
              {"last_error", job.last_error()},
              {"layers", layers},
              {"steps", nullptr},
              {"collapse_step", nullptr},
              {"diverged_step", nullptr},
              {"version", nullptr}};
  if (result) {
    auto step = [](int64_t v) { return v >= 0 ? json(v) : json(nullptr); };
    doc["steps"] = step(result->steps_done);
    doc["collapse_step"] = step(result->collapse_step);
    doc["diverged_step"] = step(result->diverged_step);
    if (!result->version.empty()) doc["version"] = result->version;
  }
  return doc;
}

}  // namespace

namespace {

json TailsDoc(const v1::GetResultsResponse& results) {
  json tails = json::array();
  for (const v1::TailsResultRow& t : results.tails()) {
    tails.push_back({{"seam", Num(t.seam())},
                     {"n", t.n()},
                     {"index", Num(t.index())},
                     {"ed_mean", Num(t.ed_mean())},
                     {"ed_sd", Num(t.ed_sd())},
                     {"w2_mean", Num(t.w2_mean())},
                     {"w2_sd", Num(t.w2_sd())},
                     {"ed_noise", Num(t.ed_noise())},
                     {"w2_noise", Num(t.w2_noise())},
                     {"seeds", t.seeds()}});
  }
  return tails;
}

json TableDoc(const v1::PivotTable& pivot) {
  json rows = json::array();
  for (const v1::PivotRow& r : pivot.rows()) {
    rows.push_back(
        {{"label", r.label()},
         {"cells", std::vector<int>(r.cells().begin(), r.cells().end())}});
  }
  return {{"group_by", pivot.group_by()},
          {"columns", std::vector<std::string>(pivot.columns().begin(),
                                               pivot.columns().end())},
          {"rows", std::move(rows)}};
}

// The job's layers and collapse threshold, from its params.
int64_t LayersOf(const v1::JobInfo& job) {
  int64_t layers = 0;
  if (!absl::SimpleAtoi(ParamOr(job, "layers", "0"), &layers) || layers < 0 ||
      layers > 1000) {
    layers = 0;
  }
  return layers;
}

// Every job's curves as Series reads them, by job id, in a few calls
// (ListSweepMetrics at max_points, one per CurveRead, attention for the
// most layers any job has) instead of two per job: a report of hundreds of
// jobs is a handful of reads. Null when the coordinator is older and sent
// every point (a series longer than asked): then each job's are read on
// their own (Series).
absl::StatusOr<std::optional<std::map<std::string, json>>> SweepCurves(
    const CoordinatorApi& calls, const std::string& sweep,
    const std::vector<v1::JobInfo>& jobs, bool every_metric,
    const ReportOptions& o) {
  int64_t layers = 0;
  for (const v1::JobInfo& job : jobs) layers = std::max(layers, LayersOf(job));
  std::map<std::string, json> curves;
  for (const CurveRead& r : CurveReads(layers, every_metric, o)) {
    v1::ListSweepMetricsRequest req;
    req.set_sweep(sweep);
    req.set_max_points(r.max_points);
    for (const std::string& n : r.names) req.add_names(n);
    absl::StatusOr<std::vector<v1::MetricSeries>> all =
        ListAllSweepMetrics(calls, std::move(req));
    if (!all.ok()) return all.status();
    for (const v1::MetricSeries& one : *all) {
      if (one.steps_size() > r.max_points) return std::nullopt;  // older
      json& mine = curves[one.job_id()];
      for (int i = 0; i < std::min(one.steps_size(), one.values_size()); ++i) {
        AddPoint(mine, one.name(), one.steps(i), one.values(i));
      }
    }
  }
  return curves;
}

// Stored results were checked on arrival (coordinator/store_results.cc); one
// that does not parse (a database older than that) shows without.
std::optional<TrainResult> ResultOf(const v1::JobInfo& job) {
  if (job.result_json().empty()) return std::nullopt;
  absl::StatusOr<TrainResult> parsed = ParseTrainResult(job.result_json());
  if (!parsed.ok()) return std::nullopt;
  return *std::move(parsed);
}

// Fills doc's "cells" (the results' rows, each with its jobs and one seed's
// point clouds) and "jobs" (each with its curves) and the collapse
// threshold.
absl::Status AddCellsAndJobs(const CoordinatorApi& calls,
                             const std::string& sweep,
                             const std::vector<v1::JobInfo>& all_jobs,
                             const v1::GetResultsResponse& results,
                             const ReportOptions& options, json& doc) {
  const std::vector<v1::JobInfo>* jobs = &all_jobs;
  const bool command =
      ResultTableOf(results.kind()) == ResultTable::kMetricSummary;
  if (command) {
    // A command sweep's own table: its metrics and outcomes per cell
    // (command_results.h), as `tailsweep results` prints it.
    const cli::Table t = CommandResultsTable(all_jobs, /*per_seed=*/false,
                                             /*full_precision=*/false);
    doc["command_table"] = {{"header", t.header}, {"rows", t.rows}};
  }
  // Cells: the results' rows, each with the jobs whose grid values, seed
  // left out, are the cell's.
  json cells = json::array();
  std::map<std::string, size_t> cell_of;  // grid values' JSON -> cell
  for (const v1::CellResult& r : results.rows()) {
    json cell = Object(r.cell(), "seed");
    cell_of[Dump(cell)] = cells.size();
    cells.push_back({{"cell", std::move(cell)},
                     {"result", CellResultJson(r, Num)},
                     {"jobs", json::array()}});
  }
  absl::StatusOr<std::optional<std::map<std::string, json>>> curves =
      SweepCurves(calls, sweep, *jobs, command, options);
  if (!curves.ok()) return curves.status();
  json job_docs = json::array();
  double threshold = kDefaultCollapseThreshold;
  for (const v1::JobInfo& job : *jobs) {
    const int64_t layers = LayersOf(job);
    double t = 0;
    if (absl::SimpleAtod(ParamOr(job, "collapse_threshold", ""), &t)) {
      threshold = t;
    }
    const std::optional<TrainResult> result = ResultOf(job);
    json d = JobDoc(job, layers, result);
    if (*curves) {
      auto mine = (*curves)->find(job.job_id());
      d["series"] =
          mine != (*curves)->end() ? std::move(mine->second) : json::object();
    } else {
      absl::StatusOr<json> series =
          Series(calls, job, layers, command, options);
      if (!series.ok()) return series.status();
      d["series"] = std::move(*series);
    }
    const auto c = cell_of.find(Dump(Object(job.cell(), "seed")));
    if (c != cell_of.end()) {
      json& cell = cells[c->second];
      cell["jobs"].push_back(job_docs.size());
      // One seed's point clouds per cell: the figure, at a bounded size.
      if (!cell.contains("samples") && result && !result->samples.empty()) {
        cell["samples"] = {{"seed", d["seed"]},
                           {"clouds", SamplesJson(result->samples)}};
      }
    }
    job_docs.push_back(std::move(d));
    if (options.progress) {
      options.progress(static_cast<int64_t>(job_docs.size()),
                       static_cast<int64_t>(jobs->size()));
    }
  }
  doc["collapse_threshold"] = Num(threshold);
  doc["cells"] = std::move(cells);
  doc["jobs"] = std::move(job_docs);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReportJson(const CoordinatorApi& calls,
                                       const std::string& sweep,
                                       const ReportOptions& options) {
  v1::GetSweepRequest sreq;
  sreq.set_sweep(sweep);
  v1::GetSweepResponse info;
  if (absl::Status s = calls.GetSweep(sreq, &info); !s.ok()) return s;
  json doc = {{"format", 1},
              {"generated_by", Version()},
              {"generated_ms", options.now_ms}};
  doc["sweep"] = {{"name", info.sweep().name()},
                  {"kind", info.sweep().kind()},
                  {"created_ms", info.sweep().created_ms()},
                  {"counts", CountsJson(FromProto(info.sweep().counts()))},
                  {"states", JobStateNamesJson()},
                  {"spec", info.spec_yaml()},
                  {"fixed", Object(info.fixed())},
                  {"version", info.version()}};
  v1::GetResultsRequest rreq;
  rreq.set_sweep(sweep);
  rreq.set_over_seeds(true);
  rreq.set_group_by(options.group_by);
  absl::StatusOr<v1::GetResultsResponse> results =
      GetAllResults(calls, std::move(rreq));
  if (!results.ok()) return results.status();
  if (ResultTableOf(results->kind()) == ResultTable::kTailsRows) {
    doc["tails"] = TailsDoc(*results);
    return Dump(doc);
  }
  absl::StatusOr<std::vector<v1::JobInfo>> jobs = ListAllJobs(calls, sweep, "");
  if (!jobs.ok()) return jobs.status();
  if (absl::Status s =
          AddCellsAndJobs(calls, sweep, *jobs, *results, options, doc);
      !s.ok()) {
    return s;
  }
  // A boundary sweep: where each cell's search stands, for the phase
  // diagram.
  if (absl::StatusOr<SweepSpec> spec = ParseSweepSpec(info.spec_yaml(), sweep);
      spec.ok() && spec->search) {
    const SearchSpec& s = *spec->search;
    absl::StatusOr<std::vector<CellSearch>> plan = BoundariesOf(calls, *spec);
    if (!plan.ok()) return plan.status();
    doc["search"] = {{"key", s.key},
                     {"outcome", OutcomeName(s)},
                     {"lo", Num(s.lo)},
                     {"hi", Num(s.hi)},
                     {"log_scale", s.log_scale},
                     {"cells", SearchJson(*plan, Num)}};
  }
  doc["table"] = TableDoc(results->pivot());
  return Dump(doc);
}

}  // namespace tailsweep
