#include "core/schema/job_kinds.h"

#include <algorithm>
#include <array>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tailsweep {

// Each kind's file defines its JobKindDef.
const JobKindDef& TrainKindDef();
const JobKindDef& TailsKindDef();
const JobKindDef& CommandKindDef();

namespace {

// The registrations, one line a kind.
using DefOf = const JobKindDef& (*)();
constexpr std::array<DefOf, 3> kRegistered = {
    TrainKindDef,
    TailsKindDef,
    CommandKindDef,
};
static_assert(kRegistered.size() == kJobKinds.size(),
              "every JobKind is registered");

}  // namespace

const JobKindDef& KindDef(JobKind kind) {
  for (DefOf def : kRegistered) {
    if (def().kind == kind) return def();
  }
  // Unreachable while every enum value is registered (the static_assert
  // counts them; KindDefs.EveryKindIsRegisteredOnce names them).
  return kRegistered[0]();
}

absl::StatusOr<const JobKindDef*> KindDefNamed(absl::string_view name) {
  const std::optional<JobKind> kind = ParseJobKind(name);
  if (!kind.has_value()) {
    return absl::NotFoundError(
        absl::StrCat("job kind '", name, "'; allowed: ", JobKindNames()));
  }
  return &KindDef(*kind);
}

const JobKindDef* KindOfSectionKey(absl::string_view key) {
  for (DefOf def : kRegistered) {
    const absl::Span<const absl::string_view> keys = def().section_keys;
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) return &def();
  }
  return nullptr;
}

ResultTable ResultTableOf(absl::string_view name) {
  absl::StatusOr<const JobKindDef*> def = KindDefNamed(name);
  return def.ok() ? (*def)->table : ResultTable::kTrainCells;
}

std::string KindsWithSearch() {
  std::vector<std::string> names;
  for (DefOf def : kRegistered) {
    if (def().parse_outcome != nullptr) {
      names.emplace_back(JobKindName(def().kind));
    }
  }
  return absl::StrJoin(names, " and ");
}

absl::StatusOr<ChildCommand> ChildCommandFor(const ChildJob& job) {
  absl::StatusOr<const JobKindDef*> def = KindDefNamed(job.kind);
  if (!def.ok()) return absl::InvalidArgumentError(def.status().message());
  return (*def)->child_command(job);
}

FinishedJob ReadFinishedJob(const std::string& kind, const std::string& dir,
                            int exit_code) {
  absl::StatusOr<const JobKindDef*> def = KindDefNamed(kind);
  if (!def.ok()) {
    FinishedJob out;
    out.error = std::string(def.status().message());
    return out;
  }
  return (*def)->read_finished(dir, exit_code);
}

}  // namespace tailsweep
