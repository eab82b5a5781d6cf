#ifndef TAILSWEEP_CLI_LAB_HANDOVER_H_
#define TAILSWEEP_CLI_LAB_HANDOVER_H_

// Commands that `tailsweep` hands to an executable of their own, as `git
// NAME` runs git-NAME, so that tailsweep itself (which login nodes and
// service hosts run) links neither LibTorch nor the coordinator's store:
// - `tailsweep lab ...` runs in tailsweep-lab, the executable that links
//   LibTorch. It takes the same command line (cli/lab_main.cc), so a worker
//   may run its jobs with either;
// - `tailsweep snapshot ...` runs in tailsweep-snapshot (cli/snapshot_main.cc),
//   which reads the coordinator's database file;
// - `tailsweep optimize ...` runs `python3 -m tailsweep.optimize` (the Optuna
//   driver of the Python package, python/tailsweep/optimize.py).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace tailsweep::cli {

inline constexpr char kLabExecutableName[] = "tailsweep-lab";
inline constexpr char kSnapshotExecutableName[] = "tailsweep-snapshot";

// The executable `name` to run: the one next to this executable when it is
// there, else the bare name (exec looks it up in PATH).
std::string ToolExecutable(const char* name);
inline std::string LabExecutable() {
  return ToolExecutable(kLabExecutableName);
}

// When the first command word of `args` (argv without argv[0]) is `lab`:
// tailsweep-lab's arguments, `[--threads N] lab WORDS...`: the words after
// `lab` unchanged, and --threads if it was given before `lab` (the other
// top-level options are the service commands'). `takes_value(word)` says
// whether a top-level option word (e.g. "--coordinator") consumes the next
// word. nullopt when the command is not `lab` (or there is none).
std::optional<std::vector<std::string>> LabArguments(
    const std::vector<std::string>& args,
    const std::function<bool(const std::string&)>& takes_value);

// When the first command word of `args` is `optimize`: the words after it,
// unchanged (the driver's own command line); nullopt otherwise.
std::optional<std::vector<std::string>> OptimizeArguments(
    const std::vector<std::string>& args,
    const std::function<bool(const std::string&)>& takes_value);
// Replaces this process by `python3 -m tailsweep.optimize ARGS...`, with
// the package's folder first on PYTHONPATH (share/tailsweep/python of an
// install, python/ of a source tree); returns only when that failed.
absl::Status ExecOptimize(const std::vector<std::string>& args);

// Replaces this process by `executable` with `args` (execv, or execvp for a
// bare name). Returns only when that failed, with why and what to do:
// `command` needs `target` (the CMake target that builds it).
absl::Status ExecTool(const std::string& executable,
                      const std::vector<std::string>& args,
                      const std::string& command, const char* target);
inline absl::Status ExecLab(const std::string& executable,
                            const std::vector<std::string>& args) {
  return ExecTool(executable, args, "`lab`",
                  kLabExecutableName);  // the executable with LibTorch
}

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_LAB_HANDOVER_H_
