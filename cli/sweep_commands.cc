// The service commands of `tailsweep` that act on sweeps: submit, status,
// watch, cancel, resume, workers (result_commands.cc reads what jobs
// produced). Each talks to the coordinator over gRPC with a deadline
// (cli/connection.h).

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "cli/connection.h"
#include "cli/control.h"
#include "cli/output.h"
#include "cli/render.h"
#include "cli/running_jobs.h"
#include "cli/submit.h"
#include "core/number_text.h"
#include "core/schema/sweep_spec.h"
#include "proto/client_channel.h"
#include "proto/coordinator_api.h"
#include "proto/wire_records.h"
#include "report/result_json.h"

namespace tailsweep::cli {
namespace {

using nlohmann::json;

absl::StatusOr<v1::GetSweepStatusResponse> GetStatus(Connection& c,
                                                     const std::string& sweep) {
  v1::GetSweepStatusRequest req;
  req.set_sweep(sweep);
  v1::GetSweepStatusResponse resp;
  if (absl::Status s = c.Call(&CoordinatorApi::GetSweepStatus, req, &resp);
      !s.ok()) {
    return s;
  }
  return resp;
}

RunFn DefineSubmit(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string spec;
    std::vector<std::string> overrides;
    bool dry_run = false;
    bool print_commands = false;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SPEC", f->spec, "Sweep spec (YAML)")->required();
  app.add_flag("--dry-run", f->dry_run,
               "Check the spec and its overrides and count its jobs here; "
               "contacts no coordinator");
  app.add_flag("--print-commands", f->print_commands,
               "With --dry-run: each job's exact argv, working directory "
               "and environment, as a worker would start it");
  app.add_option("OVERRIDES", f->overrides,
                 "KEY=VALUE fixes a key, KEY=V1,V2 (or KEY=[V1,...]) makes it "
                 "a grid axis, name=NAME renames the sweep; the sweep "
                 "records them (sweeps/README.md)");
  return [f]() -> absl::Status {
    if (f->print_commands && !f->dry_run) {
      return absl::InvalidArgumentError(
          "--print-commands goes with --dry-run (nothing is submitted)");
    }
    if (f->dry_run) {
      return DryRunSpecFile(f->spec, std::cout, f->overrides,
                            f->print_commands);
    }
    return SubmitSpecFile(f->c, f->spec, std::cout, nullptr, f->overrides);
  };
}

// `status` without a sweep: every sweep with its counts.
// A coordinator that cannot write (a full disk) says so first, on stdout
// with the counts it goes with, or on stderr beside a JSON document.
void PrintCoordinatorProblem(const std::string& problem) {
  if (!problem.empty())
    std::cout << "warning: " << EscapeControl(problem) << "\n";
}
void WarnCoordinatorProblem(const std::string& problem) {
  if (!problem.empty())
    std::cerr << "warning: " << EscapeControl(problem) << "\n";
}

absl::Status PrintSweeps(Connection& c, Format format) {
  v1::ListSweepsResponse resp;
  if (absl::Status s =
          c.Call(&CoordinatorApi::ListSweeps, v1::ListSweepsRequest(), &resp);
      !s.ok()) {
    return s;
  }
  if (format == Format::kJson) {
    json doc = json::array();
    for (const v1::SweepInfo& w : resp.sweeps()) {
      json row = {{"name", w.name()},
                  {"kind", w.kind()},
                  {"created_ms", w.created_ms()}};
      row.update(CountsJson(FromProto(w.counts())));
      row.update(SweepSettingsJson(w.counts().settings(), w.counts().hours()));
      doc.push_back(row);
    }
    // The array stays the document (scripts index it); a problem of the
    // coordinator goes to stderr.
    WarnCoordinatorProblem(resp.coordinator_problem());
    PrintJson(doc);
    return absl::OkStatus();
  }
  PrintCoordinatorProblem(resp.coordinator_problem());
  Table t{{"sweep", "kind", "jobs", "done", "running", "queued", "failed",
           "cancelled", "priority", "state", "hours"},
          {}};
  for (const v1::SweepInfo& w : resp.sweeps()) {
    const JobCounts n = FromProto(w.counts());
    t.rows.push_back({w.name(), w.kind(), absl::StrCat(n.total()),
                      absl::StrCat(n.Of(JobState::kDone)),
                      absl::StrCat(n.Of(JobState::kLeased)),
                      absl::StrCat(n.Of(JobState::kQueued)),
                      absl::StrCat(n.Of(JobState::kFailed)),
                      absl::StrCat(n.Of(JobState::kCancelled)),
                      absl::StrCat(w.counts().settings().priority()),
                      StateText(w.counts().settings()),
                      HoursText(w.counts().hours())});
  }
  if (t.rows.empty()) {
    std::cout << "no sweeps yet; submit one with tailsweep submit SPEC.yaml\n";
  } else {
    std::cout << RenderText(t);
  }
  return absl::OkStatus();
}

RunFn DefineStatus(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep;
    Format format = Format::kText;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SWEEP", f->sweep, "Sweep name (default: every sweep)");
  AddFormatOption(app, &f->format);
  return [f]() -> absl::Status {
    if (f->sweep.empty()) return PrintSweeps(f->c, f->format);
    absl::StatusOr<v1::GetSweepStatusResponse> s = GetStatus(f->c, f->sweep);
    if (!s.ok()) return s.status();
    if (f->format == Format::kJson) {
      json doc = CountsJson(FromProto(*s));
      doc["runs_stopped_early"] = s->runs_stopped_early();
      doc["steps_saved"] = s->steps_saved();
      doc.update(SweepSettingsJson(s->settings(), s->hours()));
      if (!s->coordinator_problem().empty()) {
        doc["coordinator_problem"] = s->coordinator_problem();
      }
      PrintJson(doc);
    } else {
      PrintCoordinatorProblem(s->coordinator_problem());
      const JobCounts n = FromProto(*s);
      std::cout << absl::StrFormat(
          "%s: %d done, %d running, %d queued, %d failed, %d cancelled\n",
          EscapeControl(f->sweep), n.Of(JobState::kDone),
          n.Of(JobState::kLeased), n.Of(JobState::kQueued),
          n.Of(JobState::kFailed), n.Of(JobState::kCancelled));
      if (s->runs_stopped_early() > 0) {
        std::cout << absl::StrFormat(
            "%d run(s) stopped early; %d training steps saved\n",
            s->runs_stopped_early(), s->steps_saved());
      }
      for (const std::string& line : SettingsLines(s->settings(), s->hours())) {
        std::cout << line << "\n";
      }
    }
    return absl::OkStatus();
  };
}

RunFn DefineWatch(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep;
    double interval = 1.0;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  app.add_option("--interval", f->interval, "Seconds between updates")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return [f]() -> absl::Status {
    // On a terminal, the bar and the running jobs' table are redrawn in
    // place; elsewhere (a log) both are printed every few seconds and at
    // the end.
    const bool tty = isatty(STDERR_FILENO) != 0;
    std::unique_ptr<Progress> bar;
    RunningJobs running;
    int frame_lines = 0;
    auto last_print = std::chrono::steady_clock::time_point();
    while (true) {
      absl::StatusOr<v1::GetSweepStatusResponse> s = GetStatus(f->c, f->sweep);
      if (!s.ok()) return s.status();
      const JobCounts n = FromProto(*s);
      const int64_t total = n.total();
      const int64_t finished = n.Of(JobState::kDone) + n.Of(JobState::kFailed) +
                               n.Of(JobState::kCancelled);
      if (!bar) {
        bar = std::make_unique<Progress>(EscapeControl(f->sweep), total);
      }
      const bool over = n.Of(JobState::kQueued) + n.Of(JobState::kLeased) == 0;
      if (!over) {
        if (absl::Status r = running.Refresh(f->c, f->sweep); !r.ok()) return r;
      }
      const auto now = std::chrono::steady_clock::now();
      if (tty || over || now - last_print >= std::chrono::seconds(5)) {
        last_print = now;
        std::string frame =
            bar->Line(finished, absl::StrFormat("done %d, running %d, queued "
                                                "%d, failed %d",
                                                n.Of(JobState::kDone),
                                                n.Of(JobState::kLeased),
                                                n.Of(JobState::kQueued),
                                                n.Of(JobState::kFailed))) +
            "\n";
        if (!s->coordinator_problem().empty()) {
          frame += "warning: " + EscapeControl(s->coordinator_problem()) + "\n";
        }
        if (!over) frame += RenderText(running.View(now));
        if (tty && frame_lines > 0) {
          // Up to the previous frame's first line, and clear below.
          std::fprintf(stderr, "\033[%dA\r\033[J", frame_lines);
        }
        std::fputs(frame.c_str(), stderr);
        std::fflush(stderr);
        frame_lines =
            static_cast<int>(std::count(frame.begin(), frame.end(), '\n'));
      }
      if (over) {
        if (n.Of(JobState::kFailed) > 0) {
          return absl::AbortedError(absl::StrCat(
              n.Of(JobState::kFailed), " job(s) failed; see tailsweep jobs ",
              EscapeControl(f->sweep), " --state failed"));
        }
        return absl::OkStatus();
      }
      std::this_thread::sleep_for(
          std::chrono::milliseconds(static_cast<int64_t>(f->interval * 1000)));
    }
  };
}

// A command that acts on one sweep by name (cancel, resume): `call` makes
// the RPC, `say` prints its answer.
template <typename Request, typename Response>
RunFn DefineSweepAction(
    CLI::App& app,
    absl::Status (CoordinatorApi::*call)(const Request&, Response*) const,
    std::function<void(const std::string&, const Response&)> say) {
  auto c = std::make_shared<Connection>();
  auto sweep = std::make_shared<std::string>();
  app.add_option("SWEEP", *sweep, "Sweep name")->required();
  return [c, sweep, call, say]() -> absl::Status {
    Request req;
    req.set_sweep(*sweep);
    Response resp;
    if (absl::Status s = c->Call(call, req, &resp); !s.ok()) {
      return s;
    }
    say(*sweep, resp);
    return absl::OkStatus();
  };
}

RunFn DefineCancel(CLI::App& app) {
  return DefineSweepAction<v1::CancelSweepRequest, v1::CancelSweepResponse>(
      app, &CoordinatorApi::CancelSweep,
      [](const std::string& sweep, const v1::CancelSweepResponse& r) {
        std::cout << EscapeControl(sweep) << ": " << r.jobs_cancelled()
                  << " jobs cancelled";
        if (r.jobs_kept_running() > 0) {
          std::cout << " (" << r.jobs_kept_running()
                    << " of them run on for other sweeps that share them)";
        }
        std::cout << "\n";
      });
}

RunFn DefineResume(CLI::App& app) {
  return DefineSweepAction<v1::ResumeSweepRequest, v1::ResumeSweepResponse>(
      app, &CoordinatorApi::ResumeSweep,
      [](const std::string& sweep, const v1::ResumeSweepResponse& r) {
        std::cout << EscapeControl(sweep) << ": " << r.jobs_requeued()
                  << " failed or cancelled jobs requeued\n";
      });
}

RunFn DefineWorkers(CLI::App& app) {
  struct Flags {
    Connection c;
    Format format = Format::kText;
  };
  auto f = std::make_shared<Flags>();
  AddFormatOption(app, &f->format);
  return [f]() -> absl::Status {
    v1::ListWorkersRequest req;
    v1::ListWorkersResponse resp;
    if (absl::Status s = f->c.Call(&CoordinatorApi::ListWorkers, req, &resp);
        !s.ok()) {
      return s;
    }
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    if (f->format == Format::kJson) {
      json doc = json::array();
      for (const auto& w : resp.workers()) {
        doc.push_back({{"worker_id", w.worker_id()},
                       {"last_seen_ms", w.last_seen_ms()},
                       {"jobs_held", w.jobs_held()},
                       {"devices", w.devices()}});
      }
      PrintJson(doc);
      return absl::OkStatus();
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& w : resp.workers()) {
      rows.push_back(
          {w.worker_id(),
           absl::StrFormat("%.1fs ago", (now - w.last_seen_ms()) / 1000.0),
           absl::StrCat(w.jobs_held()),
           // Placement: a cpu worker is leased no job that names "gpus".
           w.devices().empty()    ? "?"
           : w.devices() == "cpu" ? "cpu (no gpus jobs)"
                                  : w.devices()});
    }
    PrintTable({"worker", "last_seen", "jobs_held", "devices"}, rows);
    return absl::OkStatus();
  };
}

}  // namespace

std::vector<Command> SweepCommands() {
  return {
      {"submit", "Submit a sweep spec to the coordinator", DefineSubmit},
      {"status", "Job counts of a sweep, or of every sweep", DefineStatus},
      {"watch", "Live progress of a sweep until it finishes", DefineWatch},
      {"cancel", "Cancel a sweep's queued and running jobs", DefineCancel},
      {"resume",
       "Requeue a sweep's failed and cancelled jobs; release a fail-fast "
       "hold",
       DefineResume},
      {"workers", "Workers seen by the coordinator and the jobs they hold",
       DefineWorkers},
  };
}

}  // namespace tailsweep::cli
