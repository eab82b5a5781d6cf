#ifndef TAILSWEEP_CLI_LAB_HANDOVER_H_
#define TAILSWEEP_CLI_LAB_HANDOVER_H_

// `tailsweep lab ...` runs in tailsweep-lab, the executable that links
// LibTorch, as `git NAME` runs git-NAME: tailsweep itself, which login nodes
// and service hosts run, needs no LibTorch. tailsweep-lab takes the same
// command line (cli/lab_main.cc), so a worker may run its jobs with either.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace tailsweep::cli {

inline constexpr char kLabExecutableName[] = "tailsweep-lab";

// The tailsweep-lab to run: the one next to this executable when it is
// there, else the bare name (exec looks it up in PATH).
std::string LabExecutable();

// When the first command word of `args` (argv without argv[0]) is `lab`:
// tailsweep-lab's arguments, `[--threads N] lab WORDS...`: the words after
// `lab` unchanged, and --threads if it was given before `lab` (the other
// top-level options are the service commands'). `takes_value(word)` says
// whether a top-level option word (e.g. "--coordinator") consumes the next
// word. nullopt when the command is not `lab` (or there is none).
std::optional<std::vector<std::string>> LabArguments(
    const std::vector<std::string>& args,
    const std::function<bool(const std::string&)>& takes_value);

// Replaces this process by `executable` with `args` (execv, or execvp for a
// bare name). Returns only when that failed, with why and what to do.
absl::Status ExecLab(const std::string& executable,
                     const std::vector<std::string>& args);

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_LAB_HANDOVER_H_
