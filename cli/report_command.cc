// `tailsweep report SWEEP --out DIR`: the sweep's report document
// (report/report_data.h) drawn by the report page (report/page.h), written
// as DIR/report.html: one file that opens offline.

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/connection.h"
#include "cli/output.h"
#include "cli/pages.h"
#include "core/schema/file_util.h"
#include "report/page.h"
#include "report/report_data.h"

namespace tailsweep::cli {
namespace {

RunFn DefineReport(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep, out, group_by = "kernel";
    int points = 300;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  app.add_option("--out", f->out,
                 "Directory to write report.html into (made if missing)")
      ->required();
  app.add_option("--group-by", f->group_by,
                 "Grid key whose values are the table's columns")
      ->capture_default_str();
  app.add_option("--points", f->points,
                 "Points per loss or spread-ratio curve (downsampled by the "
                 "coordinator, keeping each stretch's extremes)")
      ->check(CLI::Range(2, 10000))
      ->capture_default_str();
  return [f]() -> absl::Status {
    std::error_code ec;
    std::filesystem::create_directories(f->out, ec);
    if (ec) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--out ", f->out, ": cannot make the directory: ", ec.message()));
    }
    ReportOptions options;
    options.group_by = f->group_by;
    options.curve_points = f->points;
    options.attention_points = std::max(2, f->points / 3);
    options.now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    std::unique_ptr<Progress> progress;
    options.progress = [&](int64_t done, int64_t total) {
      if (!progress) progress = std::make_unique<Progress>("report", total);
      progress->Update(done, "jobs");
    };
    absl::StatusOr<std::string> doc =
        ReportJson(CallsOf(f->c), f->sweep, options);
    if (!doc.ok()) return doc.status();
    PageInput page;
    page.title = absl::StrCat("tailsweep: ", f->sweep);
    page.report_json = std::move(*doc);
    const std::string path = (std::filesystem::path(f->out) / "report.html");
    const std::string html = ReportPage(page);
    if (absl::Status s = WriteFileAtomic(path, html); !s.ok()) return s;
    std::cout << "wrote " << path << " (" << (html.size() + 1023) / 1024
              << " KiB; opens offline in any browser)\n";
    return absl::OkStatus();
  };
}

}  // namespace

std::vector<Command> ReportCommands() {
  return {{"report",
           "An HTML report of a sweep (results table, curves per cell with "
           "seeds overlaid, attention per layer, the testbed's figure, the "
           "spec): one file that opens offline",
           DefineReport}};
}

}  // namespace tailsweep::cli
