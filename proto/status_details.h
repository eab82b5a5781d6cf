#ifndef TAILSWEEP_PROTO_STATUS_DETAILS_H_
#define TAILSWEEP_PROTO_STATUS_DETAILS_H_

// The marks the coordinator puts on a status where a code alone would be
// ambiguous. On the wire a mark is the status's error details; in memory it
// is the absl::Status payload kStatusMarkUrl (proto/wire_status.h converts
// one to the other). Header-only; both ends include it.
//
// A cancelled job. How the coordinator tells a job's holder that the user
// cancelled the job: CANCELLED marked kJobCancelledDetail. gRPC itself
// answers CANCELLED, unmarked, for a call cut off in transport (a
// coordinator shutting down with calls in flight, a proxy resetting a
// stream): that says nothing about the job, and the worker retries such a
// call as if the coordinator were unreachable instead of stopping the job.
//
// A refusal for now. UNAVAILABLE marked kStorageRefusedDetail: the
// coordinator answered, but cannot write (a full disk; it retries by itself,
// coordinator/batch_writer.h). Retried like an unreachable coordinator;
// told apart only to say so.

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"

namespace tailsweep {

inline constexpr char kStatusMarkUrl[] = "type.tailsweep.dev/mark";
inline constexpr char kJobCancelledDetail[] = "tailsweep.v1.job_cancelled";
inline constexpr char kStorageRefusedDetail[] = "tailsweep.v1.storage_refused";

// `status` with `mark` set (an OK status stays OK: absl keeps no payload).
inline absl::Status Marked(absl::Status status, absl::string_view mark) {
  status.SetPayload(kStatusMarkUrl, absl::Cord(mark));
  return status;
}

// The mark, if any.
inline std::optional<std::string> MarkOf(const absl::Status& status) {
  const auto mark = status.GetPayload(kStatusMarkUrl);  // absl::optional
  if (!mark) return std::nullopt;
  return std::string(*mark);
}

// The coordinator's answer for a cancelled job.
inline absl::Status JobCancelledStatus(absl::string_view message) {
  return Marked(absl::CancelledError(message), kJobCancelledDetail);
}

// True for the coordinator's answer, false for any other status (a CANCELLED
// from the transport included).
inline bool IsJobCancelled(const absl::Status& status) {
  return absl::IsCancelled(status) && MarkOf(status) == kJobCancelledDetail;
}

inline absl::Status StorageRefusedStatus(absl::string_view message) {
  return Marked(absl::UnavailableError(message), kStorageRefusedDetail);
}

inline bool IsStorageRefused(const absl::Status& status) {
  return absl::IsUnavailable(status) && MarkOf(status) == kStorageRefusedDetail;
}

}  // namespace tailsweep

#endif  // TAILSWEEP_PROTO_STATUS_DETAILS_H_
