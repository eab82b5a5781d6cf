// `tailsweep export`: a sweep's jobs, results or metric points as one flat
// table (cli/exports.h), to stdout or a file written whole or not at all;
// `tailsweep snapshot`: a consistent copy of one sweep's part of a
// coordinator's database file, made by tailsweep-snapshot
// (cli/snapshot_main.cc).

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/connection.h"
#include "cli/exports.h"
#include "cli/lab_handover.h"
#include "cli/messages.h"
#include "cli/output.h"
#include "cli/pages.h"
#include "cli/snapshot_options.h"

namespace tailsweep::cli {
namespace {

// Where the rows go: stdout, or FILE through FILE.partial renamed at the
// end (an interrupted export leaves no half file under FILE).
class Sink {
 public:
  explicit Sink(std::string path) : path_(std::move(path)) {}
  absl::Status Open() {
    if (path_.empty()) return absl::OkStatus();
    file_.open(path_ + ".partial", std::ios::binary | std::ios::trunc);
    if (!file_) {
      return absl::InvalidArgumentError(
          absl::StrCat("--out ", path_, ": cannot write ", path_, ".partial"));
    }
    return absl::OkStatus();
  }
  void Write(const std::string& text) {
    (path_.empty() ? std::cout : file_) << text;
  }
  absl::Status Close() {
    if (path_.empty()) {
      std::cout.flush();
      return absl::OkStatus();
    }
    file_.close();
    std::error_code ec;
    if (!file_) {
      std::filesystem::remove(path_ + ".partial", ec);
      return absl::InternalError(
          absl::StrCat("--out ", path_, ": write failed"));
    }
    std::filesystem::rename(path_ + ".partial", path_, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("--out ", path_, ": ", ec.message()));
    }
    return absl::OkStatus();
  }

 private:
  std::string path_;
  std::ofstream file_;
};

std::string Render(const FlatTable& t, const std::string& format, bool header) {
  return format == "csv" ? t.Csv(header) : t.JsonLines();
}

RunFn DefineExport(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep, what = "results", format = "csv", out;
    std::vector<std::string> metrics;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  app.add_option("--what", f->what,
                 "jobs (one row per job), results (one per done job; tails: "
                 "per testbed row) or metrics (one per stored point)")
      ->check(CLI::IsMember({"jobs", "results", "metrics"}))
      ->capture_default_str();
  AddFormat(app, &f->format, {"csv", "jsonl"});
  app.add_option("--out", f->out, "Write to FILE (default: stdout)");
  app.add_option("--metric", f->metrics,
                 "With --what metrics: only this metric, repeatable "
                 "(default: all)");
  return [f]() -> absl::Status {
    absl::StatusOr<std::vector<v1::JobInfo>> jobs =
        ListAllJobs(f->c, f->sweep, "");
    if (!jobs.ok()) return jobs.status();
    Sink sink(f->out);
    if (absl::Status s = sink.Open(); !s.ok()) return s;
    if (f->what == "jobs") {
      sink.Write(Render(JobsExport(*jobs), f->format, true));
    } else if (f->what == "results") {
      absl::StatusOr<FlatTable> t = ResultsExport(*jobs);
      if (!t.ok()) return t.status();
      sink.Write(Render(*t, f->format, true));
    } else {
      // A job at a time: a large sweep's points never sit in memory at
      // once. Every job of a sweep has the same grid keys: the columns.
      Progress progress("export", static_cast<int64_t>(jobs->size()));
      bool header = true;
      int64_t done = 0;
      for (const v1::JobInfo& job : *jobs) {
        absl::StatusOr<std::vector<v1::MetricPoint>> points =
            GetAllMetrics(f->c, job.job_id(), f->metrics);
        if (!points.ok()) return points.status();
        FlatTable t;
        AddMetricsExport(job, *points, &t);
        if (t.rows() > 0) {
          sink.Write(Render(t, f->format, header));
          header = false;
        }
        progress.Update(++done, "jobs");
      }
    }
    return sink.Close();
  };
}

RunFn DefineSnapshot(CLI::App& app) {
  auto f = std::make_shared<SnapshotFlags>();
  AddSnapshotOptions(app, f.get());
  // Run by tailsweep-snapshot (lab_handover.h): this executable does not
  // link the coordinator's store.
  return [f]() -> absl::Status {
    return ExecTool(ToolExecutable(kSnapshotExecutableName), f->Arguments(),
                    "`snapshot`", kSnapshotExecutableName);
  };
}

}  // namespace

std::vector<Command> ExportCommands() {
  return {
      {"export",
       "A sweep's jobs, results or metric points as a flat table (csv, "
       "jsonl): a column per parameter and per result field, for pandas",
       DefineExport},
      {"snapshot", kSnapshotHelp, DefineSnapshot},
  };
}

}  // namespace tailsweep::cli
