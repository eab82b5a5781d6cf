#ifndef TAILSWEEP_COORDINATOR_VALIDATE_H_
#define TAILSWEEP_COORDINATOR_VALIDATE_H_

// Field checks for the requests of the Coordinator API, before anything is
// touched: InvalidArgument naming the field, the value and what is allowed;
// ResourceExhausted for a checkpoint over the size limit. Pure functions of
// the request (fuzzed by fuzz/request_validators_fuzzer.cc).

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/schema/job_protocol.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep {

// Limits of the API (proto/tailsweep.proto).
inline constexpr int kMaxIdBytes = 256;
inline constexpr int kMaxPointsPerBatch = 10000;
inline constexpr int kMaxMetricNameBytes = 128;
inline constexpr int64_t kMinLeaseMs = 1000, kMaxLeaseMs = 3600000;
inline constexpr int kMaxLeasesPerCall = 64;
// Entries of LeaseJobsRequest.free_slots (placement units of one worker).
inline constexpr int kMaxPlacementUnits = 1024;
inline constexpr int64_t kMaxErrorBytes = 64 << 10;
inline constexpr int64_t kMaxStderrTailBytes = 64 << 10;
inline constexpr int kMaxMetricsPage = 10000, kDefaultMetricsPage = 5000;
// ListSweepMetrics' points per page: a page holds the store's read lock for
// about 50 ms at the default.
inline constexpr int kMaxSweepMetricsPage = 200000,
                     kDefaultSweepMetricsPage = 50000;
inline constexpr int kMaxListPage = 10000, kDefaultListPage = 1000;
// ListJobs and GetResults pages stop growing past this many bytes, well
// under a client's default 4 MiB receive limit.
inline constexpr int64_t kMaxPageBytes = 2 << 20;
inline constexpr int64_t kMaxReasonBytes = 1 << 10;
inline constexpr int kMinJobPrefix = 6;

absl::Status Validate(const v1::SubmitSweepRequest& req);
absl::Status Validate(const v1::CancelSweepRequest& req);
inline constexpr int kMaxAddedCells = 10000;
absl::Status Validate(const v1::AddJobsRequest& req);
absl::Status Validate(const v1::LeaseJobsRequest& req);
absl::Status Validate(const v1::HeartbeatRequest& req);
absl::Status Validate(const v1::ReportMetricsRequest& req);
absl::Status Validate(const v1::CompleteJobRequest& req);
absl::Status Validate(const v1::FailJobRequest& req);
absl::Status Validate(const v1::ReleaseJobRequest& req);
absl::Status Validate(const v1::DownloadCheckpointRequest& req);
absl::Status Validate(const v1::FetchCheckpointRequest& req);
absl::Status Validate(const v1::ReadJobFileRequest& req);
// The lease part of an upload's header (the file's: JobFileStore::Validate).
absl::Status Validate(const v1::JobFileHeader& h);
// A heartbeat's output carries at most this much a stream.
inline constexpr size_t kMaxLiveOutputBytes = 256 * 1024;
// The first message of an upload; `max_bytes` is --max-checkpoint-bytes.
absl::Status Validate(const v1::CheckpointHeader& header, int64_t max_bytes);
absl::Status Validate(const v1::ListJobsRequest& req);
absl::Status Validate(const v1::GetResultsRequest& req);
absl::Status Validate(const v1::GetMetricsRequest& req);
absl::Status Validate(const v1::ListSweepMetricsRequest& req);
absl::Status Validate(const v1::GetJobLogRequest& req);
absl::Status Validate(const v1::GetJobRequest& req);
// GetSweepStatus, CancelSweep, ResumeSweep.
absl::Status ValidateSweepName(const std::string& sweep);
// The offset a ListJobs or GetResults page token stands for (a grid
// position or a row index; empty: the start, -1). InvalidArgument for a
// token this service did not give out.
absl::StatusOr<int64_t> ParseOffsetToken(const std::string& token);
// A GetResults page token: the snapshot the pages come from and the last
// row sent ("ID.ROW"; empty: a new read, snapshot 0, row -1).
struct ResultsToken {
  uint64_t snapshot = 0;
  int64_t after = -1;
};
absl::StatusOr<ResultsToken> ParseResultsToken(const std::string& token);

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_VALIDATE_H_
