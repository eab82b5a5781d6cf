#ifndef TAILSWEEP_WORKER_ATTEMPT_FILES_H_
#define TAILSWEEP_WORKER_ATTEMPT_FILES_H_

// What an ended attempt leaves for the coordinator (UploadJobFile): its
// stdout and stderr, gzip-compressed (a log longer than the sweep's
// logs_max_mib keeps its first and last halves, with a line saying how many
// bytes were cut between them), and the artifacts its spec's globs match in
// the job directory (run_outputs.h). Artifacts are regular files inside the
// job directory only: a symbolic link (to a file or a directory) is never
// followed, the checkpoints and the worker's own files are not taken, and
// files past artifacts_max_mib (in name order) are left with a note.

#include <cstdint>
#include <string>
#include <vector>

#include "core/schema/run_outputs.h"

namespace tailsweep {

struct AttemptFiles {
  std::vector<AttemptFile> files;
  // What was not taken, and why ("artifact big.bin (150 MB) not uploaded:
  // ..."), for the job's log.
  std::vector<std::string> notes;
};

// Whether the job in `dir` has anything to send: a non-empty stdout or
// stderr, or artifact globs.
bool HasAttemptFiles(const std::string& dir, const RunOutputs& outputs);

// Prepares the files of the attempt that ran in `dir` (the gzip copies go
// to DIR/.tailsweep-outputs/, replacing those of an earlier attempt).
AttemptFiles PrepareAttemptFiles(const std::string& dir,
                                 const RunOutputs& outputs);

// The marker put where a log was cut.
std::string CutMarker(int64_t cut_bytes, int64_t total_bytes);

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_ATTEMPT_FILES_H_
