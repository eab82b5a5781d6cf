// The service commands of `tailsweep` that read what jobs produced: jobs,
// results, curves, logs. The coordinator computes every table
// (coordinator/aggregate.h); these only fetch and render (cli/render.h).

#include <cmath>
#include <iostream>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "cli/connection.h"
#include "cli/output.h"
#include "cli/render.h"
#include "core/number_text.h"
#include "core/schema/json_number.h"

namespace tailsweep::cli {
namespace {

using nlohmann::json;

std::string CellText(
    const google::protobuf::RepeatedPtrField<v1::KeyValue>& cell) {
  std::vector<std::string> parts;
  for (const auto& kv : cell) parts.push_back(kv.key() + "=" + kv.value());
  return absl::StrJoin(parts, " ");
}

json CellJson(const google::protobuf::RepeatedPtrField<v1::KeyValue>& cell) {
  json out = json::object();
  for (const auto& kv : cell) out[kv.key()] = kv.value();
  return out;
}

void AddFormat(CLI::App& app, std::string* format,
               const std::vector<std::string>& allowed) {
  app.add_option("--format", *format, absl::StrJoin(allowed, ", "))
      ->check(CLI::IsMember(allowed))
      ->capture_default_str();
}

// Writes a table in `format` (table, csv, markdown); false for json, which
// each command writes its own way.
bool PrintIn(const std::string& format, const Table& table) {
  if (format == "csv") {
    std::cout << RenderCsv(table);
  } else if (format == "markdown") {
    std::cout << RenderMarkdown(table);
  } else if (format == "table") {
    std::cout << RenderText(table);
  } else {
    return false;
  }
  return true;
}

// A number for CSV and tables: "" when it does not exist.
std::string Cell(double v) { return std::isnan(v) ? "" : FormatDouble(v); }

RunFn DefineJobs(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep, state, format = "table";
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  app.add_option("--state", f->state, "Only jobs in this state")
      ->check(CLI::IsMember({"queued", "leased", "done", "failed",
                             "cancelled"}));
  AddFormat(app, &f->format, {"table", "csv", "json"});
  return [f]() -> absl::Status {
    v1::ListJobsRequest req;
    req.set_sweep(f->sweep);
    req.set_state(f->state);
    v1::ListJobsResponse jobs;
    if (absl::Status s = f->c.Check(
            f->c.Stub().ListJobs(f->c.Context().get(), req, &jobs));
        !s.ok()) {
      return s;
    }
    if (f->format == "json") {
      json doc = json::array();
      for (const auto& j : jobs.jobs()) {
        doc.push_back({{"job_id", j.job_id()},
                       {"cell", CellJson(j.cell())},
                       {"state", j.state()},
                       {"attempt", j.attempt()},
                       {"epoch", j.epoch()},
                       {"holder", j.holder()},
                       {"last_error", j.last_error()}});
      }
      PrintJson(doc);
      return absl::OkStatus();
    }
    const bool csv = f->format == "csv";
    Table t{{"job", "cell", "state", "attempt", "holder", "last_error"}, {}};
    for (const auto& j : jobs.jobs()) {
      // The table shows a short id (enough for `tailsweep logs`) and the
      // error's first line; CSV keeps everything.
      std::string error = j.last_error();
      if (!csv) error = error.substr(0, std::min(error.find('\n'), size_t{60}));
      t.rows.push_back({csv ? j.job_id() : j.job_id().substr(0, 12),
                        CellText(j.cell()), j.state(),
                        absl::StrCat(j.attempt()), j.holder(), error});
    }
    PrintIn(f->format, t);
    return absl::OkStatus();
  };
}

// One results cell: "median [low, high]", "b" (bold in markdown) when the
// interval reaches 1, "*" when the run collapsed (k/n of n seeds), "!" when
// it diverged; over several seeds also n and the seeds' range.
std::string ResultCell(const v1::CellResult& r, bool markdown) {
  if (std::isnan(r.ratio_median())) {
    if (r.diverged() > 0) return "diverged";
    if (r.failed() > 0) return "failed";
    return r.done() == r.jobs() ? "-" : "pending";
  }
  std::string text = absl::StrFormat("%.3f [%.3f, %.3f]", r.ratio_median(),
                                     r.ratio_ci_low(), r.ratio_ci_high());
  if (markdown && r.bold()) text = "**" + text + "**";
  if (!markdown && r.bold()) text += " b";
  const auto of = [&](int64_t k) {
    return r.jobs() > 1 ? absl::StrCat(k, "/", r.done()) : std::string();
  };
  if (r.collapsed() > 0) text += " *" + of(r.collapsed());
  if (r.diverged() > 0) text += " !" + of(r.diverged());
  if (r.jobs() > 1) {
    absl::StrAppend(&text, absl::StrFormat(" n=%d (%.3f-%.3f)", r.done(),
                                           r.seed_min(), r.seed_max()));
  }
  return text;
}

// Flat rows: every grid key its own column, then the values.
Table FlatTrainTable(const v1::GetResultsResponse& results) {
  Table t;
  for (const auto& r : results.rows()) {
    for (const auto& kv : r.cell()) {
      if (std::find(t.header.begin(), t.header.end(), kv.key()) ==
          t.header.end()) {
        t.header.push_back(kv.key());
      }
    }
  }
  const size_t keys = t.header.size();
  for (const char* c :
       {"jobs", "done", "failed", "ratio_median", "ratio_mean", "ratio_ci_low",
        "ratio_ci_high", "seed_min", "seed_max", "bold", "collapsed",
        "collapse_step", "diverged", "hill_stat"}) {
    t.header.push_back(c);
  }
  for (const auto& r : results.rows()) {
    std::vector<std::string> row(keys);
    for (const auto& kv : r.cell()) {
      row[std::find(t.header.begin(), t.header.end(), kv.key()) -
          t.header.begin()] = kv.value();
    }
    for (const std::string& v :
         {absl::StrCat(r.jobs()), absl::StrCat(r.done()),
          absl::StrCat(r.failed()), Cell(r.ratio_median()),
          Cell(r.ratio_mean()), Cell(r.ratio_ci_low()), Cell(r.ratio_ci_high()),
          Cell(r.seed_min()), Cell(r.seed_max()),
          std::string(r.bold() ? "true" : "false"), absl::StrCat(r.collapsed()),
          Cell(r.collapse_step()), absl::StrCat(r.diverged()),
          Cell(r.hill_stat())}) {
      row.push_back(v);
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table PivotTableOf(const v1::GetResultsResponse& results, bool markdown) {
  Table t;
  t.header = {"cell"};
  for (const std::string& c : results.pivot().columns()) t.header.push_back(c);
  for (const v1::PivotRow& row : results.pivot().rows()) {
    std::vector<std::string> cells = {row.label()};
    for (int i : row.cells()) {
      cells.push_back(i < 0 ? "" : ResultCell(results.rows(i), markdown));
    }
    t.rows.push_back(std::move(cells));
  }
  return t;
}

std::vector<TailsRow> TailsRows(const v1::GetResultsResponse& results) {
  std::vector<TailsRow> rows;
  for (const v1::TailsResultRow& r : results.tails()) {
    rows.push_back({r.seam(), r.n(), r.index(), r.ed_mean(), r.ed_sd(),
                    r.w2_mean(), r.w2_sd(), r.ed_noise(), r.w2_noise()});
  }
  return rows;
}

RunFn DefineResults(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep, format = "table", group_by;
    bool per_seed = false;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  AddFormat(app, &f->format, {"table", "csv", "json", "markdown"});
  app.add_option("--group-by", f->group_by,
                 "Train sweeps: the grid key whose values become the columns "
                 "(default: kernel)");
  app.add_flag("--per-seed", f->per_seed,
               "One row per seed instead of aggregating over seeds");
  return [f]() -> absl::Status {
    v1::GetResultsRequest req;
    req.set_sweep(f->sweep);
    req.set_over_seeds(!f->per_seed);
    req.set_group_by(f->group_by);
    v1::GetResultsResponse results;
    if (absl::Status s = f->c.Check(
            f->c.Stub().GetResults(f->c.Context().get(), req, &results));
        !s.ok()) {
      return s;
    }
    if (results.kind() == "tails") {
      Table t = TailsTable(TailsRows(results));
      if (f->format == "json") {
        json doc = json::array();
        for (int i = 0; i < results.tails_size(); ++i) {
          json row = CellJson(results.tails(i).cell());
          for (size_t c = 0; c < t.header.size(); ++c) {
            row[t.header[c]] = c == 1 ? json(results.tails(i).n())
                                      : JsonNumber(std::stod(t.rows[i][c]));
          }
          row["seeds"] = results.tails(i).seeds();
          doc.push_back(row);
        }
        PrintJson(doc);
        return absl::OkStatus();
      }
      PrintIn(f->format, t);
      if (f->format == "table") {
        std::cout << results.done() << " of " << results.jobs()
                  << " jobs done; noise units: (mean_a - mean_a*) / sd_a*\n";
      }
      return absl::OkStatus();
    }
    if (f->format == "json" || f->format == "csv") {
      const Table flat = FlatTrainTable(results);
      if (f->format == "csv") {
        std::cout << RenderCsv(flat);
        return absl::OkStatus();
      }
      json doc = json::array();
      for (int i = 0; i < results.rows_size(); ++i) {
        const v1::CellResult& r = results.rows(i);
        json row = CellJson(r.cell());
        row.update({{"jobs", r.jobs()},
                    {"done", r.done()},
                    {"failed", r.failed()},
                    {"ratio_median", JsonNumber(r.ratio_median())},
                    {"ratio_mean", JsonNumber(r.ratio_mean())},
                    {"ratio_ci_low", JsonNumber(r.ratio_ci_low())},
                    {"ratio_ci_high", JsonNumber(r.ratio_ci_high())},
                    {"seed_min", JsonNumber(r.seed_min())},
                    {"seed_max", JsonNumber(r.seed_max())},
                    {"bold", r.bold()},
                    {"collapsed", r.collapsed()},
                    {"collapse_step", JsonNumber(r.collapse_step())},
                    {"diverged", r.diverged()},
                    {"hill_stat", JsonNumber(r.hill_stat())}});
        doc.push_back(row);
      }
      PrintJson(doc);
      return absl::OkStatus();
    }
    PrintIn(f->format, PivotTableOf(results, f->format == "markdown"));
    if (f->format == "table") {
      std::cout << "median distance ratio [95% bootstrap interval over "
                   "instances]; b: the interval reaches 1; *: collapsed; !: "
                   "diverged; over seeds: medians of the seeds, n=seeds "
                   "(range of their medians)\n";
    }
    return absl::OkStatus();
  };
}

// Every point of one job's metrics named `names`, all pages.
absl::StatusOr<std::vector<v1::MetricPoint>> Series(
    Connection& c, const std::string& job_id,
    const std::vector<std::string>& names) {
  v1::GetMetricsRequest req;
  req.set_job_id(job_id);
  for (const std::string& n : names) req.add_names(n);
  std::vector<v1::MetricPoint> out;
  while (true) {
    v1::GetMetricsResponse resp;
    if (absl::Status s =
            c.Check(c.Stub().GetMetrics(c.Context().get(), req, &resp));
        !s.ok()) {
      return s;
    }
    out.insert(out.end(), resp.points().begin(), resp.points().end());
    if (resp.next_page_token().empty()) return out;
    req.set_page_token(resp.next_page_token());
  }
}

RunFn DefineCurves(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string target, format = "csv";
    std::vector<std::string> metrics;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("TARGET", f->target,
                 "A job id (or its first 6+ characters) or a sweep name")
      ->required();
  app.add_option("--metric", f->metrics,
                 "Metric name, repeatable: loss, lr, grad_norm, spread_ratio, "
                 "step_seconds, attention_entropy/L, attention_max_weight/L, "
                 "eval/..., collapse_onset, diverged_onset (default: all)");
  AddFormat(app, &f->format, {"csv", "json"});
  return [f]() -> absl::Status {
    // A sweep name first; else a job (id or prefix).
    struct Target {
      std::string job_id;
      std::string cell;
    };
    std::vector<Target> targets;
    v1::ListJobsRequest list;
    list.set_sweep(f->target);
    v1::ListJobsResponse jobs;
    const grpc::Status listed =
        f->c.Stub().ListJobs(f->c.Context().get(), list, &jobs);
    if (listed.ok()) {
      for (const auto& j : jobs.jobs()) {
        targets.push_back({j.job_id(), CellText(j.cell())});
      }
    } else if (listed.error_code() == grpc::StatusCode::NOT_FOUND ||
               listed.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      v1::GetJobLogRequest find;
      find.set_job(f->target);
      v1::GetJobLogResponse job;
      const grpc::Status found =
          f->c.Stub().GetJobLog(f->c.Context().get(), find, &job);
      if (found.error_code() == grpc::StatusCode::NOT_FOUND ||
          found.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
        return absl::NotFoundError(absl::StrCat(
            "'", f->target,
            "' is neither a sweep nor a job id (see tailsweep status, "
            "tailsweep jobs SWEEP)"));
      }
      if (absl::Status s = f->c.Check(found); !s.ok()) return s;
      targets.push_back({job.job_id(), ""});
    } else {
      return f->c.Check(listed);
    }
    json doc = json::array();
    Table t{{"job", "cell", "metric", "step", "value"}, {}};
    for (const Target& target : targets) {
      absl::StatusOr<std::vector<v1::MetricPoint>> points =
          Series(f->c, target.job_id, f->metrics);
      if (!points.ok()) return points.status();
      for (const v1::MetricPoint& p : *points) {
        if (f->format == "json") {
          doc.push_back({{"job", target.job_id},
                         {"cell", target.cell},
                         {"metric", p.name()},
                         {"step", p.step()},
                         {"value", JsonNumber(p.value())}});
        } else {
          // Non-finite values print as nan, inf, -inf (pandas reads them).
          t.rows.push_back({target.job_id, target.cell, p.name(),
                            absl::StrCat(p.step()), FormatDouble(p.value())});
        }
      }
    }
    if (f->format == "json") {
      PrintJson(doc);
    } else {
      std::cout << RenderCsv(t);
    }
    return absl::OkStatus();
  };
}

RunFn DefineLogs(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string job;
    bool all = false;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("JOB", f->job, "A job id or its first 6+ characters")
      ->required();
  app.add_flag("--all", f->all, "Every attempt's tail, not only the newest");
  return [f]() -> absl::Status {
    v1::GetJobLogRequest req;
    req.set_job(f->job);
    v1::GetJobLogResponse log;
    if (absl::Status s = f->c.Check(
            f->c.Stub().GetJobLog(f->c.Context().get(), req, &log));
        !s.ok()) {
      return s;
    }
    std::cerr << "job " << log.job_id() << ": " << log.state()
              << (log.last_error().empty() ? "" : ", last error: ")
              << log.last_error().substr(0, log.last_error().find('\n'))
              << "\n";
    if (log.logs_size() == 0) {
      std::cerr << "no stderr kept for this job yet (it is sent when an "
                   "attempt ends)\n";
    }
    for (const v1::JobLog& entry : log.logs()) {
      std::cerr << "--- epoch " << entry.epoch() << " (" << entry.outcome()
                << ") ---\n";
      std::cout << entry.stderr_tail();
      if (!entry.stderr_tail().empty() && entry.stderr_tail().back() != '\n') {
        std::cout << "\n";
      }
      if (!f->all) break;
    }
    return absl::OkStatus();
  };
}

}  // namespace

std::vector<Command> ResultCommands() {
  return {
      {"jobs", "The jobs of a sweep (--state failed: what went wrong)",
       DefineJobs},
      {"results",
       "Results table of a sweep (table, csv, json, markdown; tails sweeps: "
       "the testbed table)",
       DefineResults},
      {"curves", "Metric series of a job or of every job of a sweep (CSV, JSON)",
       DefineCurves},
      {"logs", "The stderr tail of a job's last attempt", DefineLogs},
  };
}

}  // namespace tailsweep::cli
