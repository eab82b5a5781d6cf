#ifndef TAILSWEEP_COORDINATOR_CHECKPOINT_STORE_H_
#define TAILSWEEP_COORDINATOR_CHECKPOINT_STORE_H_

// Checkpoint files under the coordinator's data directory, recorded in the
// store: DATA_DIR/checkpoints/JOB/EPOCH/step-N.pt. A file is complete and
// verified (size, SHA-256, fsync, rename) before the store points to it, so
// a crash at any moment leaves the store pointing at a whole file; files
// the store does not point to are removed on the job's next upload.
// Thread-safe (each upload writes its own epoch's directory).

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/store.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep {

class CheckpointStore {
 public:
  CheckpointStore(Store* store, std::string data_dir)
      : store_(store), data_dir_(std::move(data_dir)) {}

  // Receives the data chunks after `header` (validated by the caller) under
  // the header's lease and records the file when newer than the stored
  // one. Returns the step stored now. The statuses of Store::CheckLease
  // and transfer::ReceiveFile.
  absl::StatusOr<int64_t> Upload(
      const v1::CheckpointHeader& header,
      const std::function<bool(v1::CheckpointChunk*)>& next);

  // Sends the job's newest checkpoint to `worker`, the holder of lease
  // `epoch`. NotFound when the job has none.
  absl::Status Download(
      const std::string& worker, const std::string& job_id, int64_t epoch,
      const std::function<bool(const v1::CheckpointChunk&)>& send);

 private:
  Store* store_;
  std::string data_dir_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_CHECKPOINT_STORE_H_
