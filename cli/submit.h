#ifndef TAILSWEEP_CLI_SUBMIT_H_
#define TAILSWEEP_CLI_SUBMIT_H_

// Submitting a spec file: `tailsweep submit` and `tailsweep slurm up`.

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "cli/connection.h"

namespace tailsweep::cli {

// Parses and expands the spec at `path` here first (its errors need no
// coordinator), then submits it and writes "sweep NAME: N jobs added, M
// already there" to `out`; `name`, when given, receives the sweep's name.
absl::Status SubmitSpecFile(Connection& c, const std::string& path,
                            std::ostream& out, std::string* name = nullptr);

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_SUBMIT_H_
