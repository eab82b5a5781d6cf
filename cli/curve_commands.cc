// `tailsweep curves`: a job's (or a sweep's) stored
// metric series.

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/connection.h"
#include "cli/messages.h"
#include "cli/output.h"
#include "cli/pages.h"
#include "cli/render.h"
#include "core/number_text.h"
#include "core/schema/json_number.h"

namespace tailsweep::cli {
namespace {

using nlohmann::json;

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
    absl::StatusOr<std::vector<v1::JobInfo>> jobs =
        ListAllJobs(f->c, f->target, "");
    if (jobs.ok()) {
      for (const auto& j : *jobs) {
        targets.push_back({j.job_id(), CellText(j.cell())});
      }
    } else if (absl::IsNotFound(jobs.status()) ||
               absl::IsInvalidArgument(jobs.status())) {
      v1::GetJobLogRequest find;
      find.set_job(f->target);
      v1::GetJobLogResponse job;
      const absl::Status found =
          f->c.Call(&CoordinatorApi::GetJobLog, find, &job);
      if (absl::IsNotFound(found) || absl::IsInvalidArgument(found)) {
        return absl::NotFoundError(absl::StrCat(
            "'", f->target,
            "' is neither a sweep nor a job id (see tailsweep status, "
            "tailsweep jobs SWEEP)"));
      }
      if (!found.ok()) return found;
      targets.push_back({job.job_id(), ""});
    } else {
      return jobs.status();
    }
    json doc = json::array();
    Table t{{"job", "cell", "metric", "step", "value"}, {}};
    for (const Target& target : targets) {
      absl::StatusOr<std::vector<v1::MetricPoint>> points =
          GetAllMetrics(f->c, target.job_id, f->metrics);
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

}  // namespace

std::vector<Command> CurveCommands() {
  return {
      {"curves",
       "Metric series of a job or of every job of a sweep (CSV, JSON)",
       DefineCurves},
  };
}

}  // namespace tailsweep::cli
