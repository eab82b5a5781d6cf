#ifndef TAILSWEEP_CORE_SCHEMA_SUBMISSION_H_
#define TAILSWEEP_CORE_SCHEMA_SUBMISSION_H_

// A sweep spec made ready to submit, the one way `tailsweep submit` and the
// coordinator's SubmitSweep (for the HTTP API and the Python client) both
// do it: command-line overrides applied (ApplyOverrides), what only the
// spec's folder can tell resolved (a command's workdir and code hash,
// SpecSection::prepare_submit), the grid expanded (ExpandSweep).
//
// And one job added to a live sweep by hand (AddJobs; an Optuna trial).
// Torch-free.

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/schema/sweep_spec.h"

namespace tailsweep {

struct Submission {
  SweepSpec spec;  // spec.text: the text that goes, overrides applied
  std::vector<JobSpec> jobs;
};

// `source` names the spec in errors (its path). `spec_dir`: the folder of the
// spec's file, where a command's relative workdir and `code` are; nullopt when
// that was resolved already (a spec the CLI sends). InvalidArgument as
// ApplyOverrides, ParseSweepSpec and ExpandSweep say; a folder the kind needs
// that is not there names it.
absl::StatusOr<Submission> PrepareSubmission(
    SweepSpec spec, absl::string_view source,
    const std::vector<std::string>& overrides,
    const std::optional<std::string>& spec_dir);

// The job of one cell added to the live sweep `spec` (its fixed values and
// kind): the cell's keys are the kind's job keys (or a command's template
// names), none of them fixed. Its id is the content hash, as the grid's.
// InvalidArgument naming the cell otherwise.
absl::StatusOr<JobSpec> AddedJob(const SweepSpec& spec, const KeyValues& cell);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_SUBMISSION_H_
