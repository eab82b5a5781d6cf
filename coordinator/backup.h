#ifndef TAILSWEEP_COORDINATOR_BACKUP_H_
#define TAILSWEEP_COORDINATOR_BACKUP_H_

// Backups of the coordinator's database to another directory (another disk
// or file system), so that a lost disk loses minutes, not the sweep:
// SQLite's VACUUM INTO, taken in one read transaction while the
// coordinator runs on (writers are not blocked in WAL mode), written as
// DIR/tailsweep-YYYYMMDDTHHMMSSZ.db through a ".partial" file, checked with
// PRAGMA integrity_check before it counts, and only then are backups past
// the newest `keep` removed. Restoring copies the newest backup that passes
// the check to a new database path; the coordinator then starts from it.
// What finished after that backup is not in it: such jobs run again (their
// leases are unknown or expire), and a worker still running one is told
// its lease is gone on its next call. Checkpoints, logs and artifacts live
// in --data-dir and are not backed up here.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tailsweep {

struct BackupResult {
  std::string path;  // the new backup
  int64_t bytes = 0;
  int removed = 0;  // older backups removed (past `keep`)
};

// Writes a backup of `db_path` into `dir` (made when missing), named by
// `wall_ms` (Unix ms), keeps the newest `keep` (>= 1). A backup that fails
// its check is removed and the older ones kept: Internal saying what the
// check found. The statuses of SQLite and the file system otherwise.
absl::StatusOr<BackupResult> WriteBackup(const std::string& db_path,
                                         const std::string& dir, int keep,
                                         int64_t wall_ms);

// Copies the newest backup in `dir` that passes PRAGMA integrity_check to
// `db_path`, which must not exist (FailedPrecondition: it is never
// overwritten); returns the backup's path. NotFound when `dir` holds no
// backup that passes (saying which were damaged).
absl::StatusOr<std::string> RestoreNewest(const std::string& dir,
                                          const std::string& db_path);

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_BACKUP_H_
