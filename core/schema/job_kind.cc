#include "core/schema/job_kind.h"

#include <iterator>

#include "core/schema/name_table.h"

namespace tailsweep {
namespace {

constexpr EnumName<JobKind> kKindNames[] = {{JobKind::kTrain, "train"},
                                            {JobKind::kTails, "tails"},
                                            {JobKind::kCommand, "command"}};
static_assert(std::size(kKindNames) == kJobKinds.size());

}  // namespace

absl::string_view JobKindName(JobKind kind) {
  return NameOf<JobKind>(kKindNames, kind);
}

std::optional<JobKind> ParseJobKind(absl::string_view name) {
  return ValueOf<JobKind>(kKindNames, name);
}

std::string JobKindNames() { return AllNames<JobKind>(kKindNames); }

}  // namespace tailsweep
