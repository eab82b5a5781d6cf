#ifndef TAILSWEEP_WORKER_JOB_FILES_H_
#define TAILSWEEP_WORKER_JOB_FILES_H_

// The few file operations the worker does in job directories (their layout:
// core/schema/job_protocol.h), behind one interface so that tests can watch
// or fail them. LocalJobFiles is the real one: POSIX calls and the schema
// helpers, nothing more. Checkpoint transfers read and write their files
// themselves (proto/checkpoint_transfer.h). Thread-compatible.

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/schema/checkpoint_name.h"
#include "core/schema/disk_space.h"
#include "core/schema/job_protocol.h"
#include "core/schema/run_outputs.h"
#include "worker/attempt_files.h"

namespace tailsweep {

// Part of a file and what it was read from.
struct FileChunk {
  bool exists = false;  // false: no such file (the rest is empty)
  ino_t inode = 0;
  int64_t size = 0;   // the whole file's size when read
  std::string bytes;  // from the offset asked for, at most max_bytes
};

class JobFiles {
 public:
  virtual ~JobFiles() = default;

  // Creates `dir` and its checkpoint directory. Internal on failure.
  virtual absl::Status MakeJobDir(const std::string& dir) = 0;

  // The bytes of `path` from `offset` on (none when offset >= size), at most
  // `max_bytes`, with the file's inode and size at that moment.
  virtual FileChunk ReadFrom(const std::string& path, int64_t offset,
                             int64_t max_bytes) = 0;

  // The newest checkpoint of the job in `dir`; NotFound when it has none.
  // A complete checkpoint directory (command jobs, checkpoint_bundle.h) is
  // packed into a bundle file (once), and older ones are removed.
  virtual absl::StatusOr<CheckpointFile> NewestCheckpoint(
      const std::string& dir) = 0;

  // Unpacks the checkpoint bundles in the job's checkpoint directory (a
  // command job's downloaded checkpoint) into the directories they hold.
  virtual absl::Status UnpackCheckpoints(const std::string& dir) {
    (void)dir;
    return absl::OkStatus();
  }

  // What the job in `dir` left when its child exited with `exit_code`
  // (ReadFinishedJob).
  virtual FinishedJob ReadFinished(const std::string& kind,
                                   const std::string& dir, int exit_code) = 0;

  // The last `max_bytes` of the job's stderr ("" when it has none).
  virtual std::string StderrTail(const std::string& dir, int64_t max_bytes) = 0;

  // metrics.jsonl of an attempt about to resume from `step`: its lines up
  // to `step` (core/schema/metrics_line.h, KeepMetricsUpTo).
  virtual absl::Status KeepMetricsUpTo(const std::string& path,
                                       int64_t step) = 0;

  // Tells the job's child to run until `run_until_ms` (steady clock) and no
  // longer (the lease watchdog, core/schema/lease_file.h).
  virtual absl::Status WriteLease(const std::string& dir,
                                  int64_t run_until_ms) = 0;

  // Whether the attempt that ran in `dir` left files to send, and those
  // files (attempt_files.h). None by default (the tests' fakes).
  virtual bool HasAttemptFiles(const std::string& dir,
                               const RunOutputs& outputs) {
    (void)dir;
    (void)outputs;
    return false;
  }
  virtual AttemptFiles PrepareAttemptFiles(const std::string& dir,
                                           const RunOutputs& outputs) {
    (void)dir;
    (void)outputs;
    return {};
  }

  // Free bytes on the filesystem of `dir` (statvfs; tests override it).
  virtual absl::StatusOr<int64_t> FreeBytes(const std::string& dir) {
    return tailsweep::FreeBytes(dir);
  }
};

class LocalJobFiles : public JobFiles {
 public:
  absl::Status MakeJobDir(const std::string& dir) override;
  FileChunk ReadFrom(const std::string& path, int64_t offset,
                     int64_t max_bytes) override;
  absl::StatusOr<CheckpointFile> NewestCheckpoint(
      const std::string& dir) override;
  absl::Status UnpackCheckpoints(const std::string& dir) override;
  FinishedJob ReadFinished(const std::string& kind, const std::string& dir,
                           int exit_code) override;
  std::string StderrTail(const std::string& dir, int64_t max_bytes) override;
  absl::Status WriteLease(const std::string& dir,
                          int64_t run_until_ms) override;
  absl::Status KeepMetricsUpTo(const std::string& path, int64_t step) override;
  bool HasAttemptFiles(const std::string& dir,
                       const RunOutputs& outputs) override;
  AttemptFiles PrepareAttemptFiles(const std::string& dir,
                                   const RunOutputs& outputs) override;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_JOB_FILES_H_
