// tailsweep-snapshot: `tailsweep snapshot`, run in an executable of its own
// (cli/lab_handover.h) because it reads the coordinator's database file
// (coordinator/snapshot.h) and so links the store, which `tailsweep` does
// not. Same command line, output and exit codes as `tailsweep snapshot`.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/command.h"
#include "cli/snapshot_options.h"
#include "coordinator/snapshot.h"

namespace tailsweep::cli {
namespace {

constexpr char kName[] = "tailsweep snapshot";

int Main(int argc, char** argv) {
  CLI::App app{std::string(kName) + ": " + kSnapshotHelp};
  SnapshotFlags f;
  AddSnapshotOptions(app, &f);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "%s: %s (see --help)\n", kName, e.what());
    return 2;
  }
  const absl::Status status = SnapshotSweep(f.db, f.sweep, f.out);
  if (status.ok()) {
    std::cout << "wrote " << f.out << " (sweep " << f.sweep
              << "; query it with sqlite3 or pandas)\n";
  }
  return FinishCommand(kName, status);
}

}  // namespace
}  // namespace tailsweep::cli

int main(int argc, char** argv) { return tailsweep::cli::Main(argc, argv); }
