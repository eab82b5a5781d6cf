// The service commands of `tailsweep` that read what jobs produced: jobs and
// results (curve_commands.cc: curves and logs). The coordinator makes every
// results table (each kind's summarize, core/schema/results_table.h); these
// only fetch and render it (cli/render.h), whatever the kind.

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
        doc.push_back(
            {{"job_id", j.job_id()},
             {"cell", CellJson(j.cell())},
             {"state", j.state()},
             {"job_state", j.job_state()},
             {"attempt", j.attempt()},
             {"epoch", j.epoch()},
             {"holder", j.holder()},
             {"last_error", j.last_error()},
             {"best_checkpoint_step", j.best_checkpoint_step()},
             {"not_kept", std::vector<std::string>(j.not_kept().begin(),
                                                   j.not_kept().end())}});
      }
      PrintJson(doc);
      return absl::OkStatus();
    }
    const bool csv = f->format == "csv";
    Table t{{"job", "cell", "state", "attempt", "holder", "last_error"}, {}};
    if (csv) t.header.push_back("job_state");
    // The best checkpoint's step, when the sweep keeps one (keep: best).
    const bool best =
        std::any_of(jobs->begin(), jobs->end(),
                    [](const auto& j) { return j.best_checkpoint_step() > 0; });
    if (best) t.header.push_back("best_ckpt");
    // What a job made but did not store (over a cap): a column in CSV,
    // lines under the table.
    const bool not_kept =
        std::any_of(jobs->begin(), jobs->end(),
                    [](const auto& j) { return !j.not_kept().empty(); });
    if (csv && not_kept) t.header.push_back("not_kept");
    std::string notes;
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
      if (best) {
        t.rows.back().push_back(j.best_checkpoint_step() > 0
                                    ? absl::StrCat(j.best_checkpoint_step())
                                    : "");
      }
      if (csv && not_kept) {
        t.rows.back().push_back(absl::StrJoin(j.not_kept(), "; "));
      }
      for (const std::string& note : j.not_kept()) {
        absl::StrAppend(&notes, "  ", j.job_id().substr(0, 12), ": ",
                        EscapeControl(note), "\n");
      }
    }
    PrintIn(f->format, t);
    if (!csv && !notes.empty()) {
      std::cout << "\nnot kept (over a cap, or refused):\n" << notes;
    }
    return absl::OkStatus();
  };
}

// The table's rows flat: every column but display ones, numbers in full
// (csv) or to 4 significant digits (for people).
Table FlatTable(const ResultsTable& results, bool precise) {
  Table t;
  std::vector<size_t> shown;
  for (size_t c = 0; c < results.columns.size(); ++c) {
    if (results.columns[c].role == ColumnRole::kDisplay) continue;
    shown.push_back(c);
    t.header.push_back(results.columns[c].name);
  }
  for (const std::vector<ResultValue>& row : results.rows) {
    std::vector<std::string> line;
    for (size_t c : shown) line.push_back(TextOf(row[c], precise));
    t.rows.push_back(std::move(line));
  }
  return t;
}

// The paper's shape: a row per cell without `group_by`, a column per value
// of it, each cell the row's headline.
Table PivotView(const ResultsTable& results, const std::string& group_by) {
  const ResultsPivot pivot = PivotOf(results, group_by);
  const size_t headline = *results.ColumnIndex(results.headline);
  Table t;
  t.header = {"cell"};
  for (const std::string& c : pivot.columns) t.header.push_back(c);
  for (const ResultsPivot::Row& row : pivot.rows) {
    std::vector<std::string> cells = {row.label};
    for (int i : row.cells) {
      cells.push_back(i < 0 ? "" : TextOf(results.rows[i][headline], false));
    }
    t.rows.push_back(std::move(cells));
  }
  return t;
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
                 "Tables with a headline (train's): the grid key whose values "
                 "become the columns (default: the kind's, train's kernel)");
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
    absl::StatusOr<SweepResults> all =
        GetResultsTable(f->c, f->sweep, !f->per_seed);
    if (!all.ok()) return all.status();
    const ResultsTable& table = all->table;
    if (f->format == "json") {
      PrintJson(ResultRecordsJson(table));
      return absl::OkStatus();
    }
    if (f->format == "csv") {
      std::cout << RenderCsv(FlatTable(table, /*precise=*/true));
      return absl::OkStatus();
    }
    const bool pivot = table.ColumnIndex(table.headline).has_value();
    const std::string group_by =
        f->group_by.empty() ? table.group_by : f->group_by;
    PrintIn(f->format, pivot ? PivotView(table, group_by)
                             : FlatTable(table, /*precise=*/false));
    if (f->format == "table") {
      std::cout << all->done << " of " << all->jobs << " jobs done"
                << (table.note.empty() ? "" : "; ") << table.note << "\n";
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
       "Results table of a sweep, as its kind makes it (table, csv, json, "
       "markdown)",
       DefineResults},
  };
}

}  // namespace tailsweep::cli
