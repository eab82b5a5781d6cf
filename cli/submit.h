#ifndef TAILSWEEP_CLI_SUBMIT_H_
#define TAILSWEEP_CLI_SUBMIT_H_

// Submitting a spec file: `tailsweep submit` and `tailsweep slurm up`.

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/connection.h"

namespace tailsweep::cli {

// Parses the spec at `path`, applies `overrides` (sweep_spec.h's
// ApplyOverrides) and expands it here first (its errors need no
// coordinator), then submits it and writes "sweep NAME: N jobs added, M
// already there" to `out`; `name`, when given, receives the sweep's name.
// Without overrides the file's text goes as it is (comments kept); with
// them, the changed spec, which records them.
absl::Status SubmitSpecFile(Connection& c, const std::string& path,
                            std::ostream& out, std::string* name = nullptr,
                            const std::vector<std::string>& overrides = {});

// `tailsweep submit --dry-run`: the same checks and expansion without a
// coordinator; writes "sweep NAME: N jobs (dry run, nothing submitted)",
// for a boundary sweep that these are its first round, and, with
// overrides, the spec as it would be submitted. With `print_commands`:
// each job's argv (shell-quoted), working directory and the environment it
// adds, as a worker would start it (WORK stands for the worker's
// --work-dir, as /WORK).
absl::Status DryRunSpecFile(const std::string& path, std::ostream& out,
                            const std::vector<std::string>& overrides = {},
                            bool print_commands = false);

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_SUBMIT_H_
