// `tailsweep report SWEEP --out DIR`: the sweep's report document
// (report/report_data.h) drawn by the report page (report/page.h), written
// as DIR/report.html: one file that opens offline. With --images, headless
// chromium opens it in its export mode (report.js) and every figure is
// written as DIR/images/FIGURE.png, drawn by the same code as the page.

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/command.h"
#include "cli/connection.h"
#include "cli/output.h"
#include "cli/pages.h"
#include "core/schema/file_util.h"
#include "process/child_process.h"
#include "report/page.h"
#include "report/report_data.h"

namespace tailsweep::cli {
namespace {

// Runs chromium on `html`'s export mode and writes each figure it lists
// into `dir`. The number written, or why not.
absl::StatusOr<int> ExportImages(const std::string& chromium,
                                 const std::filesystem::path& html,
                                 const std::filesystem::path& dir) {
  if (!std::filesystem::exists(chromium)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--images needs chromium at ", chromium,
        " (Debian: apt-get install chromium; or give --chromium PATH)"));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot make ", dir.string(), ": ", ec.message()));
  }
  const std::string profile = (dir / ".chromium-profile").string();
  const std::string out = (dir / ".dom.html").string();
  const std::string err = (dir / ".chromium.log").string();
  absl::StatusOr<ChildProcess> child = ChildProcess::Start(
      {chromium, "--headless", "--no-sandbox", "--disable-gpu",
       "--disable-quic", "--no-first-run", "--disable-background-networking",
       "--disable-component-update", "--disable-sync",
       "--user-data-dir=" + profile, "--virtual-time-budget=20000",
       "--dump-dom",
       "file://" + std::filesystem::absolute(html).string() + "#export-images"},
      {}, out, err);
  if (!child.ok()) return child.status();
  std::optional<int> code;
  for (int waited = 0; !(code = child->Poll()) && waited < 120000;
       waited += 50) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!code) {
    child->Signal(SIGKILL);
    while (!child->Poll()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return absl::DeadlineExceededError("chromium took over 120 s; see " + err);
  }
  std::filesystem::remove_all(profile, ec);
  if (*code == 0) std::filesystem::remove(err, ec);
  absl::StatusOr<std::string> dom = ReadFile(out);
  std::filesystem::remove(out, ec);
  if (*code != 0 || !dom.ok()) {
    return absl::InternalError(
        absl::StrCat("chromium exited with ", *code, "; see ", err));
  }
  const std::string kStart = "<pre id=\"tailsweep-images\">";
  const size_t begin = dom->rfind(kStart);  // the last element of body
  const size_t end = dom->find("</pre>", begin);
  if (begin == std::string::npos || end == std::string::npos) {
    return absl::InternalError("chromium drew no figures; see " + err);
  }
  const std::string list =
      dom->substr(begin + kStart.size(), end - begin - kStart.size());
  int written = 0;
  for (absl::string_view line : absl::StrSplit(list, '\n', absl::SkipEmpty())) {
    const size_t tab = line.find('\t');
    constexpr absl::string_view kPrefix = "data:image/png;base64,";
    if (tab == absl::string_view::npos) continue;
    const std::string id(line.substr(0, tab));
    absl::string_view data = line.substr(tab + 1);
    std::string png;
    // Figure ids are the page's own ("loss-0", "cloud-1-0"): no paths.
    if (id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_.-") !=
            std::string::npos ||
        !absl::ConsumePrefix(&data, kPrefix) ||
        !absl::Base64Unescape(data, &png)) {
      return absl::InternalError(
          "chromium listed a figure it could not draw: " + id);
    }
    if (absl::Status s = WriteFileAtomic((dir / (id + ".png")).string(), png);
        !s.ok()) {
      return s;
    }
    ++written;
  }
  return written;
}

RunFn DefineReport(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep, out, group_by, chromium = "/usr/bin/chromium";
    int points = 300;
    int64_t artifact_mib = 20;
    bool images = false;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  app.add_option("--out", f->out,
                 "Directory to write report.html into (made if missing)")
      ->required();
  app.add_option("--group-by", f->group_by,
                 "Tables with a headline (train's): the grid key whose values "
                 "are the pivot's columns (default: the kind's, train's "
                 "kernel)");
  app.add_option("--points", f->points,
                 "Points per loss or spread-ratio curve (downsampled by the "
                 "coordinator, keeping each stretch's extremes)")
      ->check(CLI::Range(2, 10000))
      ->capture_default_str();
  app.add_option("--artifact-images-mib", f->artifact_mib,
                 "Image artifacts (PNG, JPEG, GIF, WebP; the spec's "
                 "`artifacts:`) put into the file beside each job's curves, "
                 "in MiB in all; those past it are named only (0: none)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app.add_flag("--images", f->images,
               "Also write every figure as DIR/images/FIGURE.png (drawn by "
               "headless chromium from the report itself)");
  app.add_option("--chromium", f->chromium, "The chromium that draws --images")
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
    options.artifact_image_bytes = f->artifact_mib << 20;
    options.now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    std::unique_ptr<Progress> progress;
    options.progress = [&](int64_t done, int64_t total) {
      if (!progress) progress = std::make_unique<Progress>("report", total);
      progress->Update(done, "jobs");
    };
    absl::StatusOr<const CoordinatorApi*> api = f->c.Api();
    if (!api.ok()) return api.status();
    absl::StatusOr<std::string> doc = ReportJson(**api, f->sweep, options);
    if (!doc.ok()) return doc.status();
    PageInput page;
    page.title = absl::StrCat("tailsweep: ", f->sweep);
    page.report_json = std::move(*doc);
    const std::string path = (std::filesystem::path(f->out) / "report.html");
    const std::string html = ReportPage(page);
    if (absl::Status s = WriteFileAtomic(path, html); !s.ok()) return s;
    std::cout << "wrote " << path << " (" << (html.size() + 1023) / 1024
              << " KiB; opens offline in any browser)\n";
    if (f->images) {
      const std::filesystem::path dir =
          std::filesystem::path(f->out) / "images";
      absl::StatusOr<int> n = ExportImages(f->chromium, path, dir);
      if (!n.ok()) return n.status();
      std::cout << "wrote " << *n << " figures as " << dir.string()
                << "/FIGURE.png\n";
    }
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
