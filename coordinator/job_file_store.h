#ifndef TAILSWEEP_COORDINATOR_JOB_FILE_STORE_H_
#define TAILSWEEP_COORDINATOR_JOB_FILE_STORE_H_

// The files attempts make, kept on the coordinator: each attempt's stdout
// and stderr (gzip, as the worker sends them: whole, or head and tail when
// longer than the sweep's logs_max_mib) and the artifacts the spec's globs
// matched. On disk DATA_DIR/outputs/JOB/EPOCH/log/NAME.gz and
// DATA_DIR/outputs/JOB/EPOCH/artifact/PATH, each complete and verified
// (size, SHA-256, fsync, rename) before the store records it (job_files).
// While an attempt runs, the tail of its output that the worker sends with
// each heartbeat is kept in memory (the last kLiveBytes a stream), for
// `tailsweep logs --follow`. Thread-safe.

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "coordinator/store.h"
#include "core/schema/disk_space.h"
#include "proto/checkpoint_transfer.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep {

struct JobFileLimits {
  int64_t max_file_bytes = int64_t{1} << 30;   // one file as sent
  int64_t min_free_bytes = int64_t{32} << 20;  // kept for the database
  FreeBytesFn free_bytes;                      // default: FreeBytes
};

class JobFileStore {
 public:
  static constexpr int64_t kLiveBytes = 1 << 20;

  JobFileStore(Store* store, std::string data_dir, JobFileLimits limits = {});

  // OK for a header an uploader may send (kind, name, sizes); else
  // InvalidArgument saying what is wrong.
  static absl::Status Validate(const v1::JobFileHeader& header);

  // Receives the data after `header` (validated) under the attempt's
  // lease and records the file. ResourceExhausted when it is larger than
  // max_file_bytes or would leave less than min_free_bytes free (the
  // message says which file and how large); the statuses of
  // Store::RecordJobFile and transfer::ReceiveData.
  absl::Status Upload(const v1::JobFileHeader& header,
                      const transfer::NextData& next);

  // Sends a stored file of job `job_id` (a resolved id) as `request` asks:
  // a header, then its data (a log decompressed, from request.offset). A
  // log of a running attempt that has none stored yet: its live tail.
  // NotFound naming what is stored.
  absl::Status Read(const std::string& job_id,
                    const v1::ReadJobFileRequest& request,
                    const std::function<bool(const v1::JobFileChunk&)>& send);

  // Keeps what a heartbeat brought of the attempt's output (a newer epoch
  // replaces an older one's).
  void AddLive(const std::string& job_id, int64_t epoch,
               const v1::LiveOutput& output);
  // Drops a job's live output (its attempt ended).
  void ForgetLive(const std::string& job_id);

 private:
  struct LiveStream {
    int64_t start = 0;  // offset of buffer[0] in the attempt's file
    std::string buffer;
  };
  struct Live {
    int64_t epoch = 0;
    std::map<std::string, LiveStream> streams;
  };
  // Sends the live tail of `name`; false when there is none for `epoch`
  // (0: any).
  bool SendLive(const std::string& job_id, const v1::ReadJobFileRequest& r,
                const std::function<bool(const v1::JobFileChunk&)>& send,
                absl::Status* status);
  absl::Status SendStored(
      const std::string& job_id, const JobFileRow& row, int64_t offset,
      const std::function<bool(const v1::JobFileChunk&)>& send);

  Store* store_;
  std::string data_dir_;
  JobFileLimits limits_;
  std::mutex live_mu_;
  std::map<std::string, Live> live_;  // by job id; guarded by live_mu_
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_JOB_FILE_STORE_H_
