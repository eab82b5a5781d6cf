#include "core/schema/job_state.h"

#include <iterator>

#include "core/schema/name_table.h"

namespace tailsweep {
namespace {

constexpr EnumName<JobState> kStateNames[] = {
    {JobState::kQueued, "queued"},
    {JobState::kLeased, "leased"},
    {JobState::kDone, "done"},
    {JobState::kFailed, "failed"},
    {JobState::kCancelled, "cancelled"}};
static_assert(std::size(kStateNames) == kJobStates.size());

}  // namespace

absl::string_view JobStateName(JobState state) {
  return NameOf<JobState>(kStateNames, state);
}

std::optional<JobState> ParseJobState(absl::string_view name) {
  return ValueOf<JobState>(kStateNames, name);
}

std::string JobStateNames() { return AllNames<JobState>(kStateNames); }

}  // namespace tailsweep
