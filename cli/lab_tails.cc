// `tailsweep lab tails`: the tail-sensitivity testbed (science.md 7).

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/render.h"
#include "core/number_text.h"
#include "core/point_csv.h"
#include "core/schema/file_util.h"
#include "core/schema/job_protocol.h"
#include "core/schema/job_result.h"
#include "core/schema/tails_kind.h"
#include "core/tail_testbed.h"
#include "core/tails_job.h"

namespace tailsweep::cli {
namespace {

// "a,b,c" into numbers; `flag` names the option in errors.
template <typename T>
absl::StatusOr<std::vector<T>> ParseList(const std::string& flag,
                                         const std::string& text) {
  std::vector<T> out;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    T value;
    bool ok;
    if constexpr (std::is_integral_v<T>) {
      ok = absl::SimpleAtoi(item, &value);
    } else {
      ok = absl::SimpleAtod(item, &value);
    }
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": '", item, "' is not a ",
                       std::is_integral_v<T> ? "whole number" : "number",
                       "; expected a comma-separated list"));
    }
    out.push_back(value);
  }
  return out;
}

// SIGTERM (preemption) or SIGUSR1 (Slurm's early warning): a tails job keeps
// nothing worth saving midway, so it stops at once with the job protocol's
// "stopped" status, and the worker gives the lease back instead of counting
// a failure.
void ExitStoppedOnSignal(int) {
  constexpr char kLine[] = "tails: stopped on SIGTERM or SIGUSR1\n";
  [[maybe_unused]] const ssize_t n =
      write(STDERR_FILENO, kLine, sizeof(kLine) - 1);
  _exit(kExitStopped);
}

}  // namespace

Command TailsCommand() {
  return {
      kTailsKindName,
      "Tail-sensitivity testbed: empirical ED and W2 of spliced Pareto "
      "candidates, in noise units",
      [](CLI::App& app) -> RunFn {
        struct Flags {
          std::string grid = "1.1:2.5:0.1";
          std::string seams = "0.9,0.95,0.99";
          std::string budgets = "1024,4096,16384,65536,262144";
          int64_t trials = 20;
          uint64_t seed = 0;
          double reference = 1.5;
          Format format = Format::kText;
          std::string out_dir;
        };
        auto f = std::make_shared<Flags>();
        app.add_option("--index-grid", f->grid,
                       "Candidate indices: START:STOP:STEP or a list; must "
                       "contain the reference index")
            ->capture_default_str();
        app.add_option("--seams", f->seams, "Seam quantiles q0 in (0, 1)")
            ->capture_default_str();
        app.add_option("--budgets", f->budgets, "Sample sizes N (>= 2)")
            ->capture_default_str();
        app.add_option("--trials", f->trials, "Trials per budget (>= 2)")
            ->capture_default_str();
        app.add_option("--seed", f->seed, "Random seed")->capture_default_str();
        app.add_option("--reference-index", f->reference,
                       "Reference tail index a*")
            ->capture_default_str();
        AddFormatOption(app, &f->format);
        app.add_option("--out-dir", f->out_dir,
                       "Also write the rows as DIR/result.json (the job "
                       "protocol's result file; DIR must exist)");
        return [f]() -> absl::Status {
          std::signal(SIGTERM, ExitStoppedOnSignal);
          std::signal(SIGUSR1, ExitStoppedOnSignal);
          TailsConfig config;
          absl::StatusOr<std::vector<double>> grid =
              ParseIndexGrid("--index-grid", f->grid);
          if (!grid.ok()) return grid.status();
          absl::StatusOr<std::vector<double>> seams =
              ParseList<double>("--seams", f->seams);
          if (!seams.ok()) return seams.status();
          absl::StatusOr<std::vector<int64_t>> budgets =
              ParseList<int64_t>("--budgets", f->budgets);
          if (!budgets.ok()) return budgets.status();
          config.indices = *grid;
          config.seams = *seams;
          config.budgets = *budgets;
          config.trials = f->trials;
          config.seed = f->seed;
          config.reference_index = f->reference;
          Progress progress("tails", f->trials * config.budgets.size());
          config.progress = [&](int64_t done, int64_t) {
            progress.Update(done, "trials");
          };
          absl::StatusOr<std::vector<TailsRow>> rows = RunTailTestbed(config);
          if (!rows.ok()) return rows.status();
          const std::string json = TailsResultJson(*rows);
          if (!f->out_dir.empty()) {
            // The job protocol's result file (core/schema/job_protocol.h).
            if (absl::Status s = WriteFileAtomic(
                    (std::filesystem::path(f->out_dir) / kResultFileName)
                        .string(),
                    json + "\n");
                !s.ok()) {
              return s;
            }
          }
          if (f->format == Format::kJson) {
            std::cout << json << "\n";
          } else {
            std::cout << RenderText(TailsTable(*rows));
          }
          return absl::OkStatus();
        };
      }};
}

}  // namespace tailsweep::cli
