#ifndef TAILSWEEP_CORE_SCHEMA_CHECKPOINT_BUNDLE_H_
#define TAILSWEEP_CORE_SCHEMA_CHECKPOINT_BUNDLE_H_

// Checkpoint directories (command jobs, docs/child-contract.md): a child
// writes DIR/step-N/ (N: the step, any digits) and marks it complete with
// a file named COMPLETE, written last. The wire and the coordinator's store
// carry one file per checkpoint (checkpoint_name.h), so the worker packs a
// complete directory into one bundle file and unpacks it before a resumed
// attempt starts (and `tailsweep checkpoint` after a download).
//
// A bundle is a plain POSIX tar (ustar; a pax header carries a path longer
// than ustar's 255 characters; sizes of 8 GiB and more in base-256), so
// `tar -xf` opens it: the directory's own name first, then its regular
// files, sorted, with their permission bits and times. Symbolic links and
// special files are not carried. Unpacking refuses any entry that could
// land outside the destination (absolute, "..", a link, a device) and any
// damage (a bad header checksum, a short file), naming the entry.
// Bundles of the format before tar ("TAILSWEEP-BUNDLE 1") are still read.
// Torch-free.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tailsweep {

inline constexpr char kCheckpointCompleteMarker[] = "COMPLETE";

// The step of a checkpoint directory's name ("step-12", "step-00000012");
// InvalidArgument for any other name.
absl::StatusOr<int64_t> CheckpointDirStep(absl::string_view name);

// The newest complete checkpoint directory in `dir` (highest step);
// NotFound when there is none.
struct CheckpointDir {
  int64_t step = 0;
  std::string path;
};
absl::StatusOr<CheckpointDir> NewestCompleteCheckpointDir(
    const std::string& dir);

// Packs the directory `src` into the bundle file `out` (written atomically).
absl::Status PackCheckpointDir(const std::string& src, const std::string& out);

// Whether the file at `path` is a bundle (a tar, or the older format).
bool IsCheckpointBundle(const std::string& path);

// Unpacks the bundle `bundle` into `dest` (the directory it names appears
// there whole, or not at all; an older one of that name is replaced).
// Returns that directory's name. InvalidArgument for a damaged bundle, an
// entry outside one top directory, or one that would leave `dest`.
absl::StatusOr<std::string> UnpackCheckpointBundle(const std::string& bundle,
                                                   const std::string& dest);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_CHECKPOINT_BUNDLE_H_
