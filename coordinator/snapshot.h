#ifndef TAILSWEEP_COORDINATOR_SNAPSHOT_H_
#define TAILSWEEP_COORDINATOR_SNAPSHOT_H_

// A consistent copy of one sweep out of a coordinator's database, to
// analyse away from the live file (or from a network filesystem): SQLite's
// VACUUM INTO, taken in one read transaction while the coordinator runs
// on, then pruned to the sweep: its row, its jobs (a job other sweeps
// share is kept, their rows of it are not) and their events, metrics,
// results, checkpoint records and logs; no workers, no lease requests. The
// copy has the store's schema (store.cc), so the same SQL runs on both.

#include <string>

#include "absl/status/status.h"

namespace tailsweep {

// Writes `out_path` (through out_path.partial, renamed once complete).
// NotFound naming the sweeps that exist when `sweep` is not one of them;
// InvalidArgument when `db_path` is not a readable tailsweep database or
// `out_path` exists (it is never overwritten).
absl::Status SnapshotSweep(const std::string& db_path, const std::string& sweep,
                           const std::string& out_path);

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_SNAPSHOT_H_
