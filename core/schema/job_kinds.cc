#include "core/schema/job_kinds.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tailsweep {

// The registrations, one line a kind: the function its file defines.
const JobKindDef& TrainKindDef();  // the first: the default kind
const JobKindDef& TailsKindDef();
const JobKindDef& CommandKindDef();

namespace {

using DefOf = const JobKindDef& (*)();

// The table, then any kind RegisterJobKind added.
std::vector<DefOf>& Registered() {
  static std::vector<DefOf> kinds = {TrainKindDef, TailsKindDef,
                                     CommandKindDef};
  return kinds;
}

}  // namespace

JobKind::JobKind() : def_(&Registered()[0]()) {}

bool RegisterJobKind(DefOf def) {
  Registered().push_back(def);
  return true;
}

std::vector<JobKind> AllJobKinds() {
  std::vector<JobKind> out;
  for (DefOf def : Registered()) out.emplace_back(def());
  return out;
}

absl::string_view JobKindName(JobKind kind) { return kind.def().name; }

std::optional<JobKind> ParseJobKind(absl::string_view name) {
  for (DefOf def : Registered()) {
    if (def().name == name) return JobKind(def());
  }
  return std::nullopt;
}

std::string JobKindNames() {
  std::vector<absl::string_view> names;
  for (DefOf def : Registered()) names.push_back(def().name);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<const JobKindDef*> KindDefNamed(absl::string_view name) {
  const std::optional<JobKind> kind = ParseJobKind(name);
  if (!kind.has_value()) {
    return absl::NotFoundError(
        absl::StrCat("job kind '", name, "'; allowed: ", JobKindNames()));
  }
  return &kind->def();
}

const JobKindDef* KindOfSectionKey(absl::string_view key) {
  for (DefOf def : Registered()) {
    if (def().section == nullptr) continue;
    const absl::Span<const absl::string_view> keys = def().section->keys;
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) return &def();
  }
  return nullptr;
}

std::string KindsWithSearch() {
  std::vector<std::string> names;
  for (DefOf def : Registered()) {
    if (def().parse_outcome != nullptr) {
      names.emplace_back(def().name);
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
