#ifndef TAILSWEEP_CORE_SCHEMA_JOB_STATE_H_
#define TAILSWEEP_CORE_SCHEMA_JOB_STATE_H_

// Where a job is in its life (system.md, "Jobs"): queued, leased to a
// worker, done, failed for good, or cancelled. The names are the
// database's jobs.state column, the proto's state strings and counts, the
// CLI's `--state` values and the report's counts: spelled here only, in
// the order tables show them. A new state is added to the enum and the
// table in job_state.cc (and to the places that count states by field,
// proto's SweepCounts). Torch-free.

#include <array>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace tailsweep {

enum class JobState { kQueued, kLeased, kDone, kFailed, kCancelled };

inline constexpr std::array<JobState, 5> kJobStates = {
    JobState::kQueued, JobState::kLeased, JobState::kDone, JobState::kFailed,
    JobState::kCancelled};

// "queued", "leased", "done", "failed" or "cancelled".
absl::string_view JobStateName(JobState state);
// The state named `name`; nullopt for any other text.
std::optional<JobState> ParseJobState(absl::string_view name);
// "queued, leased, done, failed, cancelled": what an error says is allowed.
std::string JobStateNames();

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_JOB_STATE_H_
