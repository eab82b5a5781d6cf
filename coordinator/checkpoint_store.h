#ifndef TAILSWEEP_COORDINATOR_CHECKPOINT_STORE_H_
#define TAILSWEEP_COORDINATOR_CHECKPOINT_STORE_H_

// Checkpoint files under the coordinator's data directory, recorded in the
// store: DATA_DIR/checkpoints/JOB/EPOCH/step-N.pt. A file is complete and
// verified (size, SHA-256, fsync, rename) before the store points to it, so
// a crash at any moment leaves the store pointing at a whole file; files
// the store does not point to are removed on the job's next upload.
// Thread-safe (each upload writes its own epoch's directory; room is made
// for one upload at a time).
//
// No worker can fill the disk: an upload is taken only when, after it, the
// data directory holds at most `max_data_bytes` (0: no budget) and its
// filesystem keeps `min_free_bytes` free for the database. To make room,
// the checkpoints no job can need go first: those of done jobs, then the
// older (fallback) checkpoints of jobs no longer leased or queued. What
// still does not fit is refused with RESOURCE_EXHAUSTED and says why, as
// is an upload that would take its job's checkpoints past `max_job_bytes`.
// (The service records a refusal as the job's "not_kept" event.)

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/store.h"
#include "core/schema/disk_space.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep {

struct CheckpointBudget {
  int64_t max_data_bytes = 0;  // 0: no budget
  // Most bytes one job's checkpoints take at once (its newest, the one
  // before it and those kept for their metric); 0: no cap.
  int64_t max_job_bytes = 0;
  int64_t min_free_bytes = int64_t{32} << 20;  // kept for the database
  FreeBytesFn free_bytes;                      // default: FreeBytes
};

class CheckpointStore {
 public:
  CheckpointStore(Store* store, std::string data_dir,
                  CheckpointBudget budget = {});

  const std::string& data_dir() const { return data_dir_; }

  // Receives the data chunks after `header` (validated by the caller) under
  // the header's lease and records the file when newer than the stored
  // one. Returns the step stored now. The statuses of Store::CheckLease
  // and transfer::ReceiveFile.
  absl::StatusOr<int64_t> Upload(
      const v1::CheckpointHeader& header,
      const std::function<bool(v1::CheckpointChunk*)>& next);

  // The bytes of `files` (paths relative to the data directory, as the
  // store records them), and unless `dry_run` removes them and the job
  // directories they leave empty. A file already gone counts 0.
  int64_t RemoveFiles(const std::vector<std::string>& files, bool dry_run);

  // Sends the job's newest checkpoint to `worker`, the holder of lease
  // `epoch`. NotFound when the job has none.
  absl::Status Download(
      const std::string& worker, const std::string& job_id, int64_t epoch,
      const std::function<bool(const v1::CheckpointChunk&)>& send);

  // Sends the stored checkpoint of job `job_id` at `step` (0: the newest)
  // to anyone (FetchCheckpoint): its header's epoch is 0. NotFound (naming
  // the steps kept) when there is none of that step; DataLoss when its
  // file no longer matches its record.
  absl::Status Fetch(
      const std::string& job_id, int64_t step,
      const std::function<bool(const v1::CheckpointChunk&)>& send);

 private:
  // OK when a file of `bytes` fits, after pruning what no job needs.
  absl::Status MakeRoom(const v1::CheckpointHeader& header);
  // Why the header's file would take its job past max_job_bytes; "" if not.
  std::string OverJobCap(const v1::CheckpointHeader& header);
  // Bytes of the checkpoint files under the data directory.
  int64_t DataBytes() const;

  Store* store_;
  std::string data_dir_;
  CheckpointBudget budget_;
  std::mutex room_mu_;  // one upload makes room at a time
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_CHECKPOINT_STORE_H_
