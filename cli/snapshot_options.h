#ifndef TAILSWEEP_CLI_SNAPSHOT_OPTIONS_H_
#define TAILSWEEP_CLI_SNAPSHOT_OPTIONS_H_

// `tailsweep snapshot`'s command line, shared by `tailsweep` (which checks
// it, then hands over: lab_handover.h) and tailsweep-snapshot (which runs
// it: snapshot_main.cc). Header-only.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tailsweep::cli {

inline constexpr char kSnapshotHelp[] =
    "A consistent copy of one sweep out of the coordinator's database file "
    "(SQLite VACUUM INTO), to analyse away from the live one";

struct SnapshotFlags {
  std::string sweep, db, out;
  // The command line that gives these flags again.
  std::vector<std::string> Arguments() const {
    return {sweep, "--db", db, "--out", out};
  }
};

inline void AddSnapshotOptions(CLI::App& app, SnapshotFlags* f) {
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  app.add_option("--db", f->db,
                 "The coordinator's database file (its --db); read, never "
                 "written, while the coordinator runs on")
      ->required();
  app.add_option("--out", f->out, "The copy to write (must not exist)")
      ->required();
}

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_SNAPSHOT_OPTIONS_H_
