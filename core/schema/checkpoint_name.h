#ifndef TAILSWEEP_CORE_SCHEMA_CHECKPOINT_NAME_H_
#define TAILSWEEP_CORE_SCHEMA_CHECKPOINT_NAME_H_

// The one rule for checkpoint file names, shared by the trainer (which
// writes them), the worker (which finds the newest and uploads it) and the
// coordinator (which stores it): "step-" followed by the step as at least 8
// decimal digits, then ".pt", e.g. step-00000040.pt. Torch-free.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tailsweep {

// REQUIRES: step >= 1.
std::string CheckpointFileName(int64_t step);

// The step of a checkpoint file name (no directory part). InvalidArgument
// for anything else, including names with '/', a sign, spaces, fewer than 8
// or more than 18 digits, or step 0: it guards every path built from the wire.
absl::StatusOr<int64_t> CheckpointStepOf(absl::string_view name);

// The newest checkpoint (highest step) in `dir`; files whose names are not
// checkpoint names are ignored. NotFound when there is none (or no `dir`).
struct CheckpointFile {
  int64_t step = 0;
  std::string path;
};
absl::StatusOr<CheckpointFile> NewestCheckpointIn(const std::string& dir);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_CHECKPOINT_NAME_H_
