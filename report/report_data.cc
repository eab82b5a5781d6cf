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

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/job_config.h"
#include "core/schema/boundary_search.h"
#include "core/schema/json_number.h"
#include "core/schema/metrics_line.h"
#include "core/schema/sweep_spec.h"
#include "core/schema/version.h"
#include "proto/wire_records.h"
#include "report/result_json.h"

namespace tailsweep {
namespace {

using nlohmann::json;

std::string Dump(const json& doc) {
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

// 5 significant digits; NaN as null (a gap in a curve), the infinities as
// the protocol's words "inf" and "-inf" (json_number.h).
json Num(double v) {
  if (std::isnan(v)) return nullptr;
  if (!std::isfinite(v)) return JsonNumber(v);
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

// What a report draws, read by read: runs that log the collapse signals
// (loss and spread_ratio, metrics_line.h) those at `curve_points` and
// attention per layer at `attention_points`; other runs every metric at
// `curve_points`. `read(names, max_points)` reads (no names: every
// metric) and says whether any series came back; the first read tells
// which runs these are.
template <typename Read>
absl::Status ReadCurves(int64_t layers, const ReportOptions& o, Read read) {
  absl::StatusOr<bool> signals =
      read({kLossMetric, kSpreadRatioMetric}, o.curve_points);
  if (!signals.ok()) return signals.status();
  if (!*signals) return read({}, o.curve_points).status();
  std::vector<std::string> attention;
  for (int64_t l = 0; l < layers; ++l) {
    attention.push_back(LayerMetricName(kAttentionEntropyMetric, l));
    attention.push_back(LayerMetricName(kAttentionMaxWeightMetric, l));
  }
  // (No names would read every metric.)
  if (attention.empty()) return absl::OkStatus();
  return read(attention, o.attention_points).status();
}

// Adds a point to curves shaped {name: [[steps], [values]]}.
void AddPoint(json& curves, const std::string& name, int64_t step,
              double value) {
  json& s = curves[name];
  if (s.is_null()) s = json::array({json::array(), json::array()});
  s[0].push_back(step);
  s[1].push_back(Num(value));
}

// One job's curves as {name: [[steps], [values]]} (ReadCurves).
absl::StatusOr<json> Series(const CoordinatorApi& calls, const v1::JobInfo& job,
                            int64_t layers, const ReportOptions& o) {
  json series = json::object();
  absl::Status s =
      ReadCurves(layers, o,
                 [&](const std::vector<std::string>& names,
                     int max_points) -> absl::StatusOr<bool> {
                   v1::GetMetricsRequest req;
                   req.set_job_id(job.job_id());
                   req.set_max_points(max_points);
                   for (const std::string& n : names) req.add_names(n);
                   absl::StatusOr<std::vector<v1::MetricPoint>> points =
                       GetAllMetrics(calls, std::move(req));
                   if (!points.ok()) return points.status();
                   for (const v1::MetricPoint& p : *points) {
                     AddPoint(series, p.name(), p.step(), p.value());
                   }
                   return !points->empty();
                 });
  if (!s.ok()) return s;
  return series;
}

// A job's row: its state and, read by name from its result when there
// (whatever its kind: never parsed as one), steps_done, collapse_step,
// diverged_step and version.
json JobDoc(const v1::JobInfo& job, int64_t layers, const json& result) {
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
  if (!result.is_object()) return doc;
  auto step = [&](const char* key) {
    const auto it = result.find(key);
    return it != result.end() && it->is_number_integer() &&
                   it->get<int64_t>() >= 0
               ? *it
               : json(nullptr);
  };
  doc["steps"] = step("steps_done");
  doc["collapse_step"] = step("collapse_step");
  doc["diverged_step"] = step("diverged_step");
  if (auto v = result.find("version"); v != result.end() && v->is_string()) {
    doc["version"] = *v;
  }
  return doc;
}

}  // namespace

namespace {

json PivotDoc(const ResultsPivot& pivot) {
  json rows = json::array();
  for (const ResultsPivot::Row& r : pivot.rows) {
    rows.push_back({{"label", r.label}, {"cells", r.cells}});
  }
  return {{"group_by", pivot.group_by},
          {"columns", pivot.columns},
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
// (ListSweepMetrics at max_points, one per ReadCurves read, attention for
// the most layers any job has) instead of two per job: a report of
// hundreds of jobs is a handful of reads. Null when the coordinator is
// older and sent every point (a series longer than asked): then each job's
// are read on their own (Series).
absl::StatusOr<std::optional<std::map<std::string, json>>> SweepCurves(
    const CoordinatorApi& calls, const std::string& sweep,
    const std::vector<v1::JobInfo>& jobs, const ReportOptions& o) {
  int64_t layers = 0;
  for (const v1::JobInfo& job : jobs) layers = std::max(layers, LayersOf(job));
  std::map<std::string, json> curves;
  bool older = false;
  absl::Status s = ReadCurves(
      layers, o,
      [&](const std::vector<std::string>& names,
          int max_points) -> absl::StatusOr<bool> {
        v1::ListSweepMetricsRequest req;
        req.set_sweep(sweep);
        req.set_max_points(max_points);
        for (const std::string& n : names) req.add_names(n);
        absl::StatusOr<std::vector<v1::MetricSeries>> all =
            ListAllSweepMetrics(calls, std::move(req));
        if (!all.ok()) return all.status();
        for (const v1::MetricSeries& one : *all) {
          if (one.steps_size() > max_points) older = true;
          json& mine = curves[one.job_id()];
          for (int i = 0; i < std::min(one.steps_size(), one.values_size());
               ++i) {
            AddPoint(mine, one.name(), one.steps(i), one.values(i));
          }
        }
        return !all->empty();
      });
  if (!s.ok()) return s;
  if (older) return std::nullopt;
  return curves;
}

// The result a job stored, as JSON (null when none or not JSON).
json ResultOf(const v1::JobInfo& job) {
  if (job.result_json().empty()) return nullptr;
  return json::parse(job.result_json(), nullptr, /*allow_exceptions=*/false);
}

// The table row whose key columns are `cell`'s values (seed left out), or
// -1: a cell's row in a table with a row per cell.
std::map<std::string, int> RowsByCell(const ResultsTable& table) {
  std::map<std::string, int> out;
  for (size_t i = 0; i < table.rows.size(); ++i) {
    json cell = json::object();
    for (size_t c = 0; c < table.columns.size(); ++c) {
      const auto* v = std::get_if<std::string>(&table.rows[i][c]);
      if (table.columns[c].role == ColumnRole::kKey && v != nullptr) {
        cell[table.columns[c].name] = *v;
      }
    }
    out.emplace(Dump(cell), static_cast<int>(i));  // the first row of a cell
  }
  return out;
}

// The MIME type of an artifact shown as an image (as the dashboard shows
// them: PNG, JPEG, GIF, WebP); "" for any other file.
std::string ImageType(const std::string& name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const auto& [ext, type] :
       {std::pair{".png", "image/png"}, std::pair{".jpg", "image/jpeg"},
        std::pair{".jpeg", "image/jpeg"}, std::pair{".gif", "image/gif"},
        std::pair{".webp", "image/webp"}}) {
    if (absl::EndsWith(lower, ext)) return type;
  }
  return "";
}

// A job's image artifacts, each with "src" a data: URI while `*budget`
// bytes last (null past it, or when it could not be read): the report file
// has no coordinator to ask.
json ImageArtifacts(const CoordinatorApi& calls, const std::string& job_id,
                    int64_t* budget) {
  json out = json::array();
  v1::GetJobRequest req;
  req.set_job(job_id);
  v1::GetJobResponse job;
  if (!calls.GetJob(req, &job).ok()) return out;
  for (const v1::StoredJobFile& f : job.files()) {
    const std::string type = ImageType(f.name());
    if (f.kind() != "artifact" || type.empty()) continue;
    json a = {{"name", f.name()},
              {"bytes", f.bytes()},
              {"epoch", f.epoch()},
              {"src", nullptr}};
    if (f.bytes() <= *budget) {
      v1::ReadJobFileRequest read;
      read.set_job(job_id);
      read.set_kind("artifact");
      read.set_name(f.name());
      std::unique_ptr<JobFileStream> stream = calls.ReadJobFile(read);
      std::string data;
      v1::JobFileChunk chunk;
      while (stream->Next(&chunk)) {
        if (!chunk.has_header()) data += chunk.data();
      }
      if (stream->Finish().ok() &&
          static_cast<int64_t>(data.size()) == f.bytes()) {
        *budget -= f.bytes();
        a["src"] =
            absl::StrCat("data:", type, ";base64,", absl::Base64Escape(data));
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

// Fills doc's "cells" (the sweep's cells, seed left out: each with its
// jobs, its table row and one seed's point clouds) and "jobs" (each with
// its curves) and the collapse threshold.
absl::Status AddCellsAndJobs(const CoordinatorApi& calls,
                             const std::string& sweep,
                             const std::vector<v1::JobInfo>& jobs,
                             const ResultsTable& table,
                             const ReportOptions& options, json& doc) {
  const std::map<std::string, int> row_of = RowsByCell(table);
  json cells = json::array();
  std::map<std::string, size_t> cell_of;  // grid values' JSON -> cell
  absl::StatusOr<std::optional<std::map<std::string, json>>> curves =
      SweepCurves(calls, sweep, jobs, options);
  if (!curves.ok()) return curves.status();
  json job_docs = json::array();
  double threshold = kDefaultCollapseThreshold;
  int64_t image_budget = options.artifact_image_bytes;
  for (const v1::JobInfo& job : jobs) {
    double t = 0;
    if (absl::SimpleAtod(ParamOr(job, "collapse_threshold", ""), &t)) {
      threshold = t;
    }
    const json result = ResultOf(job);
    json d = JobDoc(job, LayersOf(job), result);
    if (*curves) {
      auto mine = (*curves)->find(job.job_id());
      d["series"] =
          mine != (*curves)->end() ? std::move(mine->second) : json::object();
    } else {
      absl::StatusOr<json> series = Series(calls, job, LayersOf(job), options);
      if (!series.ok()) return series.status();
      d["series"] = std::move(*series);
    }
    if (options.artifact_image_bytes > 0 && job.state() != "queued") {
      json images = ImageArtifacts(calls, job.job_id(), &image_budget);
      if (!images.empty()) d["artifacts"] = std::move(images);
    }
    json grid = Object(job.cell(), "seed");
    const std::string key = Dump(grid);
    auto [c, added] = cell_of.try_emplace(key, cells.size());
    if (added) {
      const auto row = row_of.find(key);
      cells.push_back(
          {{"cell", std::move(grid)},
           {"row", row == row_of.end() ? json(nullptr) : json(row->second)},
           {"jobs", json::array()}});
    }
    json& cell = cells[c->second];
    cell["jobs"].push_back(job_docs.size());
    // One seed's point clouds per cell (a result's "samples", as stored):
    // the figure, at a bounded size.
    if (!cell.contains("samples") && result.is_object() &&
        result.contains("samples") && result["samples"].is_array() &&
        !result["samples"].empty()) {
      cell["samples"] = {{"seed", d["seed"]}, {"clouds", result["samples"]}};
    }
    job_docs.push_back(std::move(d));
    if (options.progress) {
      options.progress(static_cast<int64_t>(job_docs.size()),
                       static_cast<int64_t>(jobs.size()));
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
  json doc = {{"format", 2},
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
  doc["sweep_settings"] = SweepSettingsJson(info.sweep().counts().settings(),
                                            info.sweep().counts().hours());
  absl::StatusOr<SweepResults> results = GetResultsTable(calls, sweep, true);
  if (!results.ok()) return results.status();
  const ResultsTable& table = results->table;
  doc["results"] = ResultsTableJson(table);
  if (table.ColumnIndex(table.headline)) {
    doc["pivot"] = PivotDoc(PivotOf(
        table, options.group_by.empty() ? table.group_by : options.group_by));
  }
  absl::StatusOr<std::vector<v1::JobInfo>> jobs = ListAllJobs(calls, sweep, "");
  if (!jobs.ok()) return jobs.status();
  if (absl::Status s =
          AddCellsAndJobs(calls, sweep, *jobs, table, options, doc);
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
  return Dump(doc);
}

}  // namespace tailsweep
