#ifndef TAILSWEEP_CORE_SCHEMA_JOB_KIND_H_
#define TAILSWEEP_CORE_SCHEMA_JOB_KIND_H_

// What a job is: `train` (one training run, core/job_config.h), `tails`
// (one tail-estimator experiment, core/tails_job.h) or `command` (any
// program, core/schema/command_job.h). A sweep's jobs are all
// of its kind. The names are the spec's `kind:` values, the database's
// jobs.kind and sweeps.kind columns, the proto's `kind` strings and the
// `tailsweep lab` subcommands: spelled here only. What a kind is (its
// keys, program, result, outcomes) is its registration: job_kinds.h; a
// new kind is its file there, a value here and its name in job_kind.cc.
// Torch-free.

#include <array>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace tailsweep {

enum class JobKind { kTrain, kTails, kCommand };

inline constexpr std::array<JobKind, 3> kJobKinds = {
    JobKind::kTrain, JobKind::kTails, JobKind::kCommand};

// What a worker that names no kinds when it asks for jobs runs (a build
// from before LeaseJobsRequest.kinds): it would fail every job of a later
// kind, so it is leased only these.
inline constexpr std::array<JobKind, 2> kJobKindsOfUnnamedWorkers = {
    JobKind::kTrain, JobKind::kTails};

// "train", "tails" or "command".
absl::string_view JobKindName(JobKind kind);
// The kind named `name`; nullopt for any other text.
std::optional<JobKind> ParseJobKind(absl::string_view name);
// "train, tails, command": what an error message says is allowed.
std::string JobKindNames();

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_JOB_KIND_H_
