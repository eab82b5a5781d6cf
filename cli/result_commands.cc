// The service commands of `tailsweep` that read what jobs produced: jobs and
// results (curve_commands.cc: curves and logs). The coordinator computes every
// table (coordinator/aggregate.h); these only fetch and render (cli/render.h).

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "cli/connection.h"
#include "cli/messages.h"
#include "cli/output.h"
#include "cli/pages.h"
#include "cli/render.h"
#include "cli/search_results.h"
#include "core/number_text.h"
#include "core/schema/command_job.h"
#include "core/schema/job_kinds.h"
#include "core/schema/job_state.h"
#include "core/schema/json_number.h"
#include "core/schema/sweep_spec.h"
#include "report/command_results.h"
#include "report/result_json.h"

namespace tailsweep::cli {
namespace {

using nlohmann::json;

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
  std::vector<std::string> states;
  for (const JobState s : kJobStates) states.emplace_back(JobStateName(s));
  app.add_option("--state", f->state, "Only jobs in this state")
      ->check(CLI::IsMember(states));
  AddFormat(app, &f->format, {"table", "csv", "json"});
  return [f]() -> absl::Status {
    absl::StatusOr<std::vector<v1::JobInfo>> jobs =
        ListAllJobs(f->c, f->sweep, f->state);
    if (!jobs.ok()) return jobs.status();
    if (f->format == "json") {
      json doc = json::array();
      for (const auto& j : *jobs) {
        doc.push_back({{"job_id", j.job_id()},
                       {"cell", CellJson(j.cell())},
                       {"state", j.state()},
                       {"job_state", j.job_state()},
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
    if (csv) t.header.push_back("job_state");
    for (const auto& j : *jobs) {
      // The table shows a short id (enough for `tailsweep logs`), the
      // error's headline (messages.h), and a cancelled job that another sweep
      // sharing it still runs as such; CSV keeps everything, the job's own
      // state in its own column.
      std::string error = j.last_error();
      std::string state = j.state();
      if (!csv) {
        error = ErrorHeadline(error, 80);
        if (!j.job_state().empty() && j.job_state() != j.state()) {
          absl::StrAppend(&state, " (", j.job_state(), " for another sweep)");
        }
      }
      t.rows.push_back({csv ? j.job_id() : j.job_id().substr(0, 12),
                        CellText(j.cell()), state, absl::StrCat(j.attempt()),
                        j.holder(), error});
      if (csv) t.rows.back().push_back(j.job_state());
    }
    PrintIn(f->format, t);
    return absl::OkStatus();
  };
}

// One results cell: "median [low, high]", "b" (bold in markdown) when the
// interval reaches 1, "*" when the run collapsed (k/n of n seeds), "!" when
// it diverged, "~" when it stopped early; over several seeds also n and the
// seeds' range.
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
  if (r.stopped_early() > 0) text += " ~" + of(r.stopped_early());
  if (r.jobs() > 1) {
    absl::StrAppend(&text, absl::StrFormat(" n=%d (%.3f-%.3f)", r.done(),
                                           r.seed_min(), r.seed_max()));
  }
  return text;
}

// The rows of all pages in grid order (pages come in pivot order).
std::vector<const v1::CellResult*> InGridOrder(
    const v1::GetResultsResponse& results) {
  std::vector<const v1::CellResult*> rows;
  for (const v1::CellResult& r : results.rows()) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) {
    return a->position() < b->position();
  });
  return rows;
}

// Flat rows: every grid key its own column, then the values.
Table FlatTrainTable(const std::vector<const v1::CellResult*>& rows) {
  Table t;
  for (const v1::CellResult* r : rows) {
    for (const auto& kv : r->cell()) {
      if (std::find(t.header.begin(), t.header.end(), kv.key()) ==
          t.header.end()) {
        t.header.push_back(kv.key());
      }
    }
  }
  const size_t keys = t.header.size();
  for (const char* c : {"jobs", "done", "failed", "ratio_median", "ratio_mean",
                        "ratio_ci_low", "ratio_ci_high", "seed_min", "seed_max",
                        "bold", "collapsed", "collapse_step", "diverged",
                        "hill_stat", "stopped_early", "steps_saved"}) {
    t.header.push_back(c);
  }
  for (const v1::CellResult* p : rows) {
    const v1::CellResult& r = *p;
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
          Cell(r.hill_stat()), absl::StrCat(r.stopped_early()),
          absl::StrCat(r.steps_saved())}) {
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

// The sweep's spec when it is a boundary sweep; nullopt for any other.
absl::StatusOr<std::optional<SweepSpec>> SearchOf(Connection& c,
                                                  const std::string& sweep) {
  v1::GetSweepRequest req;
  req.set_sweep(sweep);
  v1::GetSweepResponse info;
  if (absl::Status s = c.Call(&CoordinatorApi::GetSweep, req, &info); !s.ok()) {
    return s;
  }
  if (info.spec_yaml().empty()) return std::nullopt;
  absl::StatusOr<SweepSpec> spec = ParseSweepSpec(info.spec_yaml(), sweep);
  if (!spec.ok() || !spec->search) return std::nullopt;
  return *std::move(spec);
}

RunFn DefineResults(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep, format = "table", group_by;
    bool per_seed = false, probes = false;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  AddFormat(app, &f->format, {"table", "csv", "json", "markdown"});
  app.add_option("--group-by", f->group_by,
                 "Train sweeps: the grid key whose values become the columns "
                 "(default: kernel)");
  app.add_flag("--per-seed", f->per_seed,
               "One row per seed instead of aggregating over seeds");
  app.add_flag("--probes", f->probes,
               "Boundary sweeps: the ordinary table (a row per probe point) "
               "instead of the boundaries");
  return [f]() -> absl::Status {
    if (!f->probes && !f->per_seed) {
      absl::StatusOr<std::optional<SweepSpec>> search =
          SearchOf(f->c, f->sweep);
      if (!search.ok()) return search.status();
      if (*search) return PrintSearchResults(f->c, **search, f->format);
    }
    v1::GetResultsRequest req;
    req.set_sweep(f->sweep);
    req.set_over_seeds(!f->per_seed);
    req.set_group_by(f->group_by);
    absl::StatusOr<v1::GetResultsResponse> all = GetAllResults(f->c, req);
    if (!all.ok()) return all.status();
    const v1::GetResultsResponse& results = *all;
    if (ResultTableOf(results.kind()) == ResultTable::kMetricSummary) {
      absl::StatusOr<std::vector<v1::JobInfo>> jobs =
          ListAllJobs(f->c, f->sweep, "");
      if (!jobs.ok()) return jobs.status();
      const bool full = f->format == "csv" || f->format == "json";
      const Table t = CommandResultsTable(*jobs, f->per_seed, full);
      if (f->format == "json") {
        json doc = json::array();
        for (const auto& line : t.rows) {
          json row = json::object();
          for (size_t c = 0; c < t.header.size(); ++c) {
            const json v = ParamJson(line[c]);
            row[t.header[c]] = v.is_number() || line[c] == "nan"
                                   ? JsonNumber(std::stod(line[c]))
                                   : json(line[c]);
          }
          doc.push_back(row);
        }
        PrintJson(doc);
        return absl::OkStatus();
      }
      PrintIn(f->format, t);
      if (f->format == "table") {
        std::cout << results.done() << " of " << results.jobs()
                  << " jobs done; metrics: the last logged value (median "
                     "over seeds); outcomes: runs where it holds, of those "
                     "done\n";
      }
      return absl::OkStatus();
    }
    if (ResultTableOf(results.kind()) == ResultTable::kTailsRows) {
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
      const std::vector<const v1::CellResult*> rows = InGridOrder(results);
      if (f->format == "csv") {
        std::cout << RenderCsv(FlatTrainTable(rows));
        return absl::OkStatus();
      }
      json doc = json::array();
      for (const v1::CellResult* p : rows) {
        const v1::CellResult& r = *p;
        json row = CellJson(r.cell());
        row.update(CellResultJson(r, JsonNumber));
        doc.push_back(row);
      }
      PrintJson(doc);
      return absl::OkStatus();
    }
    PrintIn(f->format, PivotTableOf(results, f->format == "markdown"));
    if (f->format == "table") {
      std::cout << "median distance ratio [95% bootstrap interval over "
                   "instances]; b: the interval reaches 1; *: collapsed; !: "
                   "diverged; ~: stopped early; over seeds: medians of the "
                   "seeds, n=seeds (range of their medians)\n";
      int64_t stopped = 0, saved = 0;
      for (const v1::CellResult& r : results.rows()) {
        stopped += r.stopped_early();
        saved += r.steps_saved();
      }
      if (stopped > 0) {
        std::cout << stopped << " run(s) stopped early; " << saved
                  << " training steps saved\n";
      }
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
  };
}

}  // namespace tailsweep::cli
