// The `tailsweep` commands that control a live sweep: priority, pause,
// unpause, tag, note, rm (`optimize` is handed to the Python package:
// cli/lab_handover.h). How a sweep's settings and hours read (status, the
// list) lives here too.

#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "cli/connection.h"
#include "cli/control.h"
#include "cli/output.h"
#include "cli/render.h"
#include "core/number_text.h"
#include "core/schema/disk_space.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_control.h"
#include "proto/coordinator_api.h"

namespace tailsweep::cli {

std::string HoursText(const v1::SweepHours& h) {
  std::vector<std::string> parts;
  if (h.gpu_hours() > 0) {
    parts.push_back(absl::StrFormat("%.2f GPU-h", h.gpu_hours()));
  }
  if (h.cpu_hours() > 0) {
    parts.push_back(absl::StrFormat("%.2f CPU-h", h.cpu_hours()));
  }
  if (parts.empty()) return "0 h";
  std::string out = absl::StrJoin(parts, ", ");
  const double preempted = h.preempted_gpu_hours() + h.preempted_cpu_hours();
  if (preempted > 0) {
    absl::StrAppend(&out,
                    absl::StrFormat(" (%.2f h of it preempted)", preempted));
  }
  return out;
}

std::string StateText(const v1::SweepSettings& s) {
  if (!s.held().empty()) return "held";
  if (s.paused()) return "paused";
  return "-";
}

std::vector<std::string> SettingsLines(const v1::SweepSettings& s,
                                       const v1::SweepHours& h) {
  std::vector<std::string> out;
  if (!s.held().empty()) out.push_back("held: " + EscapeControl(s.held()));
  if (s.paused()) {
    out.push_back(
        "paused: running jobs finish, nothing new is leased "
        "(tailsweep unpause)");
  }
  std::string line = absl::StrCat("priority ", s.priority());
  if (s.max_running() > 0) {
    absl::StrAppend(&line, ", at most ", s.max_running(), " running");
  }
  if (s.timeout_s() > 0) {
    absl::StrAppend(&line, ", timeout ", FormatDouble(s.timeout_s()), " s");
  }
  if (s.max_failures() > 0) {
    absl::StrAppend(&line, ", max_failures ", s.max_failures(), " (",
                    s.failures(), " so far)");
  }
  absl::StrAppend(&line, "; ", HoursText(h));
  out.push_back(line);
  if (!s.tags().empty()) {
    std::vector<std::string> tags;
    std::map<std::string, std::string> sorted(s.tags().begin(), s.tags().end());
    for (const auto& [k, v] : sorted) {
      tags.push_back(EscapeControl(absl::StrCat(k, "=", v)));
    }
    out.push_back("tags: " + absl::StrJoin(tags, " "));
  }
  if (!s.notes().empty()) out.push_back("notes: " + EscapeControl(s.notes()));
  if (!s.stop_rule().empty()) {
    out.push_back("stop rule: " + EscapeControl(s.stop_rule()));
  }
  return out;
}

namespace {

// One UpdateSweep call for SWEEP, then the settings it answers, one line.
absl::Status Update(Connection& c, v1::UpdateSweepRequest req,
                    const std::string& what) {
  v1::UpdateSweepResponse resp;
  TS_RETURN_IF_ERROR(c.Call(&CoordinatorApi::UpdateSweep, req, &resp));
  std::cout << EscapeControl(req.sweep()) << ": " << what << "\n";
  return absl::OkStatus();
}

RunFn DefinePriority(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep;
    int64_t priority = 0;
    std::optional<int64_t> max_running;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  app.add_option("PRIORITY", f->priority,
                 absl::StrCat("Higher leases first: ", kMinPriority, "..",
                              kMaxPriority, " (default of a sweep: 0)"))
      ->required();
  app.add_option("--max-running", f->max_running,
                 "Also: at most this many of its jobs at once (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  return [f]() -> absl::Status {
    TS_RETURN_IF_ERROR(CheckPriority(f->priority));
    v1::UpdateSweepRequest req;
    req.set_sweep(f->sweep);
    req.set_priority(f->priority);
    if (f->max_running) req.set_max_running(*f->max_running);
    return Update(f->c, req, absl::StrCat("priority ", f->priority));
  };
}

RunFn DefinePause(CLI::App& app, bool paused) {
  struct Flags {
    Connection c;
    std::string sweep;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  return [f, paused]() -> absl::Status {
    v1::UpdateSweepRequest req;
    req.set_sweep(f->sweep);
    req.set_paused(paused);
    return Update(f->c, req,
                  paused ? "paused (running jobs finish; nothing new is "
                           "leased until `tailsweep unpause`)"
                         : "unpaused");
  };
}

RunFn DefineTag(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep;
    std::vector<std::string> tags;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  app.add_option("TAGS", f->tags, "KEY=VALUE sets a tag, KEY= removes it")
      ->required();
  return [f]() -> absl::Status {
    v1::UpdateSweepRequest req;
    req.set_sweep(f->sweep);
    for (const std::string& word : f->tags) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos || eq == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tag '", word, "': expected KEY=VALUE (KEY= removes the tag)"));
      }
      const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
      TS_RETURN_IF_ERROR(CheckTag(key, value));
      (*req.mutable_tags())[key] = value;
    }
    return Update(f->c, req,
                  absl::StrCat("tags ", absl::StrJoin(f->tags, " ")));
  };
}

RunFn DefineNote(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep;
    std::string note;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  app.add_option("TEXT", f->note, "The sweep's note (\"\" clears it)")
      ->required();
  return [f]() -> absl::Status {
    if (f->note.size() > kMaxNotesBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("a note holds at most ", kMaxNotesBytes, " bytes (got ",
                       f->note.size(), ")"));
    }
    v1::UpdateSweepRequest req;
    req.set_sweep(f->sweep);
    req.set_notes(f->note);
    return Update(f->c, req, f->note.empty() ? "note cleared" : "note set");
  };
}

RunFn DefineRemove(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep;
    bool force = false;
    bool dry_run = false;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  app.add_flag("--force", f->force,
               "Also while its jobs run: they are stopped (their workers "
               "hear it on their next heartbeat)");
  app.add_flag("--dry-run", f->dry_run,
               "Say what would be removed; remove "
               "nothing");
  return [f]() -> absl::Status {
    v1::RemoveSweepRequest req;
    req.set_sweep(f->sweep);
    req.set_force(f->force);
    req.set_dry_run(f->dry_run);
    v1::RemoveSweepResponse r;
    TS_RETURN_IF_ERROR(f->c.Call(&CoordinatorApi::RemoveSweep, req, &r));
    std::cout << EscapeControl(f->sweep) << ": "
              << (f->dry_run ? "would remove " : "removed ") << r.jobs()
              << " jobs (" << r.running() << " running), " << r.metric_points()
              << " metric points, " << r.checkpoint_files()
              << " checkpoint files (" << Megabytes(r.checkpoint_bytes())
              << ")";
    if (r.shared_jobs() > 0) {
      std::cout << "; " << r.shared_jobs()
                << " jobs other sweeps share are kept";
    }
    std::cout << "\n";
    return absl::OkStatus();
  };
}

}  // namespace

std::vector<Command> ControlCommands() {
  return {
      {"priority", "Set a sweep's priority (and --max-running)",
       DefinePriority},
      {"pause", "Lease nothing new of a sweep; running jobs finish",
       [](CLI::App& app) { return DefinePause(app, true); }},
      {"unpause", "Lease a paused sweep's jobs again",
       [](CLI::App& app) { return DefinePause(app, false); }},
      {"tag", "Set (KEY=VALUE) or remove (KEY=) a sweep's tags", DefineTag},
      {"note", "Set a sweep's note", DefineNote},
      {"rm", "Remove a sweep and what is stored of its jobs", DefineRemove},
  };
}

}  // namespace tailsweep::cli
