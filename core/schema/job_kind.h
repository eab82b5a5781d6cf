#ifndef TAILSWEEP_CORE_SCHEMA_JOB_KIND_H_
#define TAILSWEEP_CORE_SCHEMA_JOB_KIND_H_

// Which kind a job is: a handle on the kind's registration (job_kinds.h,
// where what a kind is lives: `train`, `tails`, `command`). A kind's name
// is the spec's `kind:` value, the database's jobs.kind and sweeps.kind
// columns and the proto's `kind` strings, spelled in its registration only.
// Torch-free.

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tailsweep {

struct JobKindDef;

// Copied and compared by value. The default is `train` (the first
// registered: the first release's only kind).
class JobKind {
 public:
  JobKind();
  explicit JobKind(const JobKindDef& def) : def_(&def) {}
  const JobKindDef& def() const { return *def_; }
  bool operator==(const JobKind& other) const { return def_ == other.def_; }
  bool operator!=(const JobKind& other) const { return def_ != other.def_; }

 private:
  const JobKindDef* def_;
};

// Every registered kind, in registration order.
std::vector<JobKind> AllJobKinds();
// Its registered name ("train", "tails", "command").
absl::string_view JobKindName(JobKind kind);
// The kind named `name`; nullopt for any other text.
std::optional<JobKind> ParseJobKind(absl::string_view name);
// "train, tails, command": what an error message says is allowed.
std::string JobKindNames();

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_JOB_KIND_H_
